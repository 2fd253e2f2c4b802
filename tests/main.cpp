// The serial test executables' main: Catch2's runner (tests/catch_runner.cpp).
#include "catch_runner.hpp"

int main(int argc, char** argv) { return simmer::test::run_catch(argc, argv); }
