// The resume policy (resume.hpp): a checkpoint continues its own archive with its own
// configuration, placement aside.
#include "simmer/cli/resume.hpp"

#include <string>

#include "simmer/core/error.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::cli {

Invocation resume_invocation(const ArchiveSide& archive, const CheckpointSide& checkpoint, int argc,
                             const char* const* argv) {
  // The checkpoint must be this archive's: the same run id, the same configuration (its
  // placement keys aside: the archive may have been moved, an earlier resume may have changed k).
  if (checkpoint.run_id != archive.run_id) {
    throw Error("--resume: '" + checkpoint.path + "' belongs to run " + checkpoint.run_id + " but '" + archive.path +
                "' is run " + (archive.run_id.empty() ? std::string("(none recorded)") : archive.run_id) +
                ": the checkpoint is another run's; refusing to mix them");
  }
  // The checkpoint must be the one the archive on disk was last made durable for (the same
  // generation), or the one before when the run was killed between the two writes: an archive
  // older than its checkpoint (a copy put back, lost writes) would be called complete with rows
  // never written; a checkpoint older than its archive is stale.
  if (run::layout::is_complete(archive.status)) {
    throw Error("--resume: '" + archive.path + "' is a finished run (status '" + archive.status + "'); '" +
                checkpoint.path + "' beside it is stale (a finished run removes its checkpoint): nothing to resume");
  }
  const std::string pair = " (generation " + std::to_string(checkpoint.generation) + ", step " +
                           std::to_string(checkpoint.step) + ") and '" + archive.path + "' (generation " +
                           std::to_string(archive.generation) + ")";
  if (checkpoint.generation > archive.generation) {
    throw Error("--resume: '" + archive.path + "' is older than its checkpoint '" + checkpoint.path + "'" + pair +
                ": the archive was replaced by an earlier copy or lost writes, and resuming would leave rows "
                "the checkpoint counts as written unwritten; resume the archive that belongs to this checkpoint, or "
                "run again");
  }
  if (checkpoint.generation + 1 < archive.generation) {
    throw Error("--resume: '" + checkpoint.path +
                "' is stale: an earlier checkpoint of this run than the archive has seen" + pair +
                "; resume with the run's last checkpoint, or run again");
  }
  // The checkpoint's configuration must be the archive's, placement aside (key_role).
  {
    std::string keys;
    try {
      Config in_checkpoint, in_archive;
      apply_ini(checkpoint.config_ini, checkpoint.path, in_checkpoint);
      apply_ini(archive.config_ini, archive.path + ":/config", in_archive);
      for (const auto& d : config_differences(in_checkpoint, in_archive, {KeyRole::placement})) {
        keys += "\n  " + d;
      }
    } catch (const std::exception&) {
      keys = "\n  (one of them cannot be read back)";
    }
    if (!keys.empty()) {
      throw Error("--resume: the configuration in '" + checkpoint.path + "' differs from the one in '" + archive.path +
                  "' (checkpoint vs archive):" + keys + "\nthe checkpoint is not this archive's");
    }
  }
  Config stored;
  apply_ini(checkpoint.config_ini, checkpoint.path, stored);
  Invocation again = parse_command_line(argc, argv, &stored);
  if (again.config.run.output != stored.run.output && again.config.run.output != archive.path) {
    throw Error("--resume: --output (or --run.output) '" + again.config.run.output +
                "' cannot be given with --resume: a run continues in the archive it was resumed from ('" +
                archive.path + "'); copy the archive and its checkpoint to the new place and resume the copy");
  }
  again.config.run.output = stored.run.output;  // (the archive's own path: set below)
  // More ranks per trajectory than the gradient's row blocks: the rules would name
  // run.gradient_chunks, a key the user never set (0 became the first run's ranks per trajectory).
  if (stored.run.gradient_chunks > 0 && again.config.run.ranks_per_trajectory > stored.run.gradient_chunks) {
    throw Error("--resume: run.ranks_per_trajectory = " + std::to_string(again.config.run.ranks_per_trajectory) +
                ": the run began with its gradient summed in run.gradient_chunks = " +
                std::to_string(stored.run.gradient_chunks) +
                " row block(s), which the bits of every step depend on and a resume cannot change; resume with "
                "run.ranks_per_trajectory at most " +
                std::to_string(stored.run.gradient_chunks) +
                " (a run that may need more ranks per trajectory later sets run.gradient_chunks to that number "
                "from its start)");
  }
  std::string differs;
  // Placement may change: how the run reports, how many ranks share a gradient, where the
  // input files are now (their contents are checked against the fingerprints).
  for (const auto& d : config_differences(stored, again.config, {KeyRole::placement})) {
    differs += "\n  " + d;
  }
  if (!differs.empty()) {
    throw Error("--resume: the configuration differs from the archived run's (archived vs now):" + differs +
                "\nresume without --config/overrides to continue the run as it was");
  }
  again.config.run.output = archive.path;  // the archive may have been moved since
  return again;
}

}  // namespace simmer::cli
