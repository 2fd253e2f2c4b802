#!/usr/bin/env bash
# Install missing Debian packages, configure and build simmer (Release, -march=native).
# Usage: cmake/build.sh [extra cmake -D options]   Environment: SIMMER_BUILD_DIR (default build),
# SIMMER_JOBS (default nproc), SIMMER_DEPS_FLAGS (extra install-deps.sh flags).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${SIMMER_BUILD_DIR:-build}
# shellcheck disable=SC2086
bash cmake/install-deps.sh ${SIMMER_DEPS_FLAGS:-}
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "${SIMMER_JOBS:-$(nproc)}"
