// simmer_mpi: parse, validate, build, run, report. See ARCHITECTURE.md.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "simmer/core/runtime.hpp"
#include "simmer/app/problem.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/core/error.hpp"
#include "simmer/mpi/driver.hpp"

using namespace simmer;

namespace {

/// The output must not exist (unless --overwrite) and its directory must be writable.
void check_output(const cli::Invocation& inv) {
  namespace fs = std::filesystem;
  const fs::path out(inv.config.run.output);
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  if (!fs::is_directory(dir)) {
    throw option_error("run.output", out.string(), "its directory '" + dir.string() + "' does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    throw option_error("run.output", out.string(), "its directory '" + dir.string() + "' is not writable");
  }
  if (fs::exists(out) && !inv.overwrite) {
    throw option_error("run.output", out.string(), "exists; pass --overwrite to replace it");
  }
}

}  // namespace

int main(int argc, char** argv) {
  tune_allocator();
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = 0;
  cli::Invocation inv;
  app::Problem problem;
  // Every value is checked before any work starts; a bad one stops all ranks with one message.
  const bool ok = mpi::collective_try(MPI_COMM_WORLD, [&] {
    inv = cli::parse_command_line(argc, argv);
    if (inv.help) return;
    inv.config = cli::validated(inv.config, size);
    if (rank == 0) check_output(inv);
    problem = app::build_problem(inv.config);
  });
  if (!ok) {
    code = 2;
  } else if (inv.help) {
    if (rank == 0) std::cout << inv.help_text;
  } else {
    const bool ran = mpi::collective_try(MPI_COMM_WORLD, [&] { code = mpi::run(inv, problem, MPI_COMM_WORLD); });
    if (!ran) code = 1;
  }
  MPI_Finalize();
  return code;
}
