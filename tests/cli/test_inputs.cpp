// The run's input files (cli/inputs.hpp): their fingerprints as the archive and the checkpoint
// keep them, what a resume accepts, and the files a run may not write over.
#include <catch2/catch.hpp>

#include <filesystem>

#include "simmer/cli/inputs.hpp"
#include "simmer/core/bytes.hpp"
#include "simmer/core/sha256.hpp"
#include "simmer/core/visit.hpp"
#include "temp_dir.hpp"

using namespace simmer;
using namespace simmer::cli;
using Catch::Contains;

namespace {

/// A CSV run reading `data` (and the INI file `ini` when not empty).
Invocation csv_run(const std::string& data, const std::string& ini = "") {
  Invocation inv;
  inv.config.data.source = DataSource::csv;
  inv.config.data.path = data;
  inv.config_path = ini;
  return inv;
}

}  // namespace

TEST_CASE("input fingerprints: read from the files, kept as text and as fields, read back the same", "[inputs]") {
  test::TempDir dir("inputs");
  const std::string data = dir.write("a.csv", "x,y\n1,2\n"), ini = dir.write("job.ini", "[data]\n");
  const InputFingerprints f = InputFingerprints::of(csv_run(data, ini));
  REQUIRE(f.files.size() == 2);
  CHECK(f.files[0].key == "data.path");
  CHECK(f.files[0].path == data);
  CHECK(f.files[0].size == 8);
  CHECK(f.files[0].sha256 == fingerprint_file(data).sha256);
  CHECK(f.files[1].key == "--config");
  // The text form is the one archives and checkpoints of earlier versions hold.
  CHECK(f.text() == "data.path\t" + data + "\t8\t" + f.files[0].sha256 + "\n--config\t" + ini + "\t" +
                        std::to_string(f.files[1].size) + "\t" + f.files[1].sha256 + "\n");
  const InputFingerprints back = InputFingerprints::parse(f.text());
  CHECK(back.text() == f.text());
  CHECK(InputFingerprints::parse("").files.empty());
  CHECK_THROWS_WITH(InputFingerprints::parse("data.path\tx\tbig\tabc\n"), Contains("has no size"));
  ByteWriter w;
  Saver save(w);
  save(f);
  InputFingerprints loaded;
  ByteReader r(w.bytes().data(), w.bytes().size(), "fingerprints");
  Loader load(r);
  load(loaded);
  CHECK(loaded.text() == f.text());
}

TEST_CASE("input fingerprints: a resume accepts the same contents anywhere, and refuses changed, missing or new files",
          "[inputs][resume]") {
  test::TempDir dir("inputs_resume");
  const std::string data = dir.write("a.csv", "x,y\n1,2\n");
  const InputFingerprints began = InputFingerprints::of(csv_run(data, dir.write("job.ini", "[data]\n")));
  // The same file; a copy elsewhere (moved, named again with --data.path); the INI changed or gone.
  CHECK_NOTHROW(began.check_resume(InputFingerprints::of(csv_run(data)), "r.h5.ckpt"));
  const std::string moved = dir.write("moved.csv", "x,y\n1,2\n");
  CHECK_NOTHROW(began.check_resume(InputFingerprints::of(csv_run(moved, dir.write("other.ini", "[run]\n"))), "c"));
  // Changed contents: both paths, the checkpoint, both sizes.
  const std::string changed = dir.write("changed.csv", "x,y\n1,3\n4,5\n");
  CHECK_THROWS_WITH(began.check_resume(InputFingerprints::of(csv_run(changed)), "r.h5.ckpt"),
                    Contains("'" + changed + "' (data.path) is not the one the run began with ('" + data + "'") &&
                        Contains("recorded in 'r.h5.ckpt'") && Contains("size 8 -> 12 bytes"));
  // A file the run no longer reads, and one it did not read.
  InputFingerprints none;
  CHECK_THROWS_WITH(began.check_resume(none, "c"), Contains("reads no such file now"));
  InputFingerprints more = InputFingerprints::of(csv_run(data));
  more.files.push_back({"ensemble.points", data, 8, more.files[0].sha256});
  CHECK_THROWS_WITH(began.check_resume(more, "c"),
                    Contains("now reads '" + data + "' (ensemble.points), which it did not read"));
}

TEST_CASE("the output: not an input, not simmer's own file, not a directory, not an existing file without --overwrite",
          "[inputs]") {
  test::TempDir dir("inputs_output");
  const std::string data = dir.write("a.csv", "x,y\n1,2\n");
  Invocation inv = csv_run(data);
  inv.config.run.output = data;
  CHECK_THROWS_WITH(check_not_an_input(inv), Contains("option 'run.output'") && Contains("is the run's own input"));
  inv.config.run.output = dir.path("a.csv.ckpt");  // the run would write its checkpoint over nothing: fine
  CHECK_NOTHROW(check_not_an_input(inv));
  inv.config.run.output = data.substr(0, data.size() - 5);  // ".../a": its ".ckpt" is not a.csv either
  CHECK_NOTHROW(check_not_an_input(inv));
  inv.config.run.output = dir.path("out.h5");
  CHECK_NOTHROW(check_output(inv));
  inv.config.run.output = data;
  CHECK_THROWS_WITH(check_output(inv), Contains("exists; pass --overwrite"));
  inv.overwrite = true;
  CHECK_NOTHROW(check_output(inv));
  for (const char* own : {"run.h5.ckpt", "run.h5.ckpt.tmp", "run.h5.lock", "out.csv.partial"}) {
    INFO(own);  // another run's live checkpoint or lock, which --overwrite deleted
    inv.config.run.output = dir.path(own);
    CHECK_THROWS_WITH(check_output(inv), Contains("option 'run.output'") && Contains("simmer's own files"));
  }
  inv.config.run.output = dir.path("");
  CHECK_THROWS_WITH(check_output(inv), Contains("is a directory") || Contains("does not exist"));
  inv.config.run.output = dir.path("missing/deeper/out.h5");  // two missing levels: a typo
  CHECK_THROWS_WITH(check_output(inv),
                    Contains("its directory") && Contains("does not exist") && Contains("nor its parent"));
  inv.config.run.output = dir.path("missing/out.h5");  // one missing level is made (runs/ on a fresh checkout)
  CHECK_NOTHROW(check_output(inv));
  CHECK(std::filesystem::is_directory(dir.path("missing")));
}
