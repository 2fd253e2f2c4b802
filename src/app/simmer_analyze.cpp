// simmer_analyze: summary, predict, merge, export and verify on simmer_mpi archives.
// Parse, run, report; errors are one line on stderr and exit code 2 (verify: 1 when it finds
// damage). See docs/ANALYZE.md.
#include <mpi.h>

#include <iostream>

#include "simmer/cli/analyze_options.hpp"
#include "simmer/core/runtime.hpp"
#include "simmer/io/archive_reader.hpp"
#include "simmer/posthoc/commands.hpp"

using namespace simmer;

int main(int argc, char** argv) {
  tune_allocator();
  MPI_Init(&argc, &argv);
  // Errors are reported as simmer::Error messages naming the file; never as an HDF5 stack dump.
  io::silence_hdf5_errors();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  cli::AnalyzeInvocation inv;
  try {
    inv = cli::parse_analyze_command_line(argc, argv);
  } catch (const std::exception& e) {
    if (rank == 0) std::cerr << "simmer_analyze: error: " << e.what() << std::endl;
    code = 2;
  }
  if (code == 0 && inv.help) {
    if (rank == 0) std::cout << inv.help_text;
  } else if (code == 0 && inv.command == "predict") {
    // Collective: every rank evaluates its share of the draws.
    code = posthoc::predict({inv.archives.front(), inv.points, inv.output, inv.quantiles, inv.candidate,
                             inv.allow_incomplete, inv.keep, inv.digits},
                            MPI_COMM_WORLD, std::cout);
  } else if (code == 0) {
    // Serial commands run on rank 0; other ranks (under mpirun) only wait for the exit code.
    if (rank == 0) {
      try {
        if (inv.command == "summary") {
          code = posthoc::summary(inv.archives.front(), std::cout);
        } else if (inv.command == "verify") {
          code = posthoc::verify(inv.archives.front(), std::cout);
        } else if (inv.command == "compare") {
          posthoc::compare({inv.archives.front(), inv.output, inv.allow_incomplete}, std::cout);
        } else if (inv.command == "merge") {
          posthoc::merge({inv.archives, inv.output, inv.overwrite, inv.command_line}, std::cout);
        } else {
          posthoc::export_csv({inv.archives.front(), inv.what, inv.params, inv.output, inv.quantiles,
                               inv.allow_incomplete, inv.log_likelihood, inv.rung, inv.predictive},
                              std::cout);
        }
        std::cout.flush();
      } catch (const std::exception& e) {
        std::cout.flush();
        std::cerr << "simmer_analyze: error: " << e.what() << std::endl;
        code = 2;
      }
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return code;
}
