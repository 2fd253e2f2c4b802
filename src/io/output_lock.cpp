#include "simmer/io/output_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
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

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);  // the kernel releases the flock with the last descriptor
}

OutputLock::OutputLock(OutputLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

void OutputLock::release() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still holding it: a run waiting on the name finds none
  ::close(fd_);
  fd_ = -1;
}

}  // namespace simmer::io
