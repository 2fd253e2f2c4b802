// merge's overlap rule (posthoc::merge_overlap), beside the end-to-end refusals in
// tests/analyze/test_analyze.py and tests/mpi/test_exits.py: inputs that hold the same
// trajectory, directly or through earlier merges, are refused, independent ones are not.
#include <catch2/catch.hpp>

#include "simmer/posthoc/commands.hpp"

using simmer::posthoc::merge_overlap;
using simmer::posthoc::MergeSource;
using simmer::posthoc::TrajectoryOrigin;

namespace {

/// An archive of run `id` (run.seed `seed`, data.split_seed `split`) with trajectories first..last.
MergeSource run(const std::string& path, const std::string& id, std::uint64_t seed, std::uint64_t split,
                std::int64_t first, std::int64_t last) {
  MergeSource s{path, {}};
  for (std::int64_t k = first; k <= last; ++k) s.trajectories.push_back({id, seed, split, k, path});
  return s;
}

/// A merged archive: `parts`' trajectories in order.
MergeSource merged(const std::string& path, const std::vector<MergeSource>& parts) {
  MergeSource s{path, {}};
  for (const auto& p : parts) s.trajectories.insert(s.trajectories.end(), p.trajectories.begin(), p.trajectories.end());
  return s;
}

}  // namespace

TEST_CASE("merge refuses inputs that share trajectories, and only those", "[merge]") {
  const MergeSource a = run("a.h5", "run-1", 1, 1, 0, 7);
  CHECK(merge_overlap({a, run("b.h5", "run-2", 2, 1, 0, 7)}).empty());  // another run.seed
  CHECK(merge_overlap({a, run("b.h5", "run-2", 1, 2, 0, 7)}).empty());  // another split: other data
  // The same seeds: a rerun; trajectories 0..min(8, 3) - 1 are in both.
  CHECK_THAT(merge_overlap({a, run("b.h5", "run-2", 1, 1, 0, 2)}),
             Catch::Contains("trajectories 0..2 are the same in both") && Catch::Contains("'a.h5' and 'b.h5'") &&
                 Catch::Contains("run.seed 1") && Catch::Contains("3 trajectories would be counted twice"));
  // The same run id (a copy of one archive), whatever the seeds say.
  MergeSource copy = run("copy.h5", "run-1", 9, 1, 0, 7);
  CHECK_THAT(merge_overlap({a, copy}),
             Catch::Contains("of the same run (run id run-1") && Catch::Contains("trajectories 0..7"));
  // Archives from before run ids: the seeds alone decide.
  CHECK(merge_overlap({run("old_a.h5", "", 1, 1, 0, 7), run("old_b.h5", "", 5, 1, 0, 7)}).empty());
  CHECK_FALSE(merge_overlap({run("old_a.h5", "", 1, 1, 0, 7), run("old_b.h5", "", 1, 1, 0, 0)}).empty());
  // The third input overlaps the first, not the second: named with the first.
  CHECK_THAT(merge_overlap({a, run("b.h5", "run-2", 2, 1, 0, 7), run("c.h5", "run-3", 1, 1, 5, 6)}),
             Catch::Contains("'a.h5' and 'c.h5'") && Catch::Contains("trajectories 5..6"));
}

TEST_CASE("merge refuses a trajectory that reaches it twice through merged archives", "[merge]") {
  const MergeSource s1 = run("s1.h5", "run-1", 1, 1, 0, 1), s2 = run("s2.h5", "run-2", 2, 1, 0, 1),
                    s3 = run("s3.h5", "run-3", 3, 1, 0, 1);
  const MergeSource m12 = merged("M12.h5", {s1, s2}), m23 = merged("M23.h5", {s2, s3});
  // The four orders: each exited 0 with the chains of s2 counted twice.
  for (const auto& [x, y] : std::vector<std::pair<MergeSource, MergeSource>>{{m12, s2}, {s2, m12}, {m12, m23}}) {
    CHECK_THAT(merge_overlap({x, y}), Catch::Contains("run id run-2") && Catch::Contains("trajectories 0..1") &&
                                          Catch::Contains("'" + x.path + "' and '" + y.path + "'"));
  }
  // A rerun of s3 (another run id, the same seeds) against a merge that holds s3.
  CHECK_THAT(merge_overlap({m23, run("s3b.h5", "run-4", 3, 1, 0, 1)}),
             Catch::Contains("run.seed 3") && Catch::Contains("are the same in both"));
  // Disjoint merges merge.
  CHECK(merge_overlap({m12, s3}).empty());
  CHECK(merge_overlap({s3, m12}).empty());
  // Non-contiguous shared trajectories are listed one by one.
  const MergeSource odd{"odd.h5",
                        {{"run-1", 1, 1, 0, "s1.h5"}, {"run-9", 9, 1, 0, "s9.h5"}, {"run-1", 1, 1, 3, "s1.h5"}}};
  CHECK_THAT(merge_overlap({run("s1.h5", "run-1", 1, 1, 0, 3), odd}), Catch::Contains("trajectories 0, 3"));
}
