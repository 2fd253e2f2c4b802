#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs missing packages, builds, and runs the
# paper's Iris ab initio study (36 trajectories, docs/METHOD.md §7) with mpirun, oversubscribed
# on however many cores this machine has; prints the result table, writes runs/iris_abinitio.h5,
# then prints the archive's summary with each trajectory's stationarity verdict
# (simmer_analyze summary; docs/STATIONARITY.md).
# Usage: jobs/quickstart.sh [--short] [extra simmer_mpi options, e.g. --simmer.steps 5000]
#   --short: 5000 steps with the ensemble from the last 2000 (about 1/5 of the time).
#   --output PATH (or --run.output PATH) writes the archive there instead of runs/iris_abinitio.h5,
#   which the script otherwise overwrites; a relative PATH is taken from the repository's root.
# It computes in float32 (run.precision; the paper's TensorFlow default, about twice as fast
# here, the same table to the digits printed); pass --run.precision float64 for float64.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash cmake/build.sh
extra=()
if [ "${1:-}" = "--short" ]; then
  shift
  extra=(--simmer.steps 5000 --ensemble.window 2000 --ensemble.count 400)
fi
case " $* " in *" --run.precision "*) ;; *) extra+=(--run.precision float32) ;; esac
# 36 ranks on a few cores: each gather and checkpoint is a round of collective writes that every
# oversubscribed rank must be scheduled for (measured here: 25 of them cost 5 s of 42), so gather
# and checkpoint every 5000 steps instead of the job's 1000 (progress lines every 5000 steps).
case " $* " in *" --run.gather_interval "*) ;; *) extra+=(--run.gather_interval 5000) ;; esac
case " $* " in *" --run.checkpoint_interval "*) ;; *) extra+=(--run.checkpoint_interval 5000) ;; esac
# The archive: the caller's --output, else runs/iris_abinitio.h5 (overwritten).
out=runs/iris_abinitio.h5
given=0
previous=
for arg in "$@"; do
  case "$arg" in --output=* | --run.output=*) out=${arg#*=}; given=1 ;; esac
  case "$previous" in --output | --run.output) out=$arg; given=1 ;; esac
  previous=$arg
done
[ "$given" -eq 1 ] || extra+=(--output "$out" --overwrite)
mkdir -p runs
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
build=${SIMMER_BUILD_DIR:-build}
mpirun --oversubscribe -n 36 "$build/src/simmer_mpi" --config jobs/iris_abinitio.ini "${extra[@]}" "$@"
echo
"$build/src/simmer_analyze" summary "$out"
