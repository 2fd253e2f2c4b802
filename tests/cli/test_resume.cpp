// The resume policy (cli/resume.hpp) without files: which checkpoint may continue which archive,
// and what a command line may change.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "paper_defaults.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/cli/resume.hpp"
#include "simmer/run/archive_layout.hpp"

using namespace simmer;
using namespace simmer::cli;
using Catch::Contains;

namespace {

struct Pair {
  ArchiveSide archive;
  CheckpointSide checkpoint;
};

Pair matching() {
  Config c = test::paper_defaults();
  c.run.output = "runs/a.h5";
  const std::string ini = to_ini(c);
  return {{"runs/a.h5", "run-1", "running", 3, ini}, {"runs/a.h5.ckpt", "run-1", 3, 500, ini}};
}

Invocation resume(const Pair& p, std::vector<const char*> args = {}) {
  std::vector<const char*> argv = {"simmer_mpi", "--resume", "runs/a.h5"};
  argv.insert(argv.end(), args.begin(), args.end());
  return resume_invocation(p.archive, p.checkpoint, static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("resume: a checkpoint continues its own archive with its own configuration", "[config][resume]") {
  Pair p = matching();
  CHECK(resume(p).config.run.output == "runs/a.h5");
  p.archive.generation = 4;  // killed between the archive's write and the checkpoint's
  CHECK_NOTHROW(resume(p));
  p.archive.path = "moved/a.h5";  // the archive was moved: the run continues where it is now
  const Invocation moved = resume(p, {"--run.progress", "lines", "--run.ranks_per_trajectory", "2"});
  CHECK(moved.config.run.output == "moved/a.h5");
  CHECK(moved.config.run.progress == run::RunOptions::Progress::lines);  // placement may change
  CHECK(moved.config.run.ranks_per_trajectory == 2);
}

TEST_CASE("resume: every mismatch is refused, naming both files and what differs", "[config][resume]") {
  Pair p = matching();
  p.checkpoint.run_id = "run-2";
  CHECK_THROWS_WITH(resume(p), Contains("belongs to run run-2") && Contains("'runs/a.h5' is run run-1"));

  p = matching();
  p.archive.status = run::layout::final_status(false);
  CHECK_THROWS_WITH(resume(p), Contains("is a finished run") && Contains("runs/a.h5.ckpt"));

  p = matching();
  p.archive.generation = 2;
  CHECK_THROWS_WITH(resume(p), Contains("is older than its checkpoint") && Contains("generation 3, step 500"));

  p = matching();
  p.archive.generation = 5;
  CHECK_THROWS_WITH(resume(p), Contains("is stale"));

  p = matching();
  Config other = test::paper_defaults();
  other.run.output = "runs/a.h5";
  other.run.steps = 123;
  p.archive.config_ini = to_ini(other);
  CHECK_THROWS_WITH(resume(p), Contains("differs from the one in 'runs/a.h5'") && Contains("simmer.steps"));
  other.run.steps = Config{}.run.steps;
  other.data.path = "elsewhere.csv";  // placement: the checkpoint is still this archive's
  p.archive.config_ini = to_ini(other);
  CHECK_NOTHROW(resume(p));

  p = matching();
  CHECK_THROWS_WITH(resume(p, {"--simmer.time_step", "0.5"}),
                    Contains("differs from the archived run's") && Contains("simmer.time_step"));
  CHECK_THROWS_WITH(resume(p, {"--run.seed", "9"}), Contains("run.seed"));  // study keys are fixed too
  CHECK_THROWS_WITH(resume(p, {"--output", "b.h5"}), Contains("cannot be given with --resume"));
}
