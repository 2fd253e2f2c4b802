#include "simmer/data/higgs.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numbers>
#include <string_view>
#include <system_error>

#include "gz_file.hpp"
#include "simmer/core/error.hpp"
#include "simmer/core/rng.hpp"

namespace simmer::data {
namespace {

using detail::gz_reason;
using detail::GzFile;
using detail::open_gz;

/// Fields per line: the label, then the features.
constexpr std::size_t kFields = static_cast<std::size_t>(kHiggsFeatures) + 1;

/// A line longer than this is not HIGGS data (real lines are ~700 bytes); refusing it keeps a
/// binary file given by mistake from being buffered whole.
constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;

/// The lines of a plain or gzip file, streamed through a buffer, with their 1-based numbers.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), file_(open_gz(path)) {
    buffer_.resize(kMaxLineBytes + 1);
  }

  /// The next line without its end ("\n" or "\r\n"); false at the end of the file.
  bool next(std::string_view& line) {
    for (;;) {
      const char* start = buffer_.data() + begin_;
      const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
      if (newline != nullptr) {
        const auto length = static_cast<std::size_t>(newline - start);
        begin_ += length + 1;
        return emit(start, length, line);
      }
      if (eof_) {
        if (begin_ == end_) return false;
        const std::size_t length = end_ - begin_;
        begin_ = end_;
        return emit(start, length, line);
      }
      refill();
    }
  }

  [[nodiscard]] std::int64_t line_number() const { return number_; }

 private:
  bool emit(const char* start, std::size_t length, std::string_view& line) {
    ++number_;
    if (length > 0 && start[length - 1] == '\r') --length;
    line = {start, length};
    return true;
  }

  /// Moves the unread part to the front and appends what the file gives.
  void refill() {
    const std::size_t pending = end_ - begin_;
    if (pending >= kMaxLineBytes) {
      throw Error(path_ + ":" + std::to_string(number_ + 1) + ": line longer than " + std::to_string(kMaxLineBytes) +
                  " bytes: not a HIGGS CSV file");
    }
    std::memmove(buffer_.data(), buffer_.data() + begin_, pending);
    begin_ = 0;
    end_ = pending;
    const auto room = static_cast<unsigned>(buffer_.size() - end_);
    const int got = gzread(file_.get(), buffer_.data() + end_, room);
    if (got < 0) throw Error(path_ + ": cannot read file: " + gz_reason(file_.get(), path_));
    if (got == 0) {
      int code = Z_OK;
      gzerror(file_.get(), &code);
      if (code == Z_BUF_ERROR) {
        throw Error(path_ + ": cannot read file: the gzip stream ends early (truncated .gz)");
      }
      eof_ = true;
    }
    end_ += static_cast<std::size_t>(got);
  }

  std::string path_;
  GzFile file_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  bool eof_ = false;
  std::int64_t number_ = 0;
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

enum class FieldStatus { ok, empty, not_a_number, not_finite, out_of_range };

/// Parses the field at `p` (up to the next comma or `end`, blanks around it allowed) as a
/// double; on return `p` is at that comma or `end`. A leading '+' is accepted, as strtod does.
FieldStatus parse_field(const char*& p, const char* end, double& value) {
  const auto* comma = static_cast<const char*>(std::memchr(p, ',', static_cast<std::size_t>(end - p)));
  const char* first = p;
  const char* last = comma != nullptr ? comma : end;
  p = last;
  while (first != last && is_blank(*first)) ++first;
  while (last != first && is_blank(last[-1])) --last;
  if (first == last) return FieldStatus::empty;
  if (last - first > 1 && *first == '+' && first[1] != '-' && first[1] != '+') ++first;
  const auto [stop, ec] = std::from_chars(first, last, value);
  if (stop != last) return FieldStatus::not_a_number;
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports underflow ("1e-400") like overflow; strtod tells them apart, and a
    // number too small for a double reads as its nearest double (as in csv.cpp).
    const double nearest = std::strtod(std::string(first, last).c_str(), nullptr);
    if (std::isinf(nearest)) return FieldStatus::out_of_range;
    value = nearest;
    return FieldStatus::ok;
  }
  if (ec != std::errc{}) return FieldStatus::not_a_number;
  return std::isfinite(value) ? FieldStatus::ok : FieldStatus::not_finite;
}

std::size_t count_fields(std::string_view line) {
  return 1 + static_cast<std::size_t>(std::count(line.begin(), line.end(), ','));
}

/// The text of field `index` (0-based) of `line`, blanks trimmed, for a message.
std::string field_text(std::string_view line, std::size_t index) {
  for (std::size_t f = 0; f < index; ++f) line.remove_prefix(line.find(',') + 1);
  line = line.substr(0, line.find(','));
  while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
  while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
  return std::string(line);
}

/// "field 4 (lepton_phi)": 1-based, as an editor or `cut -d, -f4` counts.
std::string field_label(std::size_t index) {
  return "field " + std::to_string(index + 1) + " (" +
         (index == 0 ? std::string("label") : higgs_feature_names()[index - 1]) + ")";
}

std::string label_text(std::int64_t label) {
  return label == 0 ? "0.000000000000000000e+00" : "1.000000000000000000e+00";
}

/// Massless pair mass squared: m^2 = 2 pT_a pT_b (cosh(eta_a - eta_b) - cos(phi_a - phi_b)).
struct Particle {
  double pt = 0.0;
  double eta = 0.0;
  double phi = 0.0;
};

double pair_mass2(const Particle& a, const Particle& b) {
  return 2.0 * a.pt * b.pt * (std::cosh(a.eta - b.eta) - std::cos(a.phi - b.phi));
}

/// Sum of pair_mass2 over all pairs of `particles` (the mass squared of the massless system).
template <std::size_t N>
double system_mass(const std::array<const Particle*, N>& particles) {
  double m2 = 0.0;
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t j = i + 1; j < N; ++j) m2 += pair_mass2(*particles[i], *particles[j]);
  }
  return std::sqrt(m2);
}

}  // namespace

const std::vector<std::string>& higgs_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"lepton_pT", "lepton_eta", "lepton_phi", "missing_energy_magnitude",
                                  "missing_energy_phi"};
    for (int jet = 1; jet <= 4; ++jet) {
      const std::string prefix = "jet" + std::to_string(jet) + "_";
      for (const char* what : {"pt", "eta", "phi", "b-tag"}) n.push_back(prefix + what);
    }
    for (const char* mass : {"m_jj", "m_jjj", "m_lv", "m_jlv", "m_bb", "m_wbb", "m_wwbb"}) {
      n.emplace_back(mass);
    }
    return n;
  }();
  return names;
}

Dataset read_higgs_csv(const std::string& path, std::int64_t max_rows) {
  if (max_rows < 0) {
    throw Error(path + ": max_rows = " + std::to_string(max_rows) + ": must be >= 0 (0 reads all)");
  }
  LineReader reader(path);

  // x grows by doubling; a row-major matrix keeping its column count is resized with realloc,
  // so the rows are never copied into a second buffer.
  constexpr Index kFirstCapacity = Index{1} << 16;
  Index capacity = max_rows > 0 ? std::min<Index>(max_rows, kFirstCapacity) : kFirstCapacity;
  Matrix x(capacity, kHiggsFeatures);
  std::vector<std::int64_t> labels;
  std::array<double, kFields> values{};

  std::string_view line;
  Index rows = 0;
  while ((max_rows == 0 || rows < max_rows) && reader.next(line)) {
    if (std::all_of(line.begin(), line.end(), is_blank)) continue;
    const char* p = line.data();
    const char* const end = p + line.size();
    for (std::size_t f = 0; f < kFields; ++f) {
      const FieldStatus status = parse_field(p, end, values[f]);
      const bool last = f + 1 == kFields;
      if (status != FieldStatus::ok || (p == end) != last) {
        const std::string where = path + ":" + std::to_string(reader.line_number()) + ": ";
        const std::size_t found = count_fields(line);
        if (found != kFields) {
          throw Error(where + "expected " + std::to_string(kFields) + " fields (label and " +
                      std::to_string(kHiggsFeatures) + " features), found " + std::to_string(found));
        }
        const std::string what = where + field_label(f) + ": ";
        switch (status) {
          case FieldStatus::empty:
            throw Error(what + "empty");
          case FieldStatus::not_finite:
            throw Error(what + "'" + field_text(line, f) + "' is not a finite number");
          case FieldStatus::out_of_range:
            throw Error(what + "'" + field_text(line, f) + "' is out of the range of a double");
          case FieldStatus::ok:
          case FieldStatus::not_a_number:
            throw Error(what + "'" + field_text(line, f) + "' is not a number");
        }
      }
      if (!last) ++p;  // the comma
    }
    if (values[0] != 0.0 && values[0] != 1.0) {
      throw Error(path + ":" + std::to_string(reader.line_number()) + ": " + field_label(0) + ": '" +
                  field_text(line, 0) + "' is not 0 or 1");
    }
    if (rows == capacity) {
      capacity = max_rows > 0 ? std::min<Index>(2 * capacity, max_rows) : 2 * capacity;
      x.conservativeResize(capacity, kHiggsFeatures);
    }
    std::copy(values.begin() + 1, values.end(), x.row(rows).data());
    labels.push_back(values[0] == 1.0 ? 1 : 0);
    ++rows;
  }
  if (rows == 0) throw Error(path + ": no data lines");
  x.conservativeResize(rows, kHiggsFeatures);

  Dataset d;
  d.task = Task::classification;
  d.x = std::move(x);
  d.y = one_hot(labels, 2);
  d.labels = std::move(labels);
  d.feature_names = higgs_feature_names();
  d.target_names = {"label"};
  d.class_names = {"background", "signal"};
  return d;
}

Dataset make_synthetic_higgs(std::int64_t rows, std::uint64_t seed) {
  if (rows < 1) {
    throw Error("synthetic HIGGS: rows = " + std::to_string(rows) + ": need at least 1");
  }
  constexpr double kSignalFraction = 0.53;
  constexpr double kLogPtMean = -0.1;
  constexpr double kLogPtSd = 0.5;
  constexpr double kEtaLimit = 2.5;
  constexpr double kBtagStep = 1.1;
  constexpr std::array<std::array<double, 2>, 2> kBtagCumulative = {{{0.6, 0.85}, {0.4, 0.7}}};
  constexpr double kPull = 0.4;       // how far signal masses move toward the resonance
  constexpr double kMassNoise = 0.1;  // sd of the log-normal mass resolution
  constexpr std::array<double, 7> kResonance = {1.6, 3.2, 1.4, 2.9, 1.6, 4.8, 7.5};
  constexpr double kPi = std::numbers::pi;

  Rng rng(seed);
  Dataset d;
  d.task = Task::classification;
  d.x.resize(static_cast<Index>(rows), kHiggsFeatures);
  d.labels.resize(static_cast<std::size_t>(rows));
  auto momentum = [&] { return std::exp(kLogPtMean + kLogPtSd * rng.normal()); };
  auto eta = [&] { return std::clamp(rng.normal(), -kEtaLimit, kEtaLimit); };
  auto phi = [&] { return rng.uniform(-kPi, kPi); };

  for (Index r = 0; r < static_cast<Index>(rows); ++r) {
    const int signal = rng.uniform() < kSignalFraction ? 1 : 0;
    d.labels[static_cast<std::size_t>(r)] = signal;
    double* row = d.x.row(r).data();

    Particle lepton;
    lepton.pt = momentum();
    lepton.eta = eta();
    lepton.phi = phi();
    Particle neutrino;  // transverse only: eta 0
    neutrino.pt = momentum();
    neutrino.phi = phi();
    row[0] = lepton.pt;
    row[1] = lepton.eta;
    row[2] = lepton.phi;
    row[3] = neutrino.pt;
    row[4] = neutrino.phi;

    std::array<Particle, 4> jets;
    for (std::size_t k = 0; k < jets.size(); ++k) {
      jets[k].pt = momentum();
      jets[k].eta = eta();
      jets[k].phi = phi();
      const double u = rng.uniform();
      const auto& cumulative = kBtagCumulative[static_cast<std::size_t>(signal)];
      const double btag = u < cumulative[0] ? 0.0 : (u < cumulative[1] ? kBtagStep : 2 * kBtagStep);
      double* jet = row + 5 + 4 * k;
      jet[0] = jets[k].pt;
      jet[1] = jets[k].eta;
      jet[2] = jets[k].phi;
      jet[3] = btag;
    }

    const Particle* l = &lepton;
    const Particle* v = &neutrino;
    const Particle* j1 = &jets[0];
    const Particle* j2 = &jets[1];
    const Particle* j3 = &jets[2];
    const Particle* j4 = &jets[3];
    const std::array<double, 7> masses = {system_mass<2>({j1, j2}),
                                          system_mass<3>({j1, j2, j3}),
                                          system_mass<2>({l, v}),
                                          system_mass<3>({j1, l, v}),
                                          system_mass<2>({j3, j4}),
                                          system_mass<4>({j1, j2, j3, j4}),
                                          system_mass<6>({l, v, j1, j2, j3, j4})};
    const double pull = kPull * signal;
    for (std::size_t m = 0; m < masses.size(); ++m) {
      const double pulled = (1.0 - pull) * masses[m] + pull * kResonance[m];
      row[21 + m] = pulled * std::exp(kMassNoise * rng.normal());
    }
  }

  d.y = one_hot(d.labels, 2);
  d.feature_names = higgs_feature_names();
  d.target_names = {"label"};
  d.class_names = {"background", "signal"};
  return d;
}

void write_higgs_csv(const Dataset& d, const std::string& path) {
  const std::string cannot = path + ": cannot write a HIGGS CSV file: ";
  if (d.task != Task::classification) throw Error(cannot + "the data set is not a classification set");
  if (d.features() != kHiggsFeatures) {
    throw Error(cannot + "the data set has " + std::to_string(d.features()) + " features, the format has " +
                std::to_string(kHiggsFeatures));
  }
  if (static_cast<Index>(d.labels.size()) != d.rows()) {
    throw Error(cannot + std::to_string(d.labels.size()) + " labels for " + std::to_string(d.rows()) + " rows");
  }
  for (std::size_t r = 0; r < d.labels.size(); ++r) {
    if (d.labels[r] != 0 && d.labels[r] != 1) {
      throw Error(cannot + "row " + std::to_string(r) + " has label " + std::to_string(d.labels[r]) +
                  "; the format has 0 and 1");
    }
  }
  for (Index r = 0; r < d.rows(); ++r) {
    for (Index c = 0; c < d.features(); ++c) {
      if (!std::isfinite(d.x(r, c))) {
        throw Error(cannot + "row " + std::to_string(r) + ", feature '" +
                    higgs_feature_names()[static_cast<std::size_t>(c)] + "' is " + std::to_string(d.x(r, c)) +
                    "; the reader refuses values that are not finite");
      }
    }
  }

  // "T": zlib writes the bytes as they are (no gzip) unless the name asks for compression.
  const bool compress = path.ends_with(".gz");
  errno = 0;
  GzFile file(gzopen(path.c_str(), compress ? "wb" : "wbT"), &gzclose);
  if (!file) {
    throw Error(path +
                ": cannot open file for writing: " + (errno != 0 ? std::strerror(errno) : "out of memory in zlib"));
  }
  std::string text;
  text.reserve(std::size_t{1} << 20);
  auto flush = [&] {
    if (text.empty()) return;
    const int wrote = gzwrite(file.get(), text.data(), static_cast<unsigned>(text.size()));
    if (wrote <= 0) throw Error(path + ": cannot write file: " + gz_reason(file.get(), path));
    text.clear();
  };
  std::array<char, 32> number{};
  for (Index r = 0; r < d.rows(); ++r) {
    text += label_text(d.labels[static_cast<std::size_t>(r)]);
    for (Index c = 0; c < d.features(); ++c) {
      const auto result = std::to_chars(number.data(), number.data() + number.size(), d.x(r, c));
      text += ',';
      text.append(number.data(), result.ptr);
    }
    text += '\n';
    if (text.size() > (std::size_t{1} << 20) - 4096) flush();
  }
  flush();
  const int closed = gzclose(file.release());
  if (closed != Z_OK) {
    throw Error(path + ": cannot write file: " +
                (closed == Z_ERRNO ? std::strerror(errno) : "zlib error " + std::to_string(closed)));
  }
}

}  // namespace simmer::data
