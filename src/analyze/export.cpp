// simmer_analyze export: the archive's tables as tidy CSV (one observation per row).
#include <cmath>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "simmer/analyze/commands.hpp"
#include "simmer/analyze/run_archive.hpp"
#include "simmer/core/error.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::analyze {
namespace {

namespace layout = run::layout;

/// [chain, record] fields of one group, read whole; a missing field reads NaN.
std::vector<std::vector<double>> read_fields(const io::ArchiveReader& r, const std::string& group,
                                             const std::vector<std::string>& fields, std::size_t cells) {
  std::vector<std::vector<double>> out;
  for (const auto& f : fields) {
    const std::string path = layout::join(group, f);
    if (!r.exists(path)) throw Error("'" + r.path() + "' is not a simmer archive: it has no " + path);
    out.push_back(r.read_doubles(path));
    if (out.back().size() != cells) throw Error("'" + r.path() + "': " + path + " has an unexpected shape");
  }
  return out;
}

void export_trace(const io::ArchiveReader& r, const RunArchive& run, std::ostream& csv) {
  // Every field the archive has (archives before the drift diagnostics have the first five).
  std::vector<std::string> fields;
  for (const auto& f : layout::trace_fields()) {
    if (r.exists(layout::trace_field(f))) fields.push_back(f);
  }
  r.require(layout::kTraceStep, "the loss trace");
  const auto shape = r.dims(layout::kTraceStep);
  const auto records = static_cast<std::size_t>(shape.size() == 2 ? shape[1] : 0);
  const auto C = static_cast<std::size_t>(run.chains);
  const auto table = read_fields(r, layout::kTrace, fields, C * records);
  csv << "chain";
  for (const auto& f : fields) csv << "," << f;
  csv << "\n";
  for (std::size_t c = 0; c < C; ++c) {
    for (std::size_t i = 0; i < records; ++i) {
      const std::size_t at = c * records + i;
      if (!std::isfinite(table[1][at])) continue;  // unwritten record of a stopped trajectory
      csv << c << "," << static_cast<long long>(table[0][at]) << "," << static_cast<long long>(table[1][at]);
      for (std::size_t f = 2; f < fields.size(); ++f) csv << "," << csv_number(table[f][at]);
      csv << "\n";
    }
  }
}

void export_samples(const io::ArchiveReader& r, const RunArchive& run, bool params, std::ostream& csv) {
  const auto C = static_cast<std::size_t>(run.chains);
  const auto D = static_cast<std::size_t>(run.draws);
  const auto& fields = layout::sample_stat_fields();
  const auto table = read_fields(r, layout::kSampleStats, fields, C * D);
  if (params) {
    csv << "chain,draw,param,value\n";
    for (std::size_t c = 0; c < C; ++c) {
      const auto rows = r.read_slab(layout::kPosteriorParams, static_cast<std::int64_t>(c));
      const auto P = static_cast<std::size_t>(run.parameters);
      for (std::size_t d = 0; d < D; ++d) {
        if (!std::isfinite(table[0][c * D + d])) continue;
        for (std::size_t p = 0; p < P; ++p) {
          csv << c << "," << d << "," << p << "," << csv_number(rows[d * P + p]) << "\n";
        }
      }
    }
    return;
  }
  csv << "chain,draw,step,temperature,loss,kinetic_temperature,extended_energy\n";
  for (std::size_t c = 0; c < C; ++c) {
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t at = c * D + d;
      if (!std::isfinite(table[0][at])) continue;  // unwritten draw of a stopped trajectory
      csv << c << "," << d << "," << static_cast<long long>(table[0][at]);
      for (std::size_t f = 1; f < fields.size(); ++f) csv << "," << csv_number(table[f][at]);
      csv << "\n";
    }
  }
}

void export_ensemble(const io::ArchiveReader& r, const RunArchive& run, std::ostream& csv) {
  csv << "set,row";
  if (run.classification) {
    for (const auto& name : run.class_names) csv << "," << csv_text("fraction_" + name);
    csv << ",prediction,prediction_class\n";
  } else {
    for (const auto& name : output_names(run)) {
      csv << "," << csv_text("mean_" + name) << "," << csv_text("sd_" + name);
    }
    csv << "\n";
  }
  for (const auto& set : run.sets) {
    const std::string g = layout::ensemble_group(set);
    if (run.classification) {
      r.require(layout::join(g, layout::kFraction), "the ensemble's vote fractions");
      r.require(layout::join(g, layout::kPrediction), "the ensemble's majority");
      const auto fraction = r.read_doubles(layout::join(g, layout::kFraction));
      const auto prediction = r.read_ints(layout::join(g, layout::kPrediction));
      const auto K = static_cast<std::size_t>(run.classes);
      if (fraction.size() != prediction.size() * K) throw Error("'" + r.path() + "': " + g + " shapes disagree");
      for (std::size_t i = 0; i < prediction.size(); ++i) {
        csv << set << "," << i;
        for (std::size_t k = 0; k < K; ++k) csv << "," << csv_number(fraction[i * K + k]);
        const auto m = prediction[i];
        const std::string label = m >= 0 && static_cast<std::size_t>(m) < run.class_names.size()
                                      ? run.class_names[static_cast<std::size_t>(m)]
                                      : std::string();
        csv << "," << m << "," << csv_text(label) << "\n";
      }
    } else {
      r.require(layout::join(g, layout::kMean), "the ensemble mean");
      r.require(layout::join(g, layout::kVariance), "the ensemble variance");
      const auto mean = r.read_doubles(layout::join(g, layout::kMean));
      const auto variance = r.read_doubles(layout::join(g, layout::kVariance));
      const auto K = static_cast<std::size_t>(run.outputs);
      if (mean.size() != variance.size() || mean.size() % K != 0) {
        throw Error("'" + r.path() + "': " + g + " shapes disagree");
      }
      for (std::size_t i = 0; i < mean.size() / K; ++i) {
        csv << set << "," << i;
        for (std::size_t k = 0; k < K; ++k) {
          csv << "," << csv_number(mean[i * K + k]) << "," << csv_number(std::sqrt(variance[i * K + k]));
        }
        csv << "\n";
      }
    }
  }
}

}  // namespace

void export_csv(const ExportOptions& o, std::ostream& out) {
  if (o.what != "trace" && o.what != "samples" && o.what != "ensemble") {
    throw Error("export: --what '" + o.what + "' is not one of trace, samples, ensemble");
  }
  if (o.params && o.what != "samples") throw Error("export: --params goes with --what samples");
  const io::ArchiveReader r(o.archive);
  const RunArchive run = load_run(r);
  OutputFile file(o.output, out);
  if (o.what == "trace")
    export_trace(r, run, file.stream());
  else if (o.what == "samples")
    export_samples(r, run, o.params, file.stream());
  else
    export_ensemble(r, run, file.stream());
  file.close();
}

OutputFile::OutputFile(const std::string& path, std::ostream& fallback) : path_(path) {
  if (path.empty()) {
    stream_ = &fallback;
    return;
  }
  file_ = std::make_unique<std::ofstream>(path, std::ios::out | std::ios::trunc);
  if (!*file_) throw Error("cannot write '" + path + "'");
  stream_ = file_.get();
}

void OutputFile::close() {
  stream_->flush();
  if (file_) {
    file_->close();
    if (!*file_) throw Error("writing '" + path_ + "' failed (disk full?)");
  } else if (!*stream_) {
    throw Error("writing the standard output failed");
  }
}

}  // namespace simmer::analyze
