#!/usr/bin/env bash
# The SLURM job scripts under a real SLURM on localhost.
#
# Usage: tests/slurm/slurm_test.sh SIMMER_MPI PROJECT_ROOT
#
#  1. Brings up munge, slurmctld and slurmd on localhost (Debian 12's slurm-wlm, one node)
#     (tests/slurm/slurm_common.sh: reusing a SLURM that already answers sinfo; writing
#     /etc/slurm/slurm.conf only when it is absent or not ours; cancelling jobs left by an
#     earlier test run that was killed). Needs root for that part.
#  2. Submits, from a temporary directory outside the checkout holding a copy of the sine job,
#     simmer.sbatch as `cmake --install` puts it in a prefix (nothing set but the configuration
#     and the output directory) and the checkout's simmer_array.sbatch (array 0-1, through
#     SIMMER_HOME and SIMMER_BIN), with `sbatch --wait`, 2 tasks each, reduced on the command line.
#  3. Checks each job's exit code and that each archive is valid HDF5 with the groups
#     /posterior and /ensemble, /posterior/params [2 chains, 100 draws, 481 params] finite and
#     /metrics members = 200 (so the overrides reached simmer_mpi); for the array, that task k
#     ran with run.seed = data.split_seed = 1 + k (the archive's /config) and that the two tasks'
#     networks differ.
#  4. Stops the daemons it started (never ones that were already running); removes its files.
#
# Exit codes: 0 pass, 1 fail, 77 skip (SLURM cannot start here: CTest's SKIP_RETURN_CODE).
# Environment: SIMMER_SLURM_KEEP=1 keeps the temporary directory (its path is printed).
# shellcheck disable=SC2317  # functions called from traps
set -uo pipefail

SKIP=77
JOB_TIMEOUT=75       # seconds each `sbatch --wait` may take
JOB_NAME="simmer-slurm-test-$$"
tmp=""

log() { echo "slurm_test: $*"; }
skip() { echo "SKIP: $*"; exit $SKIP; }
fail() { echo "FAIL: $*" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/slurm/slurm_common.sh
. "$here/slurm_common.sh"

# ------------------------------------------------------------------- traps and arguments
slurm_setup slurm_test jobs/sine_retrofit.ini "$@"

# --------------------------------------------------------------------------------- bring-up
slurm_bring_up

# -------------------------------------------------------------------------------------- jobs
tmp=$(mktemp -d /tmp/simmer-slurm-test.XXXXXX) || fail "mktemp failed"
chmod 755 "$tmp"

# The sine retrofit case, reduced to a few seconds: 2 trajectories on 2 tasks.
overrides=(--simmer.steps 300 --simmer.every 50 --ensemble.window 100 --adam.epochs 50
           --run.trajectories 2 --run.gather_interval 100)

submit() {  # name script sbatch-options... -- simmer-arguments...  (environment: SIMMER_* exported by the caller)
  local name=$1 script=$2 rc
  shift 2
  local sb=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sb+=("$1"); shift; done
  shift
  log "sbatch --wait ${sb[*]} $script $* (from $work)"
  # Submitted from the user's directory, as a user does (the job runs there: SLURM_SUBMIT_DIR).
  (cd "$work" && timeout $JOB_TIMEOUT sbatch --wait --parsable --partition="$partition" --ntasks=2 \
      --time=00:05:00 --job-name="$JOB_NAME" "${sb[@]}" \
      "$script" "$@") > "$tmp/$name.sbatch-out" 2>&1
  rc=$?
  if [ $rc = 124 ]; then
    fail "$name: sbatch --wait did not return within $JOB_TIMEOUT s (jobs: $(squeue -h -n "$JOB_NAME" -o '%i %T %r' 2>&1 | tr '\n' ';'))"
  fi
  if [ $rc != 0 ]; then
    echo "---- sbatch output"; cat "$tmp/$name.sbatch-out"
    for f in "$tmp/$name"*.out; do [ -f "$f" ] && { echo "---- $f"; cat "$f"; }; done
    fail "$name: the job exited with code $rc"
  fi
  log "$name: job $(head -n1 "$tmp/$name.sbatch-out") exited 0"
}

# Archive check: valid HDF5 with /posterior and /ensemble; posterior/params [chain, draw, param]
# with 2 chains. With an expected seed, the archive's /config must show run.seed and
# data.split_seed equal to it.
check_archive() {  # path [seed]
  local path=$1 seed=${2:-}
  [ -s "$path" ] || fail "archive $path is missing or empty"
  h5ls "$path" >/dev/null 2>&1 || fail "$path is not a valid HDF5 file (h5ls fails)"
  if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
    /usr/bin/python3 - "$path" "$seed" <<'PY' || fail "archive check failed for $path"
import sys, re, h5py, numpy as np
path, seed = sys.argv[1], sys.argv[2]
with h5py.File(path, "r") as f:
    for g in ("posterior", "ensemble"):
        if not isinstance(f.get(g), h5py.Group):
            sys.exit(f"{path}: no group /{g} (top level: {sorted(f.keys())})")
    if len(f["ensemble"]) == 0:
        sys.exit(f"{path}: /ensemble is empty")
    # The reduced sine run: 2 trajectories, window 100 stored whole, 481 parameters. Checks that
    # the overrides passed through sbatch and srun reached simmer_mpi.
    p = f["posterior"].get("params")
    if p is None or p.shape != (2, 100, 481):
        sys.exit(f"{path}: /posterior/params should be [2 chains, 100 draws, 481 params], is "
                 f"{None if p is None else p.shape}")
    if not np.all(np.isfinite(p[()])):
        sys.exit(f"{path}: /posterior/params has non-finite values")
    members = f["metrics"].attrs.get("members") if "metrics" in f else None
    if members != 200:  # (a missing /metrics fails too)
        sys.exit(f"{path}: /metrics members = {members}, expected 200 (2 trajectories x 100)")
    if seed:
        c = f["config"][()] if "config" in f else f.attrs.get("config")
        if isinstance(c, np.ndarray) and c.dtype.itemsize == 1 and c.ndim == 2:  # a character array
            c = c[0].tobytes().rstrip(b"\x00")
        elif isinstance(c, np.ndarray):
            c = c.reshape(-1)[0] if c.size else None
        if c is None:
            sys.exit(f"{path}: no /config to check the seeds in")
        if isinstance(c, bytes):
            c = c.decode()
        section, found = None, {}
        for line in str(c).splitlines():
            line = line.strip()
            m = re.match(r"\[(\w+)\]", line)
            if m:
                section = m.group(1)
                continue
            m = re.match(r"(\w+)\s*=\s*(\S+)", line)
            if m:
                found[f"{section}.{m.group(1)}"] = m.group(2)
        for key in ("run.seed", "data.split_seed"):
            if found.get(key) != seed:
                sys.exit(f"{path}: {key} = {found.get(key)} in /config, expected {seed}")
    print(f"  {path}: posterior/params {p.shape}, ensemble {sorted(f['ensemble'].keys())}"
          + f", members {members}"
          + (f", run.seed = data.split_seed = {seed}" if seed else ""))
PY
  else
    # cmake/install-deps.sh installs python3-h5py: without it the archive cannot be checked, and
    # that is a failure, not a lesser check (issue 19).
    fail "/usr/bin/python3 has no h5py: cannot check $path (cmake/install-deps.sh installs python3-h5py)"
  fi
}

# Both jobs run from a directory outside the checkout that holds the user's configuration (the
# paper's sine job, under another name), as a user of an installed simmer would (issue 36).
work=$tmp/work
mkdir -p "$work"
cp "$root/jobs/sine_retrofit.ini" "$work/my_sine.ini"
unset SIMMER_HOME SIMMER_BIN SIMMER_PROJECT_DIR SIMMER_CONFIG SIMMER_OUTPUT_DIR

# (1) One run: simmer.sbatch as cmake --install puts it in a prefix; it knows the prefix (its
# simmer_mpi and job library), so it needs nothing but the configuration and the output directory.
build=$(dirname "$(dirname "$bin")")
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log"; fail "cmake --install $build --prefix $tmp/prefix failed"; }
[ -x "$tmp/prefix/bin/simmer_mpi" ] || fail "cmake --install put no bin/simmer_mpi in $tmp/prefix"
SIMMER_CONFIG=my_sine.ini SIMMER_OUTPUT_DIR=$tmp/single
export SIMMER_CONFIG SIMMER_OUTPUT_DIR
submit single "$tmp/prefix/share/simmer/jobs/slurm/simmer.sbatch" --output="$tmp/single-%j.out" -- "${overrides[@]}"
grep -q "$tmp/prefix/bin/simmer_mpi" "$tmp"/single-*.out \
  || fail "the installed simmer.sbatch did not run the installed simmer_mpi: $(cat "$tmp"/single-*.out)"
shopt -s nullglob
archives=("$tmp"/single/my_sine-*.h5)
[ ${#archives[@]} = 1 ] || fail "simmer.sbatch: expected one archive in $tmp/single, found ${#archives[@]}"
check_archive "${archives[0]}"

# (2) The seed study: the checkout's simmer_array.sbatch, array tasks 0 and 1, found through
# SIMMER_HOME (the checkout) with the executable under test in SIMMER_BIN.
SIMMER_HOME=$root SIMMER_BIN=$bin SIMMER_OUTPUT_DIR=$tmp/array
export SIMMER_HOME SIMMER_BIN SIMMER_OUTPUT_DIR
submit array "$root/jobs/slurm/simmer_array.sbatch" --array=0-1 --output="$tmp/array-%A_%a.out" \
  -- "${overrides[@]}"
array_id=$(head -n1 "$tmp/array.sbatch-out" | cut -d';' -f1)
for k in 0 1; do
  a="$tmp/array/my_sine-${array_id}_$k.h5"
  # Each task's own exit code, as far as slurmctld still remembers the job (MinJobAge).
  code=$(timeout 10 scontrol show job "${array_id}_$k" 2>/dev/null | grep -o ' ExitCode=[0-9:]*' | head -n1)
  [ -z "$code" ] || [ "$code" = " ExitCode=0:0" ] || fail "array task $k:$code"
  check_archive "$a" "$((1 + k))"
done
if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
  /usr/bin/python3 - "$tmp/array/my_sine-${array_id}_0.h5" "$tmp/array/my_sine-${array_id}_1.h5" <<'PY' \
    || fail "the two array tasks produced the same networks (seeds not applied?)"
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r")["posterior/params"][()] for p in sys.argv[1:3])
sys.exit(0 if a.shape != b.shape or not np.array_equal(a, b) else 1)
PY
fi

log "PASS: an installed simmer.sbatch and the checkout's simmer_array.sbatch (array 0-1) ran under SLURM from $work and wrote valid archives"
exit 0
