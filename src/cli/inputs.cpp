#include "simmer/cli/inputs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "simmer/cli/problem.hpp"
#include "simmer/core/error.hpp"
#include "simmer/core/files.hpp"
#include "simmer/core/sha256.hpp"

namespace simmer::cli {

namespace {

/// Every file `inv` reads, as (key, path).
std::vector<std::pair<std::string, std::string>> files_of(const Invocation& inv) {
  auto files = input_files(inv.config);
  if (!inv.config_path.empty()) files.emplace_back("--config", inv.config_path);
  return files;
}

/// The file named `key` in `f`, or nullptr.
const InputFile* find(const InputFingerprints& f, const std::string& key) {
  for (const InputFile& file : f.files) {
    if (file.key == key) return &file;
  }
  return nullptr;
}

}  // namespace

InputFingerprints InputFingerprints::of(const Invocation& inv) {
  InputFingerprints out;
  for (const auto& [key, path] : files_of(inv)) {
    const FileFingerprint f = fingerprint_file(path);
    out.files.push_back({key, path, f.size, f.sha256});
  }
  return out;
}

std::string InputFingerprints::text() const {
  std::string text;
  for (const InputFile& f : files)
    text += f.key + "\t" + f.path + "\t" + std::to_string(f.size) + "\t" + f.sha256 + "\n";
  return text;
}

InputFingerprints InputFingerprints::parse(const std::string& text) {
  InputFingerprints out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    InputFile f;
    std::string size;
    std::getline(fields, f.key, '\t');
    std::getline(fields, f.path, '\t');
    std::getline(fields, size, '\t');
    std::getline(fields, f.sha256, '\t');
    try {
      f.size = std::stoll(size);
    } catch (const std::exception&) {
      throw Error("input fingerprints: the line '" + line + "' has no size");
    }
    out.files.push_back(std::move(f));
  }
  return out;
}

void InputFingerprints::check_resume(const InputFingerprints& now, const std::string& checkpoint) const {
  for (const InputFile& was : files) {
    if (was.key == "--config") continue;
    const InputFile* is = find(now, was.key);
    if (is == nullptr) {
      throw Error("--resume: the run read '" + was.path + "' (" + was.key +
                  ") when it began, and reads no such file now");
    }
    if (was.size != is->size || was.sha256 != is->sha256) {
      throw Error("--resume: the input file '" + is->path + "' (" + was.key + ") is not the one the run began with ('" +
                  was.path + "', recorded in '" + checkpoint + "'): size " + std::to_string(was.size) + " -> " +
                  std::to_string(is->size) + " bytes, sha256 " + was.sha256.substr(0, 16) + "... -> " +
                  is->sha256.substr(0, 16) +
                  "...; the archive's /data and the checkpoint came from the old contents: resume with the original "
                  "file (--data.path may name where it is now), or run again");
    }
  }
  for (const InputFile& is : now.files) {
    if (is.key != "--config" && find(*this, is.key) == nullptr) {
      throw Error("--resume: the run now reads '" + is.path + "' (" + is.key +
                  "), which it did not read when it began");
    }
  }
}

void check_output(const Invocation& inv) {
  namespace fs = std::filesystem;
  const fs::path out(inv.config.run.output);
  // simmer's own files: another run's checkpoint (and its temporary file) or lock, an analysis
  // command's temporary output. --overwrite on one of them deleted a live run's checkpoint.
  const std::string_view own = own_file_suffix(inv.config.run.output);
  if (!own.empty()) {
    throw option_error("run.output", inv.config.run.output,
                       "ends in " + std::string(own) +
                           ", the name of simmer's own files (a run's checkpoint or its temporary file, a run's "
                           "lock, an analysis command's temporary output); choose an archive name (.h5)");
  }
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  if (!fs::is_directory(dir)) {
    // One missing level is made (runs/ on a fresh checkout); a longer missing path is more
    // likely a typo than a wish.
    const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
    std::error_code ec;
    if (fs::exists(dir, ec) || !fs::is_directory(parent, ec)) {
      throw option_error("run.output", out.string(),
                         "its directory '" + dir.string() + "' does not exist" +
                             (fs::exists(dir, ec) ? " as a directory" : " (nor its parent '" + parent.string() + "')"));
    }
    if (!fs::create_directory(dir, ec) && !fs::is_directory(dir)) {
      throw option_error("run.output", out.string(),
                         "its directory '" + dir.string() + "' could not be created (" + ec.message() + ")");
    }
    std::cout << "created the output's directory '" << dir.string() << "'\n";
  }
  // access(W_OK) says yes to root everywhere (even /proc): create and remove a probe file.
  const fs::path probe = dir / (".simmer_write_probe_" + std::to_string(getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    throw option_error("run.output", out.string(),
                       "its directory '" + dir.string() + "' is not writable (" + std::strerror(errno) + ")");
  }
  ::close(fd);
  fs::remove(probe);
  std::error_code ec;
  const auto status = fs::status(out, ec);
  if (fs::is_directory(status)) throw option_error("run.output", out.string(), "is a directory; name a file in it");
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    throw option_error("run.output", out.string(), "is not a regular file (a device, pipe or socket); name a file");
  }
  if (fs::exists(status) && !inv.overwrite) {
    throw option_error("run.output", out.string(), "exists; pass --overwrite to replace it");
  }
}

void check_not_an_input(const Invocation& inv) {
  const std::string& out = inv.config.run.output;
  for (const auto& [key, path] : files_of(inv)) {
    if (same_file(out, path)) {
      throw option_error("run.output", out,
                         "is the run's own input (" + key + " '" + path + "'); choose another output");
    }
    for (const Companion& c : kArchiveCompanions) {
      const std::string file = out + c.suffix;
      if (!same_file(file, path)) continue;
      throw option_error(key, path,
                         "is the output's " + std::string(c.what) + " '" + file + "' (run.output '" + out +
                             "'), which the run writes and removes; choose another output");
    }
  }
}

}  // namespace simmer::cli
