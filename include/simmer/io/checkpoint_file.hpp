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

/// 64-bit FNV-1a.
std::uint64_t fnv1a(const unsigned char* data, std::size_t size);

/// Writes magic + version + payload size + checksum + payload to `path` atomically.
void write_checkpoint_file(const std::string& path, const std::vector<unsigned char>& payload);

/// Reads and verifies a file written by write_checkpoint_file; returns the payload. Errors
/// name the path and what is wrong (missing, not a checkpoint, other format version, damaged).
std::vector<unsigned char> read_checkpoint_file(const std::string& path);

}  // namespace simmer::io
