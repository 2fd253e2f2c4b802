#include "simmer/io/output_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "simmer/core/error.hpp"

namespace simmer::io {

OutputLock OutputLock::acquire(const std::string& archive) {
  OutputLock lock;
  lock.path_ = archive + ".lock";
  lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0) {
    throw Error("run.output '" + archive + "': cannot create its lock file '" + lock.path_ +
                "': " + std::strerror(errno));
  }
  if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    char holder[256] = {};
    const ssize_t n = ::pread(lock.fd_, holder, sizeof holder - 1, 0);
    std::string who = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : std::string("another process");
    while (!who.empty() && (who.back() == '\n' || who.back() == '\0')) who.pop_back();
    ::close(lock.fd_);
    lock.fd_ = -1;
    throw Error("run.output '" + archive + "' is in use by another run (" + who + ", lock '" + lock.path_ +
                "'); wait for it or choose another output");
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string me = "host " + std::string(host) + ", pid " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock.fd_, 0) == 0) {
    const ssize_t written = ::pwrite(lock.fd_, me.data(), me.size(), 0);
    (void)written;  // the holder's name is informative only
  }
  return lock;
}

LockHolder OutputLock::holder(const std::string& archive) {
  LockHolder h;
  const int fd = ::open((archive + ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return h;
  char text[256] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  ::close(fd);
  // "host NAME, pid 123\n", as acquire() writes it.
  const std::string line = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string();
  const auto comma = line.find(", pid ");
  if (line.rfind("host ", 0) != 0 || comma == std::string::npos) {
    h.state = LockHolder::State::elsewhere;  // unreadable: whose it is cannot be told (host left empty)
    return h;
  }
  h.host = line.substr(5, comma - 5);
  h.pid = std::strtol(line.c_str() + comma + 6, nullptr, 10);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  if (h.host != host || h.pid <= 0) {
    h.state = LockHolder::State::elsewhere;
  } else {
    // Signal 0 only asks whether the process exists (EPERM: it does, as another user).
    h.state = ::kill(static_cast<pid_t>(h.pid), 0) == 0 || errno == EPERM ? LockHolder::State::running
                                                                          : LockHolder::State::gone;
  }
  return h;
}

OutputLock::~OutputLock() {
  if (guard_fd_ >= 0) ::close(guard_fd_);
  if (fd_ >= 0) ::close(fd_);  // the kernel releases the flock with the last descriptor
}

OutputLock::OutputLock(OutputLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), guard_fd_(std::exchange(other.guard_fd_, -1)), path_(std::move(other.path_)) {}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    if (guard_fd_ >= 0) ::close(guard_fd_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    guard_fd_ = std::exchange(other.guard_fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

namespace {

/// Whether a flock on a file at `path` stays apart from the byte-range (fcntl) locks MPI-IO
/// takes: true on the local file systems Linux implements flock for natively; false on NFS,
/// CIFS, Lustre, GPFS and the like (flock emulated with, or mapped onto, byte-range locks).
bool flock_is_native(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53UL:      // ext2/3/4
    case 0x58465342UL:  // xfs
    case 0x9123683EUL:  // btrfs
    case 0x01021994UL:  // tmpfs
    case 0x794C7630UL:  // overlayfs
    case 0x2FC12FC1UL:  // zfs
    case 0xF2F52010UL:  // f2fs
      return true;
    default:
      return false;
  }
}

}  // namespace

void OutputLock::guard(const std::string& archive, bool resuming) {
  if (guard_fd_ >= 0) ::close(guard_fd_);  // a file replaced since (--overwrite): guard the new one
  guard_fd_ = -1;
  if (!flock_is_native(archive)) return;
  const int fd = ::open(archive.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // the run's own open reports a missing archive
  if (resuming) {
    // A reader (h5py, xarray) may hold a shared HDF5 file lock for a moment: try for a second.
    bool alone = false;
    for (int attempt = 0; attempt < 10 && !alone; ++attempt) {
      alone = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
      if (!alone && errno != EWOULDBLOCK) {  // not supported here: the lock file alone guards
        ::close(fd);
        return;
      }
      if (!alone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!alone) {
      ::close(fd);
      throw Error("run.output '" + archive + "' is open in another process: a run writing it (whose lock file '" +
                  path_ + "' was deleted), or a reader such as h5py; try again when that process has ended");
    }
  }
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {  // from exclusive: a conversion, never refused
    ::close(fd);
    return;
  }
  guard_fd_ = fd;
}

std::string OutputLock::lost() const {
  if (fd_ < 0) return "";
  struct stat held {
  }, named{};
  if (::fstat(fd_, &held) != 0) return "its lock could not be checked (" + std::string(std::strerror(errno)) + ")";
  if (::stat(path_.c_str(), &named) != 0) {
    return "its lock file '" + path_ + "' was deleted, so another run could take the output";
  }
  if (held.st_dev != named.st_dev || held.st_ino != named.st_ino) {
    return "its lock file '" + path_ + "' was replaced, so another run could take the output";
  }
  return "";
}

OutputWatch::OutputWatch(std::string archive) : path_(std::move(archive)) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) throw Error("'" + path_ + "' cannot be watched: " + std::strerror(errno));
  device_ = static_cast<unsigned long long>(st.st_dev);
  inode_ = static_cast<unsigned long long>(st.st_ino);
}

std::string OutputWatch::changed() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return "the archive '" + path_ + "' was deleted while the run wrote it";
  if (static_cast<unsigned long long>(st.st_dev) != device_ || static_cast<unsigned long long>(st.st_ino) != inode_) {
    return "the archive '" + path_ + "' was replaced by another file while the run wrote it";
  }
  const auto size = static_cast<long long>(st.st_size);
  if (size < largest_) {
    return "the archive '" + path_ + "' shrank from " + std::to_string(largest_) + " to " + std::to_string(size) +
           " bytes while the run wrote it (truncated)";
  }
  largest_ = size;
  return "";
}

void OutputLock::release() {
  if (guard_fd_ >= 0) ::close(guard_fd_);
  guard_fd_ = -1;
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still holding it: a run waiting on the name finds none
  ::close(fd_);
  fd_ = -1;
}

}  // namespace simmer::io
