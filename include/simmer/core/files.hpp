#pragma once
/// \file
/// The files simmer keeps beside an archive, and file identity: what simmer_mpi's output checks
/// (cli/inputs) and simmer_analyze's output guard (posthoc) both refuse to write over.

#include <array>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace simmer {

/// A file a run keeps beside its archive ARCHIVE: ARCHIVE + suffix.
struct Companion {
  const char* suffix;
  const char* what;
};
inline constexpr std::array<Companion, 3> kArchiveCompanions{{
    {".ckpt", "checkpoint"},
    {".ckpt.tmp", "checkpoint's temporary file"},
    {".lock", "lock"},
}};
/// What simmer_analyze writes an output as until it is complete (posthoc::PartialOutput).
inline constexpr const char* kPartialSuffix = ".partial";

/// The suffix (".ckpt", ".ckpt.tmp", ".lock", ".partial") that makes `name` one of simmer's own
/// files, or "" when it is none.
inline std::string_view own_file_suffix(std::string_view name) {
  const auto ends = [&](std::string_view tail) {
    return name.size() >= tail.size() && name.substr(name.size() - tail.size()) == tail;
  };
  for (const Companion& c : kArchiveCompanions) {
    if (ends(c.suffix)) return c.suffix;
  }
  return ends(kPartialSuffix) ? kPartialSuffix : "";
}

/// Whether `a` and `b` name the same file: by identity where both exist (symlinks and hard links
/// resolved), else by their resolved names (../ and symlinked directories).
inline bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

}  // namespace simmer
