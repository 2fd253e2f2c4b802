#pragma once
/// \file
/// FNV-1a, 64 bits, continued over any number of byte ranges: the checkpoint file's checksum
/// (io/checkpoint_file) and the archive's content digest of each trajectory's stored draws
/// (/checksums/draws, which sees what a chunk's own Fletcher-32 does not: a chunk zeroed with
/// its checksum).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace simmer {

struct Fnv1a {
  std::uint64_t value = 14695981039346656037ULL;  ///< the offset basis: the digest of nothing

  /// Continues the digest over `bytes` bytes at `data`.
  void add(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) {
      value ^= p[i];
      value *= 1099511628211ULL;
    }
  }
  /// The digest as 16 lower-case hex digits.
  [[nodiscard]] std::string hex() const {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
  }
};

}  // namespace simmer
