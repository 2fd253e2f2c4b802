#pragma once
/// \file
/// The run's input files and the policy around them: which files a run reads, their fingerprints
/// (size and SHA-256; kept in the archive's /config attribute `input_files` and in every
/// checkpoint), what a resume accepts of them, and which files a run may not write over.

#include <cstdint>
#include <string>
#include <vector>

#include "simmer/cli/config.hpp"

namespace simmer::cli {

/// One input file: the key that names it ("data.path", "data.path/<IDX file>",
/// "ensemble.points", or "--config" for the INI file), where it was read, its size and SHA-256.
struct InputFile {
  std::string key, path;
  std::int64_t size = 0;
  std::string sha256;
  /// Message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(key, path, size, sha256);
  }
};

/// Every input file of a run, in cli::input_files order and then the INI file.
struct InputFingerprints {
  std::vector<InputFile> files;
  template <class Ar>
  void fields(Ar& ar) {
    ar(files);
  }
  /// Reads every file `inv` names (cli::input_files, and --config's file when one was given).
  static InputFingerprints of(const Invocation& inv);
  /// The form the archive and the checkpoint keep: "key\tpath\tsize\tsha256" per line.
  [[nodiscard]] std::string text() const;
  /// What text() wrote (an empty text: no files).
  static InputFingerprints parse(const std::string& text);
  /// --resume, with `*this` recorded when the run began (in `checkpoint`) and `now` what the
  /// resumed run reads: every data file must hold what it held (a file moved and named again is
  /// fine when its contents are the same), no file may be missing or new. The INI file is not
  /// read again on a resume (the configuration comes from the checkpoint): its record is kept,
  /// not compared. Throws simmer::Error naming the key, both paths, sizes and hashes.
  void check_resume(const InputFingerprints& now, const std::string& checkpoint) const;
};

/// The output must not exist (unless --overwrite), must be a regular file's name, and its
/// directory must exist and be writable (tested by creating a probe file). Throws option_error
/// naming run.output.
void check_output(const Invocation& inv);

/// No file the run writes (the output, its checkpoint, the checkpoint's temporary file, the lock)
/// may be one of its inputs: by file identity where both exist, else by path. Throws
/// option_error naming the input's key (or run.output when the output is the input).
void check_not_an_input(const Invocation& inv);

}  // namespace simmer::cli
