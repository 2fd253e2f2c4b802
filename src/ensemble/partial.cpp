#include "simmer/ensemble/partial.hpp"

#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::ensemble {

void EnsemblePartial::save(ByteWriter& w) const { save_fields(w, *this); }

EnsemblePartial EnsemblePartial::load(ByteReader& r, const EnsembleShape& shape) {
  EnsemblePartial p;
  Loader ar(r);
  ar(p);
  // No vote tables: an interval without members (nothing to add).
  const bool none = p.votes.empty() && p.members == 0;
  ar.require(p.votes.size() == (shape.classification ? shape.rows.size() : 0) || none, "ensemble partial: vote tables");
  for (std::size_t s = 0; s < p.votes.size(); ++s) {
    ar.require(p.votes[s].rows() == shape.rows[s] && p.votes[s].cols() == shape.classes,
               "ensemble partial: vote shape");
  }
  ar.require(p.means.size() == (shape.classification ? 0 : shape.rows.size()), "ensemble partial: running means");
  for (std::size_t s = 0; s < p.means.size(); ++s) {
    ar.require(p.means[s].mean().rows() == shape.rows[s] && p.means[s].mean().cols() == shape.outputs,
               "ensemble partial: running means have the wrong shape");
  }
  ar.require(shape.tracked == 0 || static_cast<std::int64_t>(p.tracked.size()) == p.members * shape.tracked,
             "ensemble partial: tracked predictions do not match the member count");
  return p;
}

PooledEnsemble::PooledEnsemble(EnsembleShape shape, std::int64_t trajectories, std::int64_t first_tracked)
    : shape_(std::move(shape)),
      trajectories_(trajectories),
      diverged_at_(static_cast<std::size_t>(trajectories), -1),
      tracked_written_(static_cast<std::size_t>(trajectories), first_tracked) {
  for (const Index rows : shape_.rows) {
    if (shape_.classification) {
      votes_.emplace_back(rows, shape_.classes);
    } else {
      means_.emplace_back(rows, shape_.outputs);
    }
  }
  if (!shape_.classification) {
    per_trajectory_.resize(static_cast<std::size_t>(trajectories));
    for (auto& sets : per_trajectory_) {
      for (const Index rows : shape_.rows) sets.emplace_back(rows, shape_.outputs);
    }
  }
}

std::int64_t PooledEnsemble::members(std::size_t set) const {
  return shape_.classification ? votes_[set].members() : means_[set].members();
}

void PooledEnsemble::merge(const std::vector<EnsemblePartial>& partials) {
  if (static_cast<std::int64_t>(partials.size()) != trajectories_) {
    throw Error("internal: a gather needs one partial per trajectory");
  }
  double loss_sum = 0.0;
  std::int64_t live = 0;
  tracked_blocks_.clear();
  tracked_rows_.clear();
  for (std::int64_t t = 0; t < trajectories_; ++t) {
    const EnsemblePartial& p = partials[static_cast<std::size_t>(t)];
    if (p.trajectory != t) throw Error("internal: partials out of trajectory order");
    const auto i = static_cast<std::size_t>(t);
    if (std::isfinite(p.last_loss)) {
      loss_sum += p.last_loss;
      ++live;
    }
    if (p.diverged_step >= 0 && diverged_at_[i] < 0) diverged_at_[i] = p.diverged_step;
    for (std::size_t s = 0; s < p.votes.size(); ++s) votes_[s].add_votes(p.votes[s], p.members);
    for (std::size_t s = 0; s < p.means.size(); ++s) per_trajectory_[i][s] = p.means[s];
    if (shape_.tracked > 0 && p.members > 0) {
      tracked_blocks_.push_back({t, tracked_written_[i], p.members});
      tracked_rows_.insert(tracked_rows_.end(), p.tracked.begin(), p.tracked.end());
      tracked_written_[i] += p.members;
    }
  }
  mean_train_loss_ = live > 0 ? loss_sum / static_cast<double>(live) : std::numeric_limits<double>::quiet_NaN();
  // Regression: the ensemble is the trajectories' running totals merged in trajectory order.
  for (std::size_t s = 0; s < means_.size(); ++s) {
    means_[s].clear();
    for (const auto& sets : per_trajectory_) means_[s].merge(sets[s].members(), sets[s].mean(), sets[s].m2());
  }
}

void PooledEnsemble::save(ByteWriter& w) const { save_fields(w, *this); }

void PooledEnsemble::load(ByteReader& r) { load_fields(r, *this, Rest::not_last); }

std::vector<MeanAccumulator> PooledEnsemble::trajectory_means(std::size_t set) const {
  std::vector<MeanAccumulator> out;
  out.reserve(per_trajectory_.size());
  for (const auto& sets : per_trajectory_) out.push_back(sets.at(set));
  return out;
}

}  // namespace simmer::ensemble
