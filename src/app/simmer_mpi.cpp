// simmer_mpi: parse, validate, build, run, report (src/launch/run_main.cpp). See ARCHITECTURE.md.
#include "simmer/launch/run_main.hpp"

int main(int argc, char** argv) { return simmer::launch::simmer_mpi_main(argc, argv); }
