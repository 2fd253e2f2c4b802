#pragma once
/// \file
/// The resume policy: whether a checkpoint may continue an archive, and the configuration the
/// continued run uses. The caller reads the files (app/simmer_mpi.cpp); this decides, so every
/// rule is testable without MPI, HDF5 or files.

#include <cstdint>
#include <string>

#include "simmer/cli/config.hpp"

namespace simmer::cli {

/// What the archive on disk says about its run (its root attributes and /config).
struct ArchiveSide {
  std::string path;
  std::string run_id;
  std::string status;
  std::int64_t generation = 0;  ///< the checkpoint generation it was last made durable for
  std::string config_ini;
};

/// What the checkpoint beside it says.
struct CheckpointSide {
  std::string path;
  std::string run_id;
  std::int64_t generation = 0;
  std::int64_t step = 0;
  std::string config_ini;
};

/// The invocation a `--resume` runs: the checkpoint's configuration, with the command line
/// (`argc`/`argv`) allowed to repeat it or change placement keys only (key_role), and
/// run.output the archive's path. Throws simmer::Error, naming both files, when the checkpoint
/// is another run's, stale, newer than the archive, the archive is finished, their
/// configurations differ, or the command line changes a key it may not (listing the keys).
Invocation resume_invocation(const ArchiveSide& archive, const CheckpointSide& checkpoint, int argc,
                             const char* const* argv);

}  // namespace simmer::cli
