#pragma once
/// \file
/// A run's checkpoint as one struct whose one field list (`fields`, core/visit.hpp) is both
/// saved and loaded, so a field cannot be written and forgotten on the way back. The trajectories'
/// own states are opaque blocks (run::Chain::save), as is rank 0's pooled ensemble
/// (ensemble::PooledEnsemble::save). The file is written atomically with a checksum
/// (io/checkpoint_file).

#include <cstdint>
#include <string>
#include <vector>

#include "simmer/core/visit.hpp"

namespace simmer::io {

struct RunCheckpoint {
  std::string run_id;      ///< the run's identity (the archive's root attribute run_id)
  std::string version;     ///< the simmer version that wrote it
  std::string config_ini;  ///< the run's effective configuration (a resume must match it)
  std::int64_t step = 0;   ///< simmering steps completed
  /// A retrofit's checkpoint taken during Adam: its epochs completed (step is 0 then); -1 once
  /// simmering has started.
  std::int64_t adam_epoch = -1;
  [[nodiscard]] bool in_adam() const { return adam_epoch >= 0; }
  std::int64_t trajectories = 0;
  /// The archive and the checkpoint share it: each checkpoint of a run has the next number, and
  /// the archive's root attribute `checkpoint_generation` is set to it (and the archive flushed,
  /// which syncs it to disk) before the checkpoint is written; --resume accepts only the pair
  /// whose numbers match (or an archive one ahead: written, then killed before its checkpoint).
  std::int64_t generation = 0;
  /// The input files' fingerprints when the run began ("key\tpath\tsize\tsha256" lines): a resume
  /// refuses data that changed since (run::Problem::input_fingerprints).
  std::string inputs;
  std::vector<unsigned char> pooled;               ///< rank 0's pooled ensembles
  std::vector<std::vector<unsigned char>> chains;  ///< each trajectory's state, in trajectory order
  std::vector<unsigned char> exchange;             ///< replica exchange's state (run::ReplicaSets; empty: none)
  /// The noise sd in force and its source (run::Problem::noise_sd): after Adam, what
  /// simmer.noise_sd = auto measured (0 before: a resume in Adam measures it again).
  double noise_sd = 0.0;
  std::string noise_sd_source;
  /// The run's wall time until this checkpoint, over every segment it ran in (a resume starts
  /// from it, so a resumed run's /wall_seconds is the sum of its segments' work).
  double wall_seconds = 0.0;

  /// Checkpoint fields (core/visit.hpp); loading checks them against each other.
  template <class Ar>
  void fields(Ar& ar) {
    ar(run_id, version, config_ini, step, adam_epoch, trajectories, generation, inputs, pooled, chains, exchange,
       noise_sd, noise_sd_source, wall_seconds);
    ar.require(wall_seconds >= 0.0, "negative wall time");
    ar.require(adam_epoch < 0 || step == 0, "an Adam-phase checkpoint at a simmering step");
    ar.require(trajectories >= 0, "negative trajectory count");
    ar.require(generation >= 1, "generation " + std::to_string(generation) + " out of range");
    ar.require(static_cast<std::int64_t>(chains.size()) == trajectories,
               "the trajectory count differs from the states it holds");
  }
};

/// The checkpoint as a payload (what save_checkpoint writes), and back. `origin` names the
/// source in errors.
std::vector<unsigned char> encode_checkpoint(const RunCheckpoint& c);
RunCheckpoint decode_checkpoint(const std::vector<unsigned char>& payload, const std::string& origin);

/// Written to `path` atomically (temporary file, fsync, rename) with magic, format
/// (io::kCheckpointFormat) and checksum; read back verified. Errors name the path; a checkpoint
/// of another format is refused, naming its format and this simmer's.
void save_checkpoint(const std::string& path, const RunCheckpoint& c);
RunCheckpoint load_checkpoint(const std::string& path);

}  // namespace simmer::io
