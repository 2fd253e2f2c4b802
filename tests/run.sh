#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs missing packages, configures,
# builds and runs CTest. Usage: tests/run.sh [extra ctest arguments]
# Environment: SIMMER_BUILD_DIR (default build), SIMMER_JOBS (default nproc).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${SIMMER_BUILD_DIR:-build}
jobs=${SIMMER_JOBS:-$(nproc)}

bash cmake/install-deps.sh --with-slurm
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs"

# OpenMPI refuses to run as root unless told; CTest's MPI tests inherit these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$build" --output-on-failure "$@"
