// Which steps are members (docs/METHOD.md §5), and their count as a pure function of the options.
#include <catch2/catch.hpp>

#include "simmer/ensemble/sampling.hpp"

using namespace simmer;
using namespace simmer::ensemble;

TEST_CASE("stride: every s-th step of the window counted back from the last", "[sampling]") {
  Rng r(1);
  SamplingOptions o;
  o.window = 10;
  o.stride = 3;
  const auto steps = select_sample_steps(100, o, r);
  CHECK(steps == std::vector<std::int64_t>{90, 93, 96, 99});
  CHECK(member_count(100, o) == 4);
  o.stride = 1;
  CHECK(select_sample_steps(100, o, r).front() == 90);
  CHECK(member_count(100, o) == 10);
}

TEST_CASE("random members: count or fraction, inside the window, sorted, reproducible", "[sampling]") {
  SamplingOptions o;
  o.window = 10000;
  o.count = 2000;
  Rng a(9), b(9);
  const auto s = select_sample_steps(25000, o, a);
  CHECK(s == select_sample_steps(25000, o, b));
  REQUIRE(s.size() == 2000);
  CHECK(s.front() >= 15000);
  CHECK(s.back() <= 24999);
  for (std::size_t i = 1; i < s.size(); ++i) REQUIRE(s[i - 1] < s[i]);
  CHECK(member_count(25000, o) == 2000);
  o.count = 0;
  o.fraction = 0.1;
  o.window = 7000;
  Rng c(4);
  CHECK(select_sample_steps(10000, o, c).size() == 700);
  CHECK(member_count(10000, o) == 700);
}

TEST_CASE("member_count equals the number of selected steps for any options", "[sampling]") {
  Rng r(11);
  for (std::int64_t window = 1; window <= 40; window += 3) {
    for (std::int64_t stride = 1; stride <= 7; ++stride) {
      SamplingOptions o;
      o.window = window;
      o.stride = stride;
      CHECK(member_count(50, o) == static_cast<std::int64_t>(select_sample_steps(50, o, r).size()));
    }
    SamplingOptions f;
    f.window = window;
    f.fraction = 0.37;
    CHECK(member_count(50, f) == static_cast<std::int64_t>(select_sample_steps(50, f, r).size()));
  }
  SamplingOptions bad;
  bad.window = 60;
  CHECK_THROWS_WITH(member_count(50, bad), Catch::Contains("SamplingOptions.window"));
}
