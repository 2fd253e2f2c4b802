#pragma once
/// \file
/// simmer_mpi's run: trajectories spread over ranks (trajectory i on rank i mod size), periodic
/// gathers of what they sampled to rank 0, which keeps the pooled ensemble, and one archive
/// written collectively with parallel HDF5. See ARCHITECTURE.md for the data flow.

#include <mpi.h>

#include <string>

#include "simmer/core/error.hpp"
#include "simmer/io/checkpoint_state.hpp"
#include "simmer/io/output_lock.hpp"
#include "simmer/run/problem.hpp"

namespace simmer::parallel {

/// Runs `problem` on `comm` (`command_line` is recorded as provenance). Collective; returns the
/// process exit code (0 done, kExitStopped, kExitUnstable, kExitDiverged). With `resume`, continues that checkpoint's
/// run in the existing archive. Prints progress and the final table on rank 0. `lock` (rank 0's, or nullptr) guards the
/// output: before every gather, checkpoint and the end the run checks that it still holds it and that the archive at
/// run.output is still the file it writes, and otherwise stops with an error (exit 1), keeping its checkpoint. Exit
/// codes of simmer_mpi beyond 0, 1 (a runtime error) and 2 (invalid input), documented in docs/RELIABILITY.md.
constexpr int kExitStopped = 3;   ///< SIGTERM/SIGUSR1 or run.max_hours: checkpointed, resume with --resume
constexpr int kExitUnstable = 4;  ///< time step above the leapfrog limit (stability_check = refuse)
constexpr int kExitDiverged = 5;  ///< complete, but trajectories diverged (stopped, or judged exploded)

/// The archive failed the read-back at the run's end, after it was marked finished: its
/// checkpoint (kept) cannot resume it, since a resume continues an archive that matches it.
class DamagedAtEnd : public Error {
 public:
  using Error::Error;
};

int run(run::Problem& problem, const std::string& command_line, MPI_Comm comm,
        const io::RunCheckpoint* resume = nullptr, io::OutputLock* lock = nullptr);

/// This build's version (what archives and checkpoints record).
const char* simmer_version();

/// SIGTERM and SIGUSR1 set a flag: the chains read it between steps, the ranks agree on it at
/// their next poll (ARCHITECTURE.md, signals).
void install_signal_handlers();

}  // namespace simmer::parallel
