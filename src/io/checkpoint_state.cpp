#include "simmer/io/checkpoint_state.hpp"

#include "simmer/core/bytes.hpp"
#include "simmer/core/error.hpp"
#include "simmer/io/checkpoint_file.hpp"

namespace simmer::io {

std::vector<unsigned char> encode_checkpoint(const RunCheckpoint& c) {
  if (static_cast<std::int64_t>(c.chains.size()) != c.trajectories) {
    throw Error("internal: a checkpoint needs one state per trajectory");
  }
  ByteWriter w;
  w.str(c.run_id);
  w.str(c.version);
  w.str(c.config_ini);
  w.i64(c.step);
  w.i64(c.adam_epoch);
  w.i64(c.trajectories);
  w.i64(c.generation);
  w.str(c.inputs);
  w.block(c.pooled);
  for (const auto& chain : c.chains) w.block(chain);
  return w.bytes();
}

RunCheckpoint decode_checkpoint(const std::vector<unsigned char>& payload, const std::string& origin) {
  ByteReader r(payload.data(), payload.size(), origin);
  RunCheckpoint c;
  c.run_id = r.str();
  c.version = r.str();
  c.config_ini = r.str();
  c.step = r.i64();
  c.adam_epoch = r.i64();
  if (c.adam_epoch >= 0 && c.step != 0) throw Error(origin + ": an Adam-phase checkpoint at a simmering step");
  c.trajectories = r.i64();
  if (c.trajectories < 0) throw Error(origin + ": negative trajectory count");
  c.generation = r.i64();
  if (c.generation < 1) throw Error(origin + ": generation " + std::to_string(c.generation) + " out of range");
  c.inputs = r.str();
  c.pooled = r.block();
  for (std::int64_t t = 0; t < c.trajectories; ++t) c.chains.push_back(r.block());
  if (!r.done()) throw Error(origin + ": unexpected bytes after the last trajectory");
  return c;
}

void save_checkpoint(const std::string& path, const RunCheckpoint& c) {
  write_checkpoint_file(path, encode_checkpoint(c));
}

RunCheckpoint load_checkpoint(const std::string& path) {
  return decode_checkpoint(read_checkpoint_file(path), "checkpoint '" + path + "'");
}

}  // namespace simmer::io
