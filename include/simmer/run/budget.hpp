#pragma once
/// \file
/// What a run will need before it starts: the archive's size on disk and the peak memory of
/// one rank, computed from the problem and the configuration alone (no MPI, no HDF5). simmer_mpi
/// prints this before any work and refuses a run whose archive and checkpoint do not fit in
/// the free space of the output's file system.
///
/// The figures are estimates of the dominant terms, not an accounting of every byte:
///  - archive: /posterior/params (trajectories x stored draws x parameters x 4 or 8 bytes), the
///    start, baseline and Adam-end parameter rows, sample statistics, traces, tracked
///    predictions, the data sets and the ensemble aggregates (HDF5 metadata is a few hundred kB);
///  - checkpoint: the file written next to the archive (per trajectory: parameters, velocities,
///    baseline, running means); it stays after the run (a finished run can be resumed to a
///    longer one), and while a new one replaces it both exist, so the room check counts two;
///  - memory per rank: per trajectory it owns, the network's parameters and gradient, the
///    integrator's and Adam's state, every layer's activations and deltas for the largest
///    evaluation set and the layers' scratch; the stored members it keeps between two gathers;
///    the data sets (every rank holds them); on rank 0 the gathered checkpoint. Plus a fixed
///    allowance for the MPI and HDF5 libraries (measured: see docs/RESULTS.md, "Memory and storage").

#include <cstdint>
#include <string>

#include "simmer/run/problem.hpp"

namespace simmer::run {

struct ResourceEstimate {
  std::int64_t parameters = 0;
  std::int64_t trajectories = 0;
  std::int64_t trajectories_per_rank = 0;  ///< the most any rank owns
  std::int64_t members_per_trajectory = 0;
  std::int64_t stored_per_trajectory = 0;  ///< draws in /posterior/params
  std::int64_t store_every = 1;
  std::int64_t stored_per_gather = 0;  ///< the most stored members one trajectory buffers
  std::int64_t archive_bytes = 0;
  std::int64_t posterior_bytes = 0;  ///< of which /posterior/params
  std::int64_t checkpoint_bytes = 0;
  std::int64_t peak_rank_bytes = 0;    ///< the busiest rank (rank 0 when it gathers more)
  std::int64_t worker_rank_bytes = 0;  ///< a rank other than 0
  std::int64_t root_rank_bytes = 0;    ///< rank 0 (it also gathers checkpoints and predictions)
  std::int64_t network_bytes = 0;      ///< of which one trajectory's network, optimiser and buffers
  std::int64_t buffer_bytes = 0;       ///< of which stored members between gathers (one rank)
};

/// The fixed allowance for the process itself (MPI, HDF5, code), in bytes.
inline constexpr std::int64_t kProcessBaseBytes = 96LL << 20;

ResourceEstimate estimate_resources(const Problem& problem, int world_size);

/// The memory a node offers this job: MemAvailable from /proc/meminfo, or the cgroup's limit
/// (what SLURM's --mem sets) less its usage when that is lower. bytes < 0: not readable here.
struct NodeMemory {
  std::int64_t bytes = -1;
  std::string source;  ///< "MemAvailable in /proc/meminfo", "cgroup memory.max", ...
};
NodeMemory node_memory();

/// The estimated peak memory of `ranks_on_node` ranks (rank 0 among them when `hosts_root`).
std::int64_t node_peak_bytes(const ResourceEstimate& e, int ranks_on_node, bool hosts_root);

/// Throws FieldError (RunOptions.memory_limit) naming the estimate, the limit and where it
/// came from, and the keys that shrink the run, when `need` exceeds `limit`.
void check_memory(const ResourceEstimate& e, std::int64_t need, int ranks_on_node, std::int64_t limit,
                  const std::string& limit_source, const std::string& limit_text);

/// "1.23 GB", "456 MB", "12 kB" (decimal units).
std::string human_bytes(std::int64_t bytes);

/// The estimate as the lines simmer_mpi prints before a run.
std::string describe(const ResourceEstimate& e);

/// Free bytes for an unprivileged writer on the file system holding `directory`, or -1 when it
/// cannot be determined.
std::int64_t free_bytes(const std::string& directory);

/// Throws simmer::Error (naming run.output, both sizes and what to change) when the archive
/// and checkpoint need more than `available` bytes. available < 0 means unknown: no check.
void check_room(const ResourceEstimate& e, const std::string& output, std::int64_t available);

}  // namespace simmer::run
