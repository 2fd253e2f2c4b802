#pragma once
/// \file
/// simmer_mpi's run: trajectories spread over ranks (trajectory i on rank i mod size), periodic
/// gathers of what they sampled to rank 0, which keeps the pooled ensemble, and one archive
/// written collectively with parallel HDF5. See ARCHITECTURE.md for the data flow.

#include <mpi.h>

#include <string>

#include "simmer/io/checkpoint_state.hpp"
#include "simmer/io/output_lock.hpp"
#include "simmer/run/problem.hpp"

namespace simmer::mpi {

/// Runs `problem` on `comm` (`command_line` is recorded as provenance). Collective; returns the
/// process exit code (0 done, 3 stopped by SIGTERM/SIGUSR1 after a checkpoint, 4 time step above
/// the stability limit). With `resume`, continues that checkpoint's run in the existing archive.
/// Prints progress and the final table on rank 0.
/// `lock` (rank 0's, or nullptr) guards the output: before every gather, checkpoint and the end
/// the run checks that it still holds it and that the archive at run.output is still the file it
/// writes, and otherwise stops with an error (exit 1), keeping its checkpoint.
int run(const run::Problem& problem, const std::string& command_line, MPI_Comm comm,
        const io::RunCheckpoint* resume = nullptr, const io::OutputLock* lock = nullptr);

/// This build's version (what archives and checkpoints record).
const char* simmer_version();

/// SIGTERM and SIGUSR1 set a flag the run polls every run.sync_every steps (all ranks agree).
void install_signal_handlers();

}  // namespace simmer::mpi
