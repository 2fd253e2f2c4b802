#pragma once
/// \file
/// simmer_mpi's run: trajectories spread over ranks (trajectory i on rank i mod size), periodic
/// gathers of what they sampled to rank 0, which keeps the running ensemble, and one archive
/// written collectively with parallel HDF5. See ARCHITECTURE.md for the data flow.

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "simmer/app/problem.hpp"
#include "simmer/cli/config.hpp"

namespace simmer::mpi {

/// Runs the validated invocation on `comm`. Collective; returns the process exit code (0 done,
/// 3 stopped by SIGTERM/SIGUSR1 after a checkpoint, 4 time step above the stability limit).
/// With `resume` (a checkpoint payload), continues that run in the existing archive.
/// Prints progress and the final table on rank 0.
int run(const cli::Invocation& invocation, const app::Problem& problem, MPI_Comm comm,
        const std::vector<unsigned char>* resume = nullptr);

/// This build's version (what archives and checkpoints record).
const char* simmer_version();

/// SIGTERM and SIGUSR1 set a flag the run polls every run.sync_every steps (all ranks agree).
void install_signal_handlers();

/// The configuration stored in a checkpoint payload, and the simmer version that wrote it.
struct CheckpointHeader {
  std::string version;
  std::string config_ini;
  std::int64_t step = 0;
};
CheckpointHeader read_checkpoint_header(const std::vector<unsigned char>& payload, const std::string& origin);

/// Runs `fn` on every rank; if it throws on any rank, every rank learns it, rank 0 (or the
/// lowest failing rank) prints "simmer_mpi: error: <message>" once, and all return false.
template <class Fn>
bool collective_try(MPI_Comm comm, Fn&& fn);

/// Implementation detail of collective_try.
bool agree_on_failure(MPI_Comm comm, bool failed, const std::string& message);

template <class Fn>
bool collective_try(MPI_Comm comm, Fn&& fn) {
  std::string message;
  bool failed = false;
  try {
    fn();
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  }
  return agree_on_failure(comm, failed, message);
}

}  // namespace simmer::mpi
