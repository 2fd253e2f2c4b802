#include "simmer/ensemble/trajectory_diagnostics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/convergence.hpp"

namespace simmer::ensemble {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class S>
double rms_of(const VectorOf<S>& x) {
  return x.size() > 0 ? std::sqrt(x.template cast<double>().squaredNorm() / static_cast<double>(x.size())) : 0.0;
}

/// Quantile q of `values` (linear interpolation between order statistics; NaN when empty).
double quantile(std::vector<double> values, double q) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

/// Split-R̂ of one series: its halves compared as two chains (each split again, so four quarters).
double series_rhat(const std::vector<double>& series) {
  const std::size_t half = series.size() / 2;
  if (half < 4) return kNaN;
  const Chains halves{std::vector<double>(series.begin(), series.begin() + static_cast<std::ptrdiff_t>(half)),
                      std::vector<double>(series.begin() + static_cast<std::ptrdiff_t>(half),
                                          series.begin() + static_cast<std::ptrdiff_t>(2 * half))};
  return split_rhat(halves);
}

double vote_metric(const VoteAccumulator& votes, const ScoredSet& set) {
  if (votes.members() == 0) return kNaN;
  return accuracy(votes.majority(), *set.labels);
}

double mean_metric(const MeanAccumulator& means, const ScoredSet& set) {
  if (means.members() == 0) return kNaN;
  return r_squared(view(means.mean()), view(*set.truth));
}

void save_votes(ByteWriter& w, const VoteAccumulator& v) {
  w.i64(v.members());
  w.ints(std::vector<std::int64_t>(v.votes().data(), v.votes().data() + v.votes().size()));
}

void load_votes(ByteReader& r, VoteAccumulator& v, bool add) {
  const auto members = r.i64();
  const auto flat = r.ints();
  if (static_cast<Index>(flat.size()) != v.votes().size()) throw Error("vote table has the wrong shape");
  const VoteAccumulator::Votes table =
      Eigen::Map<const VoteAccumulator::Votes>(flat.data(), v.votes().rows(), v.votes().cols());
  if (!add) v = VoteAccumulator(v.votes().rows(), v.votes().cols());
  v.add_votes(table, members);
}

void save_means(ByteWriter& w, const MeanAccumulator& m) {
  w.i64(m.members());
  w.doubles(m.mean().data(), m.mean().size());
  w.doubles(m.m2().data(), m.m2().size());
}

/// Restores (`add` false) or merges (`add` true, Chan's formula) an accumulator written by save_means.
void load_means(ByteReader& r, MeanAccumulator& m, bool add) {
  const auto members = r.i64();
  const auto mean = r.doubles();
  const auto m2 = r.doubles();
  if (static_cast<Index>(mean.size()) != m.mean().size() || m2.size() != mean.size()) {
    throw Error("ensemble partial has the wrong shape");
  }
  const Index rows = m.mean().rows(), cols = m.mean().cols();
  const Eigen::Map<const Matrix> mean_map(mean.data(), rows, cols), m2_map(m2.data(), rows, cols);
  if (add) {
    m.merge(members, mean_map, m2_map);
  } else {
    m.restore(members, mean_map, m2_map);
  }
}

}  // namespace

Index ScoredSet::rows() const {
  if (labels != nullptr) return static_cast<Index>(labels->size());
  return truth != nullptr ? truth->rows() : 0;
}

std::int64_t DiagnosticsSetup::block_of(std::int64_t step) const {
  const std::int64_t offset = std::clamp<std::int64_t>(step - window_first_step, 0, window_steps - 1);
  return std::min(blocks - 1, offset * blocks / window_steps);
}

double TrajectorySummary::ballistic_ratio() const { return path_length > 0.0 ? distance / path_length : kNaN; }

double TrajectorySummary::window_ballistic_ratio() const {
  return window_path_length > 0.0 ? window_distance / window_path_length : kNaN;
}

void save_summary(ByteWriter& w, const TrajectorySummary& s) {
  w.i64(s.members);
  w.vec(std::vector<double>{s.distance, s.path_length, s.window_distance, s.window_path_length, s.rms_start,
                            s.rms_window_start, s.rms_end, s.max_abs_end, s.member_train_median, s.member_test_median,
                            s.member_test_q25, s.member_test_q75, s.mean_member_loss, s.rhat});
  w.vec(s.block_train_metric);
  w.vec(s.block_test_metric);
  w.i64(static_cast<std::int64_t>(s.verdict));
  w.str(s.reason);
}

TrajectorySummary load_summary(ByteReader& r) {
  TrajectorySummary s;
  s.members = r.i64();
  const auto v = r.doubles();
  if (v.size() != 14) throw Error("trajectory summary record has the wrong size");
  s.distance = v[0];
  s.path_length = v[1];
  s.window_distance = v[2];
  s.window_path_length = v[3];
  s.rms_start = v[4];
  s.rms_window_start = v[5];
  s.rms_end = v[6];
  s.max_abs_end = v[7];
  s.member_train_median = v[8];
  s.member_test_median = v[9];
  s.member_test_q25 = v[10];
  s.member_test_q75 = v[11];
  s.mean_member_loss = v[12];
  s.rhat = v[13];
  s.block_train_metric = r.doubles();
  s.block_test_metric = r.doubles();
  const auto verdict = r.i64();
  if (verdict < 0 || verdict > static_cast<std::int64_t>(Verdict::no_members)) throw Error("bad verdict code");
  s.verdict = static_cast<Verdict>(verdict);
  s.reason = r.str();
  return s;
}

void judge(TrajectorySummary& s, double prior_rms, bool diverged, const VerdictThresholds& t) {
  char buf[320];
  const double ratio = s.window_ballistic_ratio();
  const double growth = s.rms_window_start > 0.0 ? s.rms_end / s.rms_window_start : kNaN;
  char prior[64] = "";
  if (!std::isnan(prior_rms)) std::snprintf(prior, sizeof prior, " (prior rms %.3g)", prior_rms);
  std::snprintf(buf, sizeof buf, "window ballistic ratio %.3f, rms %.3g -> %.3g (x%.3f)%s, split-R^ %.3f", ratio,
                s.rms_window_start, s.rms_end, growth, prior, s.rhat);
  s.reason = buf;
  if (diverged) {
    s.verdict = Verdict::diverged;
    return;
  }
  if (s.members == 0) {
    s.verdict = Verdict::no_members;
    return;
  }
  const bool ballistic = ratio >= t.ballistic;
  const bool growing = growth >= t.rms_growth;
  const bool beyond_prior = std::isnan(prior_rms) || s.rms_end > t.prior_bound * prior_rms;
  if (ballistic && growing && beyond_prior) {
    s.verdict = Verdict::drifting;
  } else if (ballistic || (std::isfinite(s.rhat) && s.rhat > t.rhat)) {
    s.verdict = Verdict::not_mixed;
  } else {
    s.verdict = Verdict::stationary;
  }
}

DiagnosticsPartials::DiagnosticsPartials(const DiagnosticsSetup& setup) {
  for (const ScoredSet& set : setup.sets) {
    const Index rows = set.rows();
    if (setup.classification) {
      probabilities.emplace_back(rows, setup.classes);
      block_votes.emplace_back(static_cast<std::size_t>(setup.blocks), VoteAccumulator(rows, setup.classes));
    } else {
      coverage.emplace_back(rows, setup.outputs);
      block_means.emplace_back(static_cast<std::size_t>(setup.blocks), MeanAccumulator(rows, setup.outputs));
    }
  }
}

void DiagnosticsPartials::save(ByteWriter& w) const {
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    save_means(w, probabilities[i]);
    for (const auto& v : block_votes[i]) save_votes(w, v);
  }
  for (std::size_t i = 0; i < coverage.size(); ++i) {
    coverage[i].save(w);
    for (const auto& m : block_means[i]) save_means(w, m);
  }
}

void DiagnosticsPartials::load(ByteReader& r, bool merge) {
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    load_means(r, probabilities[i], merge);
    for (auto& v : block_votes[i]) load_votes(r, v, merge);
  }
  for (std::size_t i = 0; i < coverage.size(); ++i) {
    if (merge) {
      CoverageCounter one = coverage[i];
      one.load(r);
      coverage[i].merge(one);  // integer counts: any order gives the same sums
    } else {
      coverage[i].load(r);
    }
    for (auto& m : block_means[i]) load_means(r, m, merge);
  }
}

std::vector<double> DiagnosticsPartials::block_metric(const DiagnosticsSetup& setup, int set) const {
  const auto i = static_cast<std::size_t>(set);
  const ScoredSet& scored = setup.sets.at(i);
  std::vector<double> out;
  for (std::int64_t b = 0; b < setup.blocks; ++b) {
    const auto j = static_cast<std::size_t>(b);
    out.push_back(setup.classification ? vote_metric(block_votes[i][j], scored)
                                       : mean_metric(block_means[i][j], scored));
  }
  return out;
}

TrajectoryDiagnostics::TrajectoryDiagnostics(const DiagnosticsSetup& setup) : setup_(setup), partials_(setup) {
  if (setup_.blocks < 1 || setup_.window_steps < 1) throw Error("internal: diagnostics need a window and blocks");
}

template <class S>
void TrajectoryDiagnostics::start(const VectorOf<S>& x) {
  start_ = x.template cast<double>();
  rms_start_ = rms_of(x);
  path_ = window_path_ = 0.0;
  window_started_ = setup_.window_first_step == 0;
  if (window_started_) {
    window_start_ = start_;
    rms_window_start_ = rms_start_;
  }
}

template <class S>
void TrajectoryDiagnostics::after_step(std::int64_t step, const VectorOf<S>& x, double kinetic) {
  const double moved = setup_.time_step * std::sqrt(std::max(kinetic, 0.0));
  path_ += moved;
  if (step >= setup_.window_first_step) window_path_ += moved;
  if (step + 1 == setup_.window_first_step) {
    window_start_ = x.template cast<double>();
    rms_window_start_ = rms_of(x);
    window_started_ = true;
  }
}

template <class S>
Position TrajectoryDiagnostics::position(const VectorOf<S>& x) const {
  Position p;
  p.distance = start_.size() == x.size() ? (x.template cast<double>() - start_).norm() : kNaN;
  p.path_length = path_;
  p.rms = rms_of(x);
  p.max_abs = x.size() > 0 ? static_cast<double>(x.cwiseAbs().maxCoeff()) : 0.0;
  return p;
}

void TrajectoryDiagnostics::begin_member(std::int64_t step) {
  pending_step_ = step;
  pending_block_ = setup_.block_of(step);
}

void TrajectoryDiagnostics::member_predictions(int set, ConstBatchView prediction) {
  const auto i = static_cast<std::size_t>(set);
  const ScoredSet& s = setup_.sets.at(i);
  const auto block = static_cast<std::size_t>(pending_block_);
  if (setup_.classification) {
    class_probabilities(prediction, probability_scratch_);
    partials_.probabilities[i].add(view(probability_scratch_));
    partials_.block_votes[i][block].add(prediction);
    if (i < 2) pending_metric_[i] = accuracy(predicted_classes(prediction), *s.labels);
  } else {
    partials_.coverage[i].add(prediction, view(*s.truth));
    partials_.block_means[i][block].add(prediction);
    if (i < 2) pending_metric_[i] = r_squared(prediction, view(*s.truth));
  }
}

template <class S>
void TrajectoryDiagnostics::member_done(const VectorOf<S>& x, double train_loss) {
  series_step_.push_back(static_cast<double>(pending_step_));
  series_loss_.push_back(train_loss);
  series_train_.push_back(pending_metric_[0]);
  series_test_.push_back(pending_metric_[1]);
  series_rms_.push_back(rms_of(x));
}

template <class S>
TrajectorySummary TrajectoryDiagnostics::summary(const VectorOf<S>& x, double prior_rms, bool diverged) const {
  TrajectorySummary s;
  s.members = members();
  const Position end = position(x);
  s.distance = end.distance;
  s.path_length = path_;
  s.window_distance =
      window_started_ && window_start_.size() == x.size() ? (x.template cast<double>() - window_start_).norm() : kNaN;
  s.window_path_length = window_path_;
  s.rms_start = rms_start_;
  s.rms_window_start = window_started_ ? rms_window_start_ : kNaN;
  s.rms_end = end.rms;
  s.max_abs_end = end.max_abs;
  s.block_train_metric = partials_.block_metric(setup_, 0);
  s.block_test_metric = partials_.block_metric(setup_, 1);
  s.member_train_median = quantile(series_train_, 0.5);
  s.member_test_median = quantile(series_test_, 0.5);
  s.member_test_q25 = quantile(series_test_, 0.25);
  s.member_test_q75 = quantile(series_test_, 0.75);
  double loss_sum = 0.0;
  for (const double l : series_loss_) loss_sum += l;
  s.mean_member_loss = series_loss_.empty() ? kNaN : loss_sum / static_cast<double>(series_loss_.size());
  s.rhat = kNaN;
  for (const auto* series : {&series_loss_, &series_rms_, &series_test_}) {
    const double r = series_rhat(*series);
    if (std::isfinite(r) && !(r <= s.rhat)) s.rhat = r;
  }
  judge(s, prior_rms, diverged);
  return s;
}

void TrajectoryDiagnostics::save(ByteWriter& w) const {
  w.vec(start_);
  w.vec(window_start_);
  w.f64(rms_start_);
  w.f64(rms_window_start_);
  w.f64(path_);
  w.f64(window_path_);
  w.pod(static_cast<std::uint8_t>(window_started_));
  for (const auto* series : {&series_step_, &series_loss_, &series_train_, &series_test_, &series_rms_}) {
    w.vec(*series);
  }
  save_partials(w);
}

void TrajectoryDiagnostics::load(ByteReader& r) {
  start_ = r.vec();
  window_start_ = r.vec();
  rms_start_ = r.f64();
  rms_window_start_ = r.f64();
  path_ = r.f64();
  window_path_ = r.f64();
  window_started_ = r.pod<std::uint8_t>() != 0;
  for (auto* series : {&series_step_, &series_loss_, &series_train_, &series_test_, &series_rms_}) {
    *series = r.doubles();
  }
  partials_.load(r, false);
}

void TrajectoryDiagnostics::save_partials(ByteWriter& w) const { partials_.save(w); }

PooledDiagnostics::PooledDiagnostics(const DiagnosticsSetup& setup) : setup_(setup), partials_(setup) {}

void PooledDiagnostics::merge(ByteReader& r) { partials_.load(r, true); }

#define SIMMER_INSTANTIATE(S)                                                                \
  template void TrajectoryDiagnostics::start(const VectorOf<S>&);                            \
  template void TrajectoryDiagnostics::after_step(std::int64_t, const VectorOf<S>&, double); \
  template Position TrajectoryDiagnostics::position(const VectorOf<S>&) const;               \
  template void TrajectoryDiagnostics::member_done(const VectorOf<S>&, double);              \
  template TrajectorySummary TrajectoryDiagnostics::summary(const VectorOf<S>&, double, bool) const;
SIMMER_INSTANTIATE(double)
SIMMER_INSTANTIATE(float)
#undef SIMMER_INSTANTIATE

}  // namespace simmer::ensemble
