#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs missing packages (SLURM included,
# for the job-script test), configures, builds and runs CTest.
# Usage: tests/run.sh [--sanitize] [extra ctest arguments, e.g. -R mpi]
#   --sanitize  the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer in
#               build-asan (RelWithDebInfo, no benchmark); any report fails the test that made it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
sanitize=0
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=1
  shift
fi
# OpenMPI refuses to run as root unless told; CTest's MPI tests inherit these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "$sanitize" -eq 0 ]; then
  build=${SIMMER_BUILD_DIR:-build}
  SIMMER_BUILD_DIR="$build" SIMMER_DEPS_FLAGS="--with-slurm" bash cmake/build.sh
else
  build=${SIMMER_ASAN_BUILD_DIR:-build-asan}
  SIMMER_BUILD_DIR="$build" SIMMER_DEPS_FLAGS="--with-slurm" bash cmake/build.sh \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIMMER_SANITIZE=ON -DSIMMER_BUILD_BENCH=OFF
  # Every sanitized process (Catch2 binaries, simmer_mpi under mpirun from the Python and SLURM
  # tests) inherits these. The first report ends the process with a non-zero exit; LeakSanitizer
  # ignores what OpenMPI, HDF5 and their plugins keep until exit (tests/sanitizers/lsan.supp).
  # fast_unwind_on_malloc=0: OpenMPI unloads its plugins in MPI_Finalize and is built without
  # frame pointers, so the fast unwinder records their allocations as one "<unknown module>"
  # frame that no suppression can match; the full unwinder reaches libmpi & co.
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:print_stacktrace=1:detect_leaks=1:fast_unwind_on_malloc=0:check_initialization_order=1:strict_string_checks=1"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  # use_tls=0: on this Debian (GCC 12 LSan, glibc 2.36) the tracer reads a stale dynamic-TLS
  # entry left by the OpenMPI plugins a singleton MPI_Init loads and unloads (simmer_analyze) and
  # dies with "Tracer caught signal 11". Not scanning TLS as a root can only report more leaks,
  # never hide one.
  export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0:use_tls=0"
  # Tests may shorten their runs under the sanitizers (a simmering step is several times slower).
  export SIMMER_TEST_SANITIZED=1
fi
# Two tests at a time; a test marked @pytest.mark.serial runs alone (tests/pytest.ini).
ctest --test-dir "$build" --output-on-failure --parallel "$(nproc)" "$@"
