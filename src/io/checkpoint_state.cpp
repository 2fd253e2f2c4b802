#include "simmer/io/checkpoint_state.hpp"

#include "simmer/core/error.hpp"
#include "simmer/core/visit.hpp"
#include "simmer/io/checkpoint_file.hpp"

namespace simmer::io {

std::vector<unsigned char> encode_checkpoint(const RunCheckpoint& c) {
  if (static_cast<std::int64_t>(c.chains.size()) != c.trajectories) {
    throw Error("internal: a checkpoint needs one state per trajectory");
  }
  return save_bytes(c);
}

RunCheckpoint decode_checkpoint(const std::vector<unsigned char>& payload, const std::string& origin) {
  RunCheckpoint c;
  load_bytes(payload, origin, c);
  return c;
}

void save_checkpoint(const std::string& path, const RunCheckpoint& c) {
  write_checkpoint_file(path, encode_checkpoint(c));
}

RunCheckpoint load_checkpoint(const std::string& path) {
  return decode_checkpoint(read_checkpoint_file(path), "checkpoint '" + path + "'");
}

}  // namespace simmer::io
