#include "simmer/io/checkpoint_file.hpp"

#include "simmer/core/digest.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace simmer::io {
namespace {
constexpr char kMagic[8] = {'S', 'I', 'M', 'M', 'E', 'R', 'C', 'K'};
}  // namespace

std::uint64_t fnv1a(const unsigned char* data, std::size_t size) {
  Fnv1a h;
  h.add(data, size);
  return h.value;
}

void write_checkpoint_file(const std::string& path, const std::vector<unsigned char>& payload) {
  ByteWriter header;
  for (const char c : kMagic) header.pod(c);
  header.pod(kCheckpointFormat);
  header.i64(static_cast<std::int64_t>(payload.size()));
  header.pod(fnv1a(payload.data(), payload.size()));
  const std::string tmp = path + ".tmp";
  // Any failure removes the partial .tmp: the previous checkpoint stays the one to resume.
  const auto fail = [&](const std::string& what, int err) {
    std::remove(tmp.c_str());
    throw Error("checkpoint: " + what + " failed: " + std::strerror(err) + " (the previous checkpoint '" + path +
                "', if any, is intact)");
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail("creating '" + tmp + "'", errno);
  const auto write_all = [&](const std::vector<unsigned char>& b) {
    std::size_t done = 0;
    while (done < b.size()) {
      const ssize_t w = ::write(fd, b.data() + done, b.size() - done);
      if (w < 0) {
        const int err = errno;
        ::close(fd);
        fail("writing '" + tmp + "'", err);
      }
      done += static_cast<std::size_t>(w);
    }
  };
  write_all(header.bytes());
  write_all(payload);
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("flushing '" + tmp + "'", err);
  }
  if (::close(fd) != 0) fail("closing '" + tmp + "'", errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("renaming '" + tmp + "' to '" + path + "'", errno);
}

std::vector<unsigned char> read_checkpoint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("no checkpoint '" + path + "' (" + std::strerror(errno) + ")");
  std::vector<unsigned char> all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ByteReader r(all.data(), all.size(), path);
  char magic[8];
  for (char& c : magic) c = r.pod<char>();
  if (std::memcmp(magic, kMagic, 8) != 0) throw Error("'" + path + "' is not a simmer checkpoint");
  const auto format = r.pod<std::uint32_t>();
  if (format != kCheckpointFormat) {
    throw Error("checkpoint '" + path + "' has format version " + std::to_string(format) +
                "; this simmer reads version " + std::to_string(kCheckpointFormat) + " only (" +
                (format < kCheckpointFormat ? "written by an older simmer" : "written by a newer simmer") +
                ": resume it with the simmer that wrote it, or start the run again)");
  }
  const auto size = static_cast<std::size_t>(r.i64());
  const auto sum = r.pod<std::uint64_t>();
  const std::size_t header = 8 + 4 + 8 + 8;
  if (all.size() != header + size) throw Error("checkpoint '" + path + "' is truncated");
  std::vector<unsigned char> payload(all.begin() + static_cast<std::ptrdiff_t>(header), all.end());
  if (fnv1a(payload.data(), payload.size()) != sum) {
    throw Error("checkpoint '" + path + "' is damaged (checksum mismatch)");
  }
  return payload;
}

}  // namespace simmer::io
