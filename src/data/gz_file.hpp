#pragma once
/// \file
/// Internal to src/data: reading plain or gzip files through zlib (gzopen reads a plain file
/// transparently), with errors that name the file. Used by the IDX and HIGGS readers.

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "simmer/core/error.hpp"

namespace simmer::data::detail {

using GzFile = std::unique_ptr<gzFile_s, int (*)(gzFile)>;

/// The reason zlib gives for the last failure, without the "<path>: " prefix zlib adds.
inline std::string gz_reason(gzFile file, const std::string& path) {
  int code = Z_OK;
  const char* message = gzerror(file, &code);
  if (code == Z_ERRNO) return std::strerror(errno);
  std::string reason = message != nullptr ? message : "unknown zlib error";
  const std::string prefix = path + ": ";
  if (reason.starts_with(prefix)) reason.erase(0, prefix.size());
  return reason;
}

/// Opens `path` for reading (plain or gzip) with a 128 kB buffer; throws simmer::Error naming
/// the file when it is a directory or cannot be opened.
inline GzFile open_gz(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(path + ": cannot open file: it is a directory");
  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"), &gzclose);
  if (!file) {
    throw Error(path + ": cannot open file: " + (errno != 0 ? std::strerror(errno) : "out of memory in zlib"));
  }
  gzbuffer(file.get(), 1U << 17);
  return file;
}

}  // namespace simmer::data::detail
