#include "simmer/parallel/metrics_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "simmer/run/metrics.hpp"

namespace simmer::parallel {

using run::layout::score_fields;
namespace layout = run::layout;

std::int64_t write_member_series(io::ParallelFile& f, const std::string& group, const std::string& name,
                                 const ensemble::Chains& chains, ScaleAxes& by_chain, ScaleAxes& by_member) {
  std::size_t longest = 0;
  for (const auto& one : chains) longest = std::max(longest, one.size());
  std::vector<double> rows(chains.size() * longest, std::nan(""));
  for (std::size_t c = 0; c < chains.size(); ++c) {
    std::copy(chains[c].begin(), chains[c].end(), rows.begin() + static_cast<std::ptrdiff_t>(c * longest));
  }
  const std::string path = layout::join(group, layout::member_series(name));
  f.put(path, rows, {static_cast<std::int64_t>(chains.size()), static_cast<std::int64_t>(longest)});
  by_chain.emplace_back(path, 0U);
  by_member.emplace_back(path, 1U);
  const ensemble::Chains usable = ensemble::usable_chains(chains, 4);
  const bool enough = usable.size() >= 2;
  f.attribute(group, layout::series_rank_rhat(name), enough ? ensemble::rank_rhat(usable) : std::nan(""));
  f.attribute(group, layout::series_bulk_ess(name), enough ? ensemble::bulk_ess(usable) : std::nan(""));
  return static_cast<std::int64_t>(longest);
}

void write_member_scale(io::ParallelFile& f, const std::string& group, std::int64_t members,
                        const ScaleAxes& by_member) {
  std::vector<double> ids(static_cast<std::size_t>(members));
  std::iota(ids.begin(), ids.end(), 0.0);
  const std::string scale = layout::join(group, layout::kMemberAxis);
  f.put(scale, ids, {members});
  f.attach_scale(scale, layout::kMemberAxis, by_member);
}

std::pair<double, double> finite_mean_sd(const std::vector<double>& values) {
  double m = 0.0, q = 0.0;
  std::size_t n = 0;
  for (const double v : values) {
    if (!std::isfinite(v)) continue;
    m += v;
    ++n;
  }
  if (n == 0) return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  m /= static_cast<double>(n);
  for (const double v : values) {
    if (std::isfinite(v)) q += (v - m) * (v - m);
  }
  return {m, n > 1 ? std::sqrt(q / static_cast<double>(n - 1)) : 0.0};
}

std::vector<SetMetrics> set_metrics(const std::vector<std::string>& names, const ensemble::CandidateScores& scores,
                                    bool classification) {
  std::vector<SetMetrics> out;
  for (std::size_t s = 0; s < scores.sets.size(); ++s) {
    SetMetrics m;
    m.set = names.at(s);
    m.scores = scores.sets[s];
    if (!classification) {
      m.coverage = scores.coverage.at(s);
      m.mean_coverage = scores.mean_coverage.at(s);
    }
    out.push_back(std::move(m));
  }
  return out;
}

void write_set_metrics(io::ParallelFile& f, const std::string& object, const std::string& prefix, bool classification,
                       const std::vector<SetMetrics>& sets, const ensemble::NoiseEstimate& noise) {
  if (!classification && noise.known()) {
    f.attribute(object, layout::noise_variance_key(prefix), noise.mean());
    f.attribute(object, layout::noise_source_key(prefix), std::string(ensemble::kNoiseSourceNames.name(noise.source)));
  }
  namespace layout = run::layout;
  for (const auto& s : sets) {
    for (const auto& [score, field] : score_fields(classification)) {
      if (s.uncertainty || !layout::is_uncertainty_score(classification, score)) {
        f.attribute(object, layout::score_key(prefix, s.set, score), s.scores.*field);
      }
    }
    if (s.uncertainty) {
      f.attribute(object, layout::worst_point_key(prefix, s.set), static_cast<std::int64_t>(s.scores.worst_row));
      f.attribute(object, layout::worst_point_share_key(prefix, s.set), s.scores.worst_share);
    }
    if (!classification && s.coverage) {
      for (std::size_t l = 0; l < kCoverageLevels.size(); ++l) {
        f.attribute(object, layout::coverage_key(prefix, s.set, kCoverageLevels[l]), (*s.coverage)[l]);
      }
    }
    if (!classification && s.mean_coverage) {
      for (std::size_t l = 0; l < kCoverageLevels.size(); ++l) {
        f.attribute(object, layout::mean_coverage_key(prefix, s.set, kCoverageLevels[l]), (*s.mean_coverage)[l]);
      }
    }
  }
}

void write_stage_metrics(io::ParallelFile& f, const std::string& object, const StageMetrics& s) {
  if (s.verdicts) {
    for (const auto& [v, name] : ensemble::kVerdictNames.table) {
      f.attribute(object, run::layout::verdict_count_key(name), (*s.verdicts)[static_cast<std::size_t>(v)]);
    }
  }
  if (s.observed_rise) f.attribute(object, run::layout::kObservedLossRise, *s.observed_rise);
  if (s.harmonic_rise) f.attribute(object, run::layout::kHarmonicLossRise, *s.harmonic_rise);
  if (s.stiff_rise) f.attribute(object, run::layout::kHarmonicLossRiseStiffModes, *s.stiff_rise);
}

void write_metrics(io::ParallelFile& f, const Metrics& m) {
  namespace layout = run::layout;
  const std::string g = layout::kMetrics;
  for (const auto& c : m.baseline) {
    f.put(layout::baseline_score(c.set, c.score), c.values, {static_cast<std::int64_t>(c.values.size())});
    const auto [mean, sd] = finite_mean_sd(c.values);
    f.attribute(g, layout::baseline_mean_key(c.set, c.score), mean);
    f.attribute(g, layout::baseline_sd_key(c.set, c.score), sd);
  }
  write_set_metrics(f, g, layout::kEnsemblePrefix, m.classification, m.ensemble, m.ensemble_noise);
  f.attribute(g, layout::kMembers, m.members);
  if (m.ensemble_name) f.attribute(g, layout::kEnsembleName, *m.ensemble_name);
  if (m.deep_ensemble) {
    write_set_metrics(f, g, layout::kDeepEnsemblePrefix, m.classification, *m.deep_ensemble, m.deep_ensemble_noise);
    f.attribute(g, layout::kDeepEnsembleMembers, m.deep_ensemble_members);
  }
  if (m.stage) write_stage_metrics(f, g, *m.stage);
  if (m.bayes_temperature) f.attribute(g, layout::kBayesTemperature, *m.bayes_temperature);
  if (m.temperature_over_bayes) f.attribute(g, layout::kTemperatureOverBayes, *m.temperature_over_bayes);
  if (m.noise_sd) {
    f.attribute(g, layout::kNoiseSd, *m.noise_sd);
    f.attribute(g, layout::kNoiseSdSource, m.noise_sd_source);
  }
}

}  // namespace simmer::parallel
