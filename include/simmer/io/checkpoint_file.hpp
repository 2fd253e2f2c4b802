#pragma once
/// \file
/// Binary checkpoint files: a typed append-only byte buffer, written atomically (to a temporary
/// file, fsync, rename), with a magic header, a format version and an FNV-1a checksum, so a
/// crash while writing leaves the previous checkpoint intact and a damaged file is detected.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "simmer/core/bytes.hpp"

namespace simmer::io {

using ByteWriter = simmer::ByteWriter;
using ByteReader = simmer::ByteReader;

/// The checkpoint format's version, in every file's header; a file of another version is refused.
/// It changes whenever a checkpointed field list (a `fields` function, core/visit.hpp) does.
/// 3: the run id; 4: Adam-phase checkpoints; 5: simmering stages (ladders); 6: every saved struct
/// through its one field list (core/visit.hpp); 7: the chain's parameter masses and mass adaptation;
/// 8: replica exchange; 9: each member's entropy per row (classification, issue 26); 10: the
/// configuration a trajectory holds (replica exchange); 11: Adam's best iterate (adam.keep);
/// 12: the window's thermometers and the stage's time step (issue 29); 13: the noise sd
/// (simmer.noise_sd = auto); 14: the curvature masses' probe stream; 15: replica exchange's log
/// of every round's energies and swaps; 16: the content digest of each trajectory's stored draws;
/// 17: the same of its /trace rows; 18: the same of its tracked predictions; 19: the wall time of
/// the segments before it.
inline constexpr std::uint32_t kCheckpointFormat = 19;

/// 64-bit FNV-1a.
std::uint64_t fnv1a(const unsigned char* data, std::size_t size);

/// Writes magic + version + payload size + checksum + payload to `path` atomically.
void write_checkpoint_file(const std::string& path, const std::vector<unsigned char>& payload);

/// Reads and verifies a file written by write_checkpoint_file; returns the payload. Errors
/// name the path and what is wrong (missing, not a checkpoint, other format version, damaged).
std::vector<unsigned char> read_checkpoint_file(const std::string& path);

}  // namespace simmer::io
