#pragma once
/// \file
/// simmer_mpi's run: trajectories spread over ranks (trajectory i on rank i mod size), periodic
/// gathers of what they sampled to rank 0, which keeps the running ensemble, and one archive
/// written collectively with parallel HDF5. See ARCHITECTURE.md for the data flow.

#include <mpi.h>

#include "simmer/app/problem.hpp"
#include "simmer/cli/config.hpp"

namespace simmer::mpi {

/// Runs the validated invocation on `comm`. Collective; returns the process exit code.
/// Prints progress and the final table on rank 0.
int run(const cli::Invocation& invocation, const app::Problem& problem, MPI_Comm comm);

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
