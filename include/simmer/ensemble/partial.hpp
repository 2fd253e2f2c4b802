#pragma once
/// \file
/// The ensemble across trajectories: what one trajectory sends at a gather (`EnsemblePartial`)
/// and rank 0's merge of them in trajectory order (`PooledEnsemble`). Votes are integers and add
/// exactly; regression means are each trajectory's own running Welford totals, merged by Chan's
/// formula in trajectory order, so the ensemble's bits depend on neither the number of ranks nor
/// where gathers and checkpoints fall (ARCHITECTURE.md, step 7). No MPI: the driver moves the
/// bytes.

#include <cstdint>
#include <limits>
#include <vector>

#include "simmer/core/bytes.hpp"
#include "simmer/core/types.hpp"
#include "simmer/core/visit.hpp"
#include "simmer/ensemble/accumulator.hpp"

namespace simmer::ensemble {

/// The shapes every partial of a run shares.
struct EnsembleShape {
  bool classification = false;
  std::vector<Index> rows;  ///< rows of each evaluation set (train, test[, points])
  Index classes = 0;        ///< classification: voting classes
  Index outputs = 1;        ///< regression: outputs per row
  Index tracked = 0;        ///< regression: tracked values per member (test rows × outputs)
};

/// One trajectory's contribution since the last gather.
struct EnsemblePartial {
  std::int64_t trajectory = 0;
  double last_loss = std::numeric_limits<double>::quiet_NaN();  ///< training loss at its last step
  std::int64_t members = 0;                                     ///< members taken since the last gather
  std::int64_t diverged_step = -1;                              ///< -1: never
  /// classification: this interval's votes per set (none when it had no members)
  std::vector<VoteAccumulator::Votes> votes;
  std::vector<MeanAccumulator> means;  ///< regression: the trajectory's running totals per set
  std::vector<double> tracked;         ///< regression: members × tracked values, this interval

  /// Message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(trajectory, last_loss, members, diverged_step, votes, means, tracked);
  }
  void save(ByteWriter& w) const;
  /// Reads what save wrote, checking the shapes.
  static EnsemblePartial load(ByteReader& r, const EnsembleShape& shape);
};

/// Rank 0's running ensemble.
class PooledEnsemble {
 public:
  PooledEnsemble() = default;
  /// `first_tracked`: the index of the first member whose tracked predictions this ensemble
  /// receives, per trajectory (a later simmering stage's members follow the earlier stages').
  PooledEnsemble(EnsembleShape shape, std::int64_t trajectories, std::int64_t first_tracked = 0);

  /// One gather: every trajectory's partial, in trajectory order (slot t = trajectory t).
  void merge(const std::vector<EnsemblePartial>& partials);

  [[nodiscard]] const VoteAccumulator& votes(std::size_t set) const { return votes_[set]; }
  [[nodiscard]] const MeanAccumulator& means(std::size_t set) const { return means_[set]; }
  [[nodiscard]] std::int64_t members(std::size_t set) const;
  /// Regression: each trajectory's running totals on evaluation set `set`, in trajectory order
  /// (the predictive mixture's components; a trajectory without members of this ensemble has none).
  [[nodiscard]] std::vector<MeanAccumulator> trajectory_means(std::size_t set) const;
  /// Mean of the trajectories' last training losses (NaN before the first gather).
  [[nodiscard]] double mean_train_loss() const { return mean_train_loss_; }
  [[nodiscard]] const std::vector<std::int64_t>& diverged_at() const { return diverged_at_; }

  /// Regression's tracked predictions of the last gather, as (trajectory, first member, count)
  /// blocks with their rows back to back (what /ensemble/test/tracked is written from).
  struct TrackedBlock {
    std::int64_t trajectory, first, count;
  };
  [[nodiscard]] const std::vector<TrackedBlock>& tracked_blocks() const { return tracked_blocks_; }
  [[nodiscard]] const std::vector<double>& tracked_rows() const { return tracked_rows_; }

  /// What a checkpoint must keep (core/visit.hpp; the regression means are rebuilt from the
  /// trajectories' running totals at the next gather, so they are not part of it). Loading keeps
  /// the constructed shapes and trajectory count.
  template <class Ar>
  void fields(Ar& ar) {
    ar(fixed(votes_), fixed(diverged_at_), fixed(tracked_written_), mean_train_loss_);
  }
  void save(ByteWriter& w) const;
  void load(ByteReader& r);

 private:
  EnsembleShape shape_;
  std::int64_t trajectories_ = 0;
  std::vector<VoteAccumulator> votes_;
  std::vector<MeanAccumulator> means_;
  std::vector<std::vector<MeanAccumulator>> per_trajectory_;  ///< [trajectory][set], regression
  std::vector<std::int64_t> diverged_at_;
  std::vector<std::int64_t> tracked_written_;
  std::vector<TrackedBlock> tracked_blocks_;
  std::vector<double> tracked_rows_;
  double mean_train_loss_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace simmer::ensemble
