#pragma once
/// \file
/// One run per output: an advisory lock (flock) on `<archive>.lock`, held by rank 0 for the
/// run's lifetime and released by the kernel when the process ends however it ends, so a crash
/// leaves no stale lock. The file names its holder (host and pid) for the refusal message. Works
/// where flock does (local file systems; some network file systems ignore it).

#include <string>

namespace simmer::io {

/// What the lock file of an archive says about its run (simmer_analyze summary of an archive
/// whose run has not ended): the holder's host and pid, and whether that process still runs.
struct LockHolder {
  enum class State { none, running, gone, elsewhere };
  State state = State::none;  ///< none: no lock file (the run ended, or never took one)
  std::string host;
  long pid = -1;
  /// "host h, pid 12": running (a process of that pid runs on this host), gone (none does), or
  /// elsewhere (another host: cannot tell).
  [[nodiscard]] std::string text() const { return "host " + host + ", pid " + std::to_string(pid); }
};

class OutputLock {
 public:
  /// Reads `<archive>.lock` without taking the lock. A process of the same pid on this host
  /// counts as the holder still running (a reused pid would fool it; a finished run removes
  /// the lock file, a killed one leaves it).
  static LockHolder holder(const std::string& archive);
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
  /// "" while this lock still guards its output; else why not: its lock file was deleted or
  /// replaced (then a second run could take a lock of the same name and run beside this one).
  [[nodiscard]] std::string lost() const;
  /// Takes the archive's own guard, a shared flock on the archive file itself, held with the
  /// lock: a lock file can be deleted under a running run, its archive cannot be replaced without
  /// the run noticing (OutputWatch). `resuming`: first tests that no other process holds the
  /// archive (an exclusive flock, tried for about a second), and throws simmer::Error naming it
  /// when one does: a run whose lock file was deleted still guards its archive. Skipped where
  /// flock on the archive could meet the MPI-IO layer's own byte-range locks (network file
  /// systems, where flock is emulated with them) or is not supported: there the lock file alone
  /// guards the output. Called again, guards the file now at `archive` (one --overwrite made).
  void guard(const std::string& archive, bool resuming);

 private:
  int fd_ = -1;
  int guard_fd_ = -1;  ///< the archive itself, flock'ed shared (-1: no guard)
  std::string path_;
};

/// The output file a run created (rank 0), watched so the run notices when the archive at its
/// path is deleted or replaced while it writes (its writes would go to a file nobody can see).
class OutputWatch {
 public:
  /// Remembers the device and inode of `archive` (which must exist).
  explicit OutputWatch(std::string archive);
  /// "" while `archive` is still the file the run created, no smaller than it has been (an
  /// HDF5 file a run writes only grows); else what happened to it.
  [[nodiscard]] std::string changed();

 private:
  std::string path_;
  unsigned long long device_ = 0, inode_ = 0;
  long long largest_ = 0;  ///< the largest size seen
};

}  // namespace simmer::io
