// The checkpoint struct round-trips through its payload and its file; damage is detected.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "simmer/core/error.hpp"
#include "simmer/io/checkpoint_file.hpp"
#include "simmer/io/checkpoint_state.hpp"
#include "temp_dir.hpp"

using namespace simmer;

TEST_CASE("RunCheckpoint: encode/decode and save/load give back every field", "[checkpoint]") {
  io::RunCheckpoint c;
  c.run_id = "0123456789abcdef0123456789abcdef";
  c.version = "0.2.0";
  c.config_ini = "[run]\nseed = 7\n";
  c.step = 1234;
  c.trajectories = 3;
  c.generation = 5;
  c.pooled = {1, 2, 3};
  c.chains = {{9}, {}, {4, 5, 6, 7}};
  c.exchange = {3, 1, 4};
  c.wall_seconds = 12.5;
  const auto payload = io::encode_checkpoint(c);
  const io::RunCheckpoint d = io::decode_checkpoint(payload, "test");
  CHECK(d.run_id == c.run_id);
  CHECK(d.version == c.version);
  CHECK(d.config_ini == c.config_ini);
  CHECK(d.step == c.step);
  CHECK(d.adam_epoch == -1);
  CHECK_FALSE(d.in_adam());
  CHECK(d.trajectories == c.trajectories);
  CHECK(d.generation == 5);
  CHECK(d.pooled == c.pooled);
  CHECK(d.chains == c.chains);
  CHECK(d.exchange == c.exchange);
  CHECK(d.wall_seconds == 12.5);
  CHECK(io::encode_checkpoint(d) == payload);
  {  // during Adam: its epoch, at step 0
    io::RunCheckpoint a = c;
    a.step = 0;
    a.adam_epoch = 150;
    const io::RunCheckpoint b = io::decode_checkpoint(io::encode_checkpoint(a), "test");
    CHECK(b.in_adam());
    CHECK(b.adam_epoch == 150);
    a.step = 7;  // Adam's epochs and simmering steps cannot both have run
    CHECK_THROWS_WITH(io::decode_checkpoint(io::encode_checkpoint(a), "test"), Catch::Contains("Adam-phase"));
  }
  {  // every checkpoint of a run has a generation >= 1 (the archive's binds to it)
    io::RunCheckpoint a = c;
    a.generation = 0;
    CHECK_THROWS_WITH(io::decode_checkpoint(io::encode_checkpoint(a), "test"), Catch::Contains("generation"));
  }

  test::TempDir dir("checkpoint");
  const std::string path = dir.path("run.h5.ckpt");
  io::save_checkpoint(path, c);
  CHECK(io::encode_checkpoint(io::load_checkpoint(path)) == payload);
  {  // one flipped byte
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  CHECK_THROWS_WITH(io::load_checkpoint(path), Catch::Contains(path));
  c.chains.pop_back();  // fewer states than trajectories
  CHECK_THROWS(io::encode_checkpoint(c));
}

TEST_CASE("a checkpoint of another format version is refused, naming the file and both versions", "[checkpoint]") {
  io::RunCheckpoint c;
  c.run_id = "r";
  c.trajectories = 1;
  c.generation = 1;
  c.chains = {{1, 2}};
  test::TempDir dir("checkpoint_version");
  const std::string path = dir.path("old.h5.ckpt");
  io::save_checkpoint(path, c);
  for (const std::uint32_t version : {io::kCheckpointFormat - 1, io::kCheckpointFormat + 1}) {
    INFO("version " << version);
    {  // the header's version field follows the 8-byte magic
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(8);
      f.write(reinterpret_cast<const char*>(&version), sizeof version);
    }
    CHECK_THROWS_WITH(io::load_checkpoint(path),
                      Catch::Contains("'" + path + "'") && Catch::Contains("version " + std::to_string(version)) &&
                          Catch::Contains("reads version " + std::to_string(io::kCheckpointFormat)) &&
                          Catch::Contains(version < io::kCheckpointFormat ? "older simmer" : "newer simmer"));
  }
  {  // put back, it loads again
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    f.write(reinterpret_cast<const char*>(&io::kCheckpointFormat), sizeof io::kCheckpointFormat);
  }
  CHECK(io::load_checkpoint(path).chains == c.chains);
}
