#include <catch2/catch.hpp>

#include "simmer/train/schedule.hpp"

using namespace simmer::train;

TEST_CASE("step-wise ramp of METHOD.md §4", "[schedule]") {
  const StepRamp ramp{0.0, 0.05, 0.01, 1000};
  const Schedule t = ramp_schedule(ramp);
  CHECK(t(0) == 0.0);
  CHECK(t(999) == 0.0);
  CHECK(t(1000) == Approx(0.01));
  CHECK(t(1999) == Approx(0.01));
  CHECK(t(4999) == Approx(0.04));
  CHECK(t(5000) == Approx(0.05));
  CHECK(t(9999) == 0.05);
  CHECK(ramp.steps_to_target() == 5000);
  CHECK(constant_schedule(0.002)(123456) == 0.002);
}

TEST_CASE("ramp validation names the key and value", "[schedule]") {
  CHECK_THROWS_WITH(ramp_schedule({0.5, 0.1, 0.1, 10}), Catch::Contains("StepRamp.target"));
  CHECK_THROWS_WITH(ramp_schedule({0.0, 0.1, 0.1, 0}), Catch::Contains("StepRamp.every"));
  CHECK_THROWS_WITH(ramp_schedule({0.0, 0.1, -0.1, 10}), Catch::Contains("StepRamp.increment"));
  CHECK_NOTHROW(ramp_schedule({0.002, 0.002, 0.0, 1}));
}
