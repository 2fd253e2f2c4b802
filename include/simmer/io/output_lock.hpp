#pragma once
/// \file
/// One run per output: an advisory lock (flock) on `<archive>.lock`, held by rank 0 for the
/// run's lifetime and released by the kernel when the process ends however it ends, so a crash
/// leaves no stale lock. The file names its holder (host and pid) for the refusal message. Works
/// where flock does (local file systems; some network file systems ignore it).

#include <string>

namespace simmer::io {

class OutputLock {
 public:
  /// Takes the lock of `archive` or throws simmer::Error naming the archive and the holder.
  static OutputLock acquire(const std::string& archive);
  OutputLock() = default;
  ~OutputLock();
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  /// Releases the lock and removes the lock file (what a finished run does).
  void release();

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace simmer::io
