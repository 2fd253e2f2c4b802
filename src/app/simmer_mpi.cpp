// simmer_mpi: parse, validate, build, run, report (src/launch/simmer_mpi.cpp). See ARCHITECTURE.md.
#include "simmer/launch/simmer_mpi.hpp"

int main(int argc, char** argv) { return simmer::launch::simmer_mpi_main(argc, argv); }
