#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs missing packages (SLURM included,
# for the job-script test), configures, builds and runs CTest.
# Usage: tests/run.sh [extra ctest arguments, e.g. -R mpi]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
SIMMER_DEPS_FLAGS="--with-slurm" bash cmake/build.sh
# OpenMPI refuses to run as root unless told; CTest's MPI tests inherit these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "${SIMMER_BUILD_DIR:-build}" --output-on-failure "$@"
