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

double vote_metric(const VoteAccumulator& votes, const ScoredSet& set) {
  if (votes.members() == 0) return kNaN;
  return accuracy(votes.majority(), *set.labels);
}

double mean_metric(const MeanAccumulator& means, const ScoredSet& set) {
  if (means.members() == 0) return kNaN;
  return r_squared(view(means.mean()), view(*set.truth));
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

std::string window_advice(const SamplingOptions& sampling, const std::vector<double>& rhats,
                          const std::vector<Verdict>& verdicts, const VerdictThresholds& t) {
  std::vector<double> above;
  for (std::size_t c = 0; c < rhats.size() && c < verdicts.size(); ++c) {
    if (verdicts[c] == Verdict::not_mixed && std::isfinite(rhats[c]) && rhats[c] > t.rhat) above.push_back(rhats[c]);
  }
  if (above.empty() || sampling.window <= 0) return {};
  const double median = quantile(above, 0.5), largest = *std::max_element(above.begin(), above.end());
  const auto w = static_cast<double>(sampling.window);
  const double typical = window_for_split_rhat(w, median, t.rhat), slowest = window_for_split_rhat(w, largest, t.rhat);
  // Two significant digits: the estimate is a guide, not a count.
  const auto steps = [](double v) {
    char text[32];
    if (!(v < 1e15)) {
      std::snprintf(text, sizeof text, "%.2g", v);
      return std::string(text);
    }
    const double unit = std::pow(10.0, std::max(0.0, std::floor(std::log10(v)) - 1.0));
    return std::to_string(static_cast<long long>(std::round(v / unit) * unit));
  };
  // What keeps the members as many: the stride, or the fraction (a count keeps them already).
  const char* members = sampling.count > 0      ? ""
                        : sampling.fraction > 0 ? ", and ensemble.fraction divided as much to keep the members (and "
                                                  "the time spent on them) as many"
                                                : ", and ensemble.stride multiplied as much to keep the members (and "
                                                  "the time spent on them) as many";
  char buf[800];
  std::snprintf(buf, sizeof buf,
                "window: split-R^ above %.2g in %zu of %zu trajectories (not mixed) over the %lld-step window "
                "(median %.3g, largest %.3g); a stationary series' split-R^^2 - 1 falls as 1/window, so about %s "
                "steps (%.0fx) would bring the median of them under %.2g and %s (%.0fx) the slowest: a longer "
                "ensemble.window, simmer.steps longer by as much%s (a guide: docs/STATIONARITY.md)",
                t.rhat, above.size(), rhats.size(), static_cast<long long>(sampling.window), median, largest,
                steps(typical).c_str(), typical / w, t.rhat, steps(slowest).c_str(), slowest / w, members);
  return buf;
}

void judge(TrajectorySummary& s, double prior_rms, bool diverged, double start_loss, const VerdictThresholds& t) {
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
  // Exploded without a health check stopping it (a step above the stability limit that the
  // thermostat froze): never stationary.
  const double scale = std::max(s.rms_start, std::isnan(prior_rms) ? 0.0 : prior_rms);
  const bool finite =
      std::isfinite(s.rms_end) && std::isfinite(s.max_abs_end) && (s.members == 0 || std::isfinite(s.mean_member_loss));
  const bool huge_rms = scale > 0.0 && s.rms_end > t.explode_rms * scale;
  // The loss's scale: its start, or the window's T if larger (a thermal rise is N_f T/2; an Adam
  // end point overfit to a training loss of 1e-8 is 1e6 x exceeded by any T > 0 sampling).
  const double loss_scale = std::max(start_loss, std::isfinite(s.target_temperature) ? s.target_temperature : 0.0);
  const bool huge_loss =
      std::isfinite(loss_scale) && loss_scale > 0.0 && s.mean_member_loss > t.explode_loss * loss_scale;
  if (!finite || huge_rms || huge_loss) {
    std::snprintf(buf, sizeof buf, "exploded: %s (rms %.3g from %.3g, mean member loss %.3g from %.3g at the start)",
                  !finite    ? "a state that is not finite"
                  : huge_rms ? "rms beyond 1000x its start or prior scale"
                             : "mean loss beyond 1e6x its start and T",
                  s.rms_end, s.rms_start, s.mean_member_loss, start_loss);
    s.reason = buf;
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
  const double conf = s.configurational_ratio();
  const double error = s.configurational_stderr / s.target_temperature;
  if (s.verdict == Verdict::stationary && s.configurational_samples >= t.configurational_samples &&
      std::isfinite(error) && train::configurational_off(conf, error, t.configurational)) {
    std::snprintf(
        buf, sizeof buf, "; T_conf/T %.3f +- %.3f over %lld samples (%s)", conf, error,
        static_cast<long long>(s.configurational_samples),
        conf < 1.0 ? "positions colder than T: not settled" : "positions hotter than T: step bias or not settled");
    s.reason += buf;
    s.verdict = Verdict::not_equilibrated;
  }
}

DiagnosticsPartials::DiagnosticsPartials(const DiagnosticsSetup& setup) {
  for (const ScoredSet& set : setup.sets) {
    const Index rows = set.rows();
    if (setup.classification) {
      probabilities.emplace_back(rows, setup.classes);
      entropies.emplace_back(rows, 1);
      block_votes.emplace_back(static_cast<std::size_t>(setup.blocks), VoteAccumulator(rows, setup.classes));
    } else {
      coverage.emplace_back(rows, setup.outputs);
      block_means.emplace_back(static_cast<std::size_t>(setup.blocks), MeanAccumulator(rows, setup.outputs));
    }
  }
}

void DiagnosticsPartials::merge(const DiagnosticsPartials& other) {
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    const MeanAccumulator& m = other.probabilities[i];
    probabilities[i].merge(m.members(), m.mean(), m.m2());
    const MeanAccumulator& h = other.entropies[i];
    entropies[i].merge(h.members(), h.mean(), h.m2());
    for (std::size_t b = 0; b < block_votes[i].size(); ++b) {
      const VoteAccumulator& v = other.block_votes[i][b];
      block_votes[i][b].add_votes(v.votes(), v.members());
    }
  }
  for (std::size_t i = 0; i < coverage.size(); ++i) {
    coverage[i].merge(other.coverage[i]);  // integer counts: any order gives the same sums
    for (std::size_t b = 0; b < block_means[i].size(); ++b) {
      const MeanAccumulator& m = other.block_means[i][b];
      block_means[i][b].merge(m.members(), m.mean(), m.m2());
    }
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

TrajectoryDiagnostics::TrajectoryDiagnostics(const DiagnosticsSetup& setup)
    : setup_(setup), time_step_(setup.time_step), partials_(setup) {
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
  const double moved = time_step_ * std::sqrt(std::max(kinetic, 0.0));
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
    row_entropy(view(probability_scratch_), entropy_scratch_);
    partials_.entropies[i].add(view(entropy_scratch_));
    partials_.block_votes[i][block].add(prediction);
    if (i < 2) pending_metric_[i] = accuracy(predicted_classes(prediction), *s.labels);
    if (i == 1) {
      pending_points_.clear();
      for (const Index row : fixed_test_rows(prediction.rows())) {
        const auto label = static_cast<Index>((*s.labels)[static_cast<std::size_t>(row)]);
        pending_points_.push_back(std::log(probability_scratch_(row, label)));
      }
    }
  } else {
    partials_.coverage[i].add(prediction, view(*s.truth));
    partials_.block_means[i][block].add(prediction);
    if (i < 2) pending_metric_[i] = r_squared(prediction, view(*s.truth));
    if (i == 1) {
      pending_points_.clear();
      for (const Index row : fixed_test_rows(prediction.rows())) pending_points_.push_back(prediction(row, 0));
    }
  }
}

std::vector<Index> fixed_test_rows(Index rows) {
  std::vector<Index> out;
  for (const Index row : {Index{0}, rows / 2, rows - 1}) {
    if (row >= 0 && row < rows && (out.empty() || out.back() != row)) out.push_back(row);
  }
  return out;
}

template <class S>
void TrajectoryDiagnostics::member_done(const VectorOf<S>& x, double train_loss) {
  series_step_.push_back(static_cast<double>(pending_step_));
  series_loss_.push_back(train_loss);
  series_train_.push_back(pending_metric_[0]);
  series_test_.push_back(pending_metric_[1]);
  series_rms_.push_back(rms_of(x));
  series_points_.insert(series_points_.end(), pending_points_.begin(), pending_points_.end());
}

template <class S>
TrajectorySummary TrajectoryDiagnostics::summary(const VectorOf<S>& x, double prior_rms, bool diverged,
                                                 double start_loss) const {
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
  s.series_loss = series_loss_;
  s.series_test_metric = series_test_;
  s.series_points = series_points_;
  s.rhat = kNaN;
  for (const auto* series : {&series_loss_, &series_rms_, &series_test_}) {
    const double r = series_rhat(*series);
    if (std::isfinite(r) && !(r <= s.rhat)) s.rhat = r;
  }
  s.kinetic_temperature = thermometers_.kinetic_temperature();
  s.configurational_temperature = thermometers_.configurational_temperature();
  s.target_temperature = thermometers_.target_temperature();
  s.configurational_samples = thermometers_.samples;
  s.configurational_stderr = thermometers_.configurational_stderr();
  s.time_step = time_step_;
  judge(s, prior_rms, diverged, start_loss);
  return s;
}

void TrajectoryDiagnostics::save(ByteWriter& w) const { save_fields(w, *this); }

void TrajectoryDiagnostics::load(ByteReader& r) { load_fields(r, *this, Rest::not_last); }

void TrajectoryDiagnostics::save_partials(ByteWriter& w) const { save_fields(w, partials_); }

PooledDiagnostics::PooledDiagnostics(const DiagnosticsSetup& setup) : setup_(setup), partials_(setup) {}

void PooledDiagnostics::merge(ByteReader& r) {
  DiagnosticsPartials one = partials_;  // the shapes, to be filled with the trajectory's sums
  load_fields(r, one, Rest::last);
  partials_.merge(one);
}

#define SIMMER_INSTANTIATE(S)                                                                \
  template void TrajectoryDiagnostics::start(const VectorOf<S>&);                            \
  template void TrajectoryDiagnostics::after_step(std::int64_t, const VectorOf<S>&, double); \
  template Position TrajectoryDiagnostics::position(const VectorOf<S>&) const;               \
  template void TrajectoryDiagnostics::member_done(const VectorOf<S>&, double);              \
  template TrajectorySummary TrajectoryDiagnostics::summary(const VectorOf<S>&, double, bool, double) const;
SIMMER_INSTANTIATE(double)
SIMMER_INSTANTIATE(float)
#undef SIMMER_INSTANTIATE

}  // namespace simmer::ensemble
