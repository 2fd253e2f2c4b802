#pragma once
/// \file
/// simmer_analyze merge in two files: merge.cpp checks the inputs and copies what is per chain or
/// replicated; merge_scores.cpp re-derives what pools the runs (the ensembles' scores, the
/// diagnostics' counts, the deep ensemble) into the /metrics that parallel::write_metrics writes.

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/candidate.hpp"
#include "simmer/io/archive_reader.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/parallel/archive_writer.hpp"
#include "simmer/parallel/report.hpp"
#include "simmer/posthoc/run_archive.hpp"
#include "simmer/run/metrics.hpp"

namespace simmer::posthoc::merging {

/// One archive to merge.
struct Input {
  std::optional<io::ArchiveReader> reader;
  RunArchive run;
};

/// Whether every input holds `object`.
inline bool all_have(const std::vector<Input>& inputs, const std::string& object) {
  return std::all_of(inputs.begin(), inputs.end(), [&](const Input& in) { return in.reader->exists(object); });
}

/// `path` of every input, concatenated in input order.
template <class T>
std::vector<T> concatenated(const std::vector<Input>& inputs, const std::string& path) {
  std::vector<T> out;
  for (const auto& in : inputs) {
    std::vector<T> part;
    if constexpr (std::is_same_v<T, double>)
      part = in.reader->read_doubles(path);
    else
      part = in.reader->read_ints(path);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

/// `object`'s attributes as `r` holds them (dimension-scale bookkeeping aside).
void copy_attributes(const io::ArchiveReader& r, io::ParallelFile& f, const std::string& object);

/// The sets with targets, scored for every ensemble: train, test and validation (not points).
inline bool is_scored(const std::string& set) { return run::layout::is_scored_set(set); }

/// The members of the ensemble in `group` (/ensemble/<set>), or of the run's (older archives).
inline std::int64_t set_members(const io::ArchiveReader& r, const std::string& group) {
  const std::int64_t n = group_members(r, group);
  // Neither attribute: the reader's error naming the one missing.
  return n >= 0 ? n : r.attribute_integer(run::layout::kMetrics, run::layout::kMembers);
}

/// `v` (an archive array of rows x cols values) as a Matrix.
inline Matrix as_matrix(const std::vector<double>& v, Index rows, Index cols) {
  if (static_cast<Index>(v.size()) != rows * cols) throw Error("merge: unexpected ensemble shape");
  return Eigen::Map<const Matrix>(v.data(), rows, cols);
}

/// The pooled ensembles of the inputs' /ensemble/<set>, one per set of the first run.
struct PooledSets {
  std::vector<ensemble::VoteAccumulator> votes;  ///< classification
  std::vector<ensemble::MeanAccumulator> means;  ///< regression
  /// Regression, per set: the predictive mixture's components, every input's trajectories in input
  /// order (empty when an input has none: an archive from before issue 26).
  std::vector<std::vector<ensemble::MeanAccumulator>> components;
};

/// Regression: the predictive mixture's components of /ensemble/<set> (`group`, `rows` rows) of
/// every input, concatenated in input order and written to the merged archive (none, and nothing
/// written, when an input lacks them).
std::vector<ensemble::MeanAccumulator> merge_components(const std::vector<Input>& inputs, io::ParallelFile& f,
                                                        const std::string& group, Index rows, Index outputs,
                                                        std::int64_t chains);

/// What every merged ensemble is scored on: the evaluation sets' shape (`chains`, the merged
/// trajectories, as its mixture components) and the scored sets' truth, from the first archive
/// (every input holds the same data).
struct Evaluation {
  Evaluation(const std::vector<Input>& inputs, std::int64_t chains);
  Evaluation(const Evaluation&) = delete;  // `scored` points into labels and truth
  Evaluation& operator=(const Evaluation&) = delete;
  parallel::EnsembleLayout shape;
  std::vector<std::string> scored_names;  ///< train, test[, validation]
  std::vector<std::vector<std::int64_t>> labels;
  std::vector<Matrix> truth;
  std::vector<ensemble::ScoredSet> scored;
};

/// The deep ensemble of every input's Adam end points (their /baseline/<set>/prediction in input
/// order), or nullopt when an input has none (ab initio runs, older archives).
std::optional<ensemble::Candidate> deep_ensemble(const std::vector<Input>& inputs, const Evaluation& ev);

/// The baselines' scores per trajectory (/baseline/<set>_<score>), concatenated: the columns the
/// first archive has.
std::vector<parallel::Metrics::BaselineColumn> baseline_columns(const std::vector<Input>& inputs);

/// Whether `in` is a temperature-ladder run: it has /ladder (simmer.mode = adam keeps the default
/// simmer.ladder in its configuration but simmers nothing).
inline bool is_ladder(const Input& in) { return in.reader->is_group(run::layout::kLadder); }

/// Ladder runs (simmer.ladder): refuses `other` unless its ladder pools with `first`'s (the same
/// rung count and temperatures).
void check_ladders(const Input& first, const Input& other);

/// Ladder runs: /ladder (every rung's pooled ensemble, scores and diagnostics; the exchange log),
/// /deep_ensemble, /ensemble (the candidate chosen again on the pooled validation rows: a rung or
/// the deep ensemble), /diagnostics (the chosen rung's trajectories, rung_0's when the deep
/// ensemble is chosen, as in the run) and /selection; returns /metrics for parallel::write_metrics.
parallel::Metrics write_ladder(const std::vector<Input>& inputs, io::ParallelFile& f, std::int64_t chains);

/// The diagnostics group `in` of every input (/diagnostics, or a rung's) concatenated into `out`
/// in input order (each trajectory's numbers are its own; the chain scale its merged index), the
/// member series' R-hat and ESS pooled again; returns the verdict counts and loss rises, the
/// harmonic ones from the attributes of `scores` (/metrics, or the rung's group), or nullopt when
/// an input has no verdicts. The pooled per-block metrics need the runs' block ensembles, which
/// archives do not keep: a merged archive has none.
std::optional<parallel::StageMetrics> merge_diagnostics(const std::vector<Input>& inputs, io::ParallelFile& f,
                                                        const std::string& in, const std::string& out,
                                                        const std::string& scores);

/// Writes what the merged archive pools beyond /ensemble's votes or means (the mean
/// probabilities or coverage counts, /diagnostics, /deep_ensemble) and returns its /metrics,
/// for parallel::write_metrics. `chains` is the merged archive's trajectory count.
parallel::Metrics merged_metrics(const std::vector<Input>& inputs, io::ParallelFile& f, std::int64_t chains,
                                 const PooledSets& pooled);

}  // namespace simmer::posthoc::merging
