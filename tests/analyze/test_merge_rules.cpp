// merge's overlap rule (posthoc::merge_overlap), beside the end-to-end refusal in
// tests/analyze/test_analyze.py: two inputs that hold the same trajectories are refused, two
// independent ones are not.
#include <catch2/catch.hpp>

#include "simmer/posthoc/commands.hpp"

using simmer::posthoc::merge_overlap;
using simmer::posthoc::MergeSource;

TEST_CASE("merge refuses inputs that share trajectories, and only those", "[merge]") {
  const MergeSource a{"a.h5", "run-1", 1, 1, 8};
  MergeSource b{"b.h5", "run-2", 2, 1, 8};
  CHECK(merge_overlap(a, b).empty());  // another run.seed: other trajectories
  b.seed = 1;
  b.split_seed = 2;
  CHECK(merge_overlap(a, b).empty());  // another split: other data, other trajectories
  // The same seeds: a rerun; trajectories 0..min(8, 3) - 1 are in both.
  b.split_seed = 1;
  b.chains = 3;
  CHECK_THAT(merge_overlap(a, b), Catch::Contains("trajectories 0..2 are the same in both") &&
                                      Catch::Contains("'a.h5' and 'b.h5'") && Catch::Contains("run.seed 1"));
  // The same run id (a copy of one archive), whatever the seeds say.
  MergeSource copy = a;
  copy.path = "copy.h5";
  copy.seed = 9;
  CHECK_THAT(merge_overlap(a, copy), Catch::Contains("are the same run (run id run-1)"));
  // Archives from before run ids: the seeds alone decide.
  MergeSource old_a = a, old_b = b;
  old_a.run_id.clear();
  old_b.run_id.clear();
  old_b.seed = 5;
  CHECK(merge_overlap(old_a, old_b).empty());
}
