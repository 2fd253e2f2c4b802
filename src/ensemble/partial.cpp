#include "simmer/ensemble/partial.hpp"

#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::ensemble {
namespace {

using Votes = VoteAccumulator::Votes;

void save_means(ByteWriter& w, const MeanAccumulator& m) {
  w.i64(m.members());
  w.doubles(m.mean().data(), m.mean().size());
  w.doubles(m.m2().data(), m.m2().size());
}

MeanAccumulator load_means(ByteReader& r, Index rows, Index cols) {
  const auto members = r.i64();
  const auto mean = r.doubles();
  const auto m2 = r.doubles();
  if (static_cast<Index>(mean.size()) != rows * cols || m2.size() != mean.size()) {
    throw Error("ensemble partial: running means have the wrong shape");
  }
  MeanAccumulator m(rows, cols);
  m.restore(members, Eigen::Map<const Matrix>(mean.data(), rows, cols),
            Eigen::Map<const Matrix>(m2.data(), rows, cols));
  return m;
}

}  // namespace

void EnsemblePartial::save(ByteWriter& w) const {
  w.i64(trajectory);
  w.f64(last_loss);
  w.i64(members);
  w.i64(diverged_step);
  w.i64(static_cast<std::int64_t>(votes.size()));
  for (const auto& v : votes) w.ints(std::vector<std::int64_t>(v.data(), v.data() + v.size()));
  w.i64(static_cast<std::int64_t>(means.size()));
  for (const auto& m : means) save_means(w, m);
  w.vec(tracked);
}

EnsemblePartial EnsemblePartial::load(ByteReader& r, const EnsembleShape& shape) {
  EnsemblePartial p;
  p.trajectory = r.i64();
  p.last_loss = r.f64();
  p.members = r.i64();
  p.diverged_step = r.i64();
  const auto n_votes = static_cast<std::size_t>(r.i64());
  // No vote tables: an interval without members (nothing to add).
  const bool none = n_votes == 0 && p.members == 0;
  if (n_votes != (shape.classification ? shape.rows.size() : 0) && !none) throw Error("ensemble partial: vote tables");
  for (std::size_t s = 0; s < n_votes; ++s) {
    const auto flat = r.ints();
    if (static_cast<Index>(flat.size()) != shape.rows[s] * shape.classes) throw Error("ensemble partial: vote shape");
    p.votes.emplace_back(Eigen::Map<const Votes>(flat.data(), shape.rows[s], shape.classes));
  }
  const auto n_means = static_cast<std::size_t>(r.i64());
  if (n_means != (shape.classification ? 0 : shape.rows.size())) throw Error("ensemble partial: running means");
  for (std::size_t s = 0; s < n_means; ++s) p.means.push_back(load_means(r, shape.rows[s], shape.outputs));
  p.tracked = r.doubles();
  if (shape.tracked > 0 && static_cast<std::int64_t>(p.tracked.size()) != p.members * shape.tracked) {
    throw Error("ensemble partial: tracked predictions do not match the member count");
  }
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

void PooledEnsemble::save(ByteWriter& w) const {
  for (const auto& v : votes_) {
    w.i64(v.members());
    w.ints(std::vector<std::int64_t>(v.votes().data(), v.votes().data() + v.votes().size()));
  }
  w.ints(diverged_at_);
  w.ints(tracked_written_);
  w.f64(mean_train_loss_);
}

void PooledEnsemble::load(ByteReader& r) {
  for (std::size_t s = 0; s < votes_.size(); ++s) {
    const auto members = r.i64();
    const auto flat = r.ints();
    if (static_cast<Index>(flat.size()) != shape_.rows[s] * shape_.classes) throw Error("vote table shape differs");
    votes_[s] = VoteAccumulator(shape_.rows[s], shape_.classes);
    votes_[s].add_votes(Eigen::Map<const Votes>(flat.data(), shape_.rows[s], shape_.classes), members);
  }
  diverged_at_ = r.ints();
  tracked_written_ = r.ints();
  if (static_cast<std::int64_t>(diverged_at_.size()) != trajectories_ ||
      static_cast<std::int64_t>(tracked_written_.size()) != trajectories_) {
    throw Error("the trajectory count differs");
  }
  mean_train_loss_ = r.f64();
}

}  // namespace simmer::ensemble
