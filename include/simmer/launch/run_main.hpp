#pragma once
/// \file
/// simmer_mpi, whole: MPI's start and end, the signal handlers, parsing and validating on every
/// rank (one message for a bad value on any rank), a resume's archive and checkpoint, rank 0's
/// checks of the output and the inputs (cli/inputs.hpp), the resource and memory estimates, and
/// parallel::run. The executable's main is this one call.

namespace simmer::launch {

/// The exit status: 0 done, 2 refused before any work, parallel::run's status otherwise (a failure
/// inside the run aborts the job).
int simmer_mpi_main(int argc, char** argv);

}  // namespace simmer::launch
