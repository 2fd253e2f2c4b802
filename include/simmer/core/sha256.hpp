#pragma once
/// \file
/// SHA-256 (FIPS 180-4) of bytes and of files, for the fingerprints that bind a run to its input
/// files (a resume refuses changed data). A streaming hasher: a file is read in blocks, so a
/// HIGGS-sized CSV needs no more memory than a block.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace simmer {

class Sha256 {
 public:
  Sha256();
  void update(const unsigned char* data, std::size_t size);
  /// The digest as 64 lower-case hex digits (the hasher is spent afterwards).
  [[nodiscard]] std::string hex();

 private:
  void block(const unsigned char* p);
  std::array<std::uint32_t, 8> h_{};
  std::array<unsigned char, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t bytes_ = 0;
};

/// SHA-256 of a string's bytes, as hex.
std::string sha256_hex(const std::string& bytes);

/// A file's size and SHA-256; throws simmer::Error naming the path when it cannot be read.
struct FileFingerprint {
  std::int64_t size = 0;
  std::string sha256;
};
FileFingerprint fingerprint_file(const std::string& path);

}  // namespace simmer
