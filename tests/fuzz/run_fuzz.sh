#!/usr/bin/env bash
# Fuzz the CSV reader and the configuration parser with libFuzzer (clang 14, ASan + UBSan).
# Usage: tests/fuzz/run_fuzz.sh [SECONDS per target, default 60] [TARGET ...]   (csv, config)
# Environment: SIMMER_FUZZ_BUILD_DIR (default build-fuzz), SIMMER_JOBS (default nproc).
#
# Installs clang if missing (cmake/install-deps.sh --with-fuzz), builds fuzz_csv and fuzz_config
# in build-fuzz (every simmer object instrumented), and runs each for SECONDS starting from
# tests/fuzz/corpus/<target>. New interesting inputs go to build-fuzz/corpus/<target> (the
# checked-in seed corpus is not modified). A crash, sanitizer report, leak, hang (> 10 s per
# input) or broken invariant stops the target, its input is saved as
# build-fuzz/artifacts/<target>/crash-* (or leak-*, timeout-*), and the script exits non-zero.
# To keep such an input as a regression test: copy it to tests/fuzz/regressions/<target>/ (the
# replay tests run it) and add a case to tests/data/test_fuzz_regressions.cpp.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(csv config)
build=${SIMMER_FUZZ_BUILD_DIR:-build-fuzz}

bash cmake/install-deps.sh --with-fuzz
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIMMER_FUZZ=ON \
  -DSIMMER_BUILD_BENCH=OFF > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "${SIMMER_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS="halt_on_error=1:print_stacktrace=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  artifacts="$build/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  echo "== fuzz_$target for ${seconds} s (corpus $corpus, seeds tests/fuzz/corpus/$target)"
  # The first corpus directory receives new inputs; the seeds and the regressions are read only.
  if ! "$build/tests/fuzz/fuzz_$target" "$corpus" "tests/fuzz/corpus/$target" \
      $( [ -d "tests/fuzz/regressions/$target" ] && echo "tests/fuzz/regressions/$target" ) \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
      -artifact_prefix="$artifacts/" -print_final_stats=1; then
    echo "== fuzz_$target FOUND A BUG: input(s) in $artifacts" >&2
    status=1
  fi
done
exit "$status"
