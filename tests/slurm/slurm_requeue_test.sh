#!/usr/bin/env bash
# Preemption under a real SLURM on localhost: a signalled job checkpoints, requeues itself,
# resumes, and ends with the same archive as an uninterrupted run.
#
# Usage: tests/slurm/slurm_requeue_test.sh SIMMER_MPI PROJECT_ROOT
#
#  1. Brings SLURM up as slurm_test.sh does (tests/slurm/slurm_common.sh; needs root unless a
#     SLURM already answers sinfo).
#  2. Reference: a reduced Iris retrofit run (4 trajectories, 10000 steps, a checkpoint every
#     1000) with mpirun -n 2, uninterrupted.
#  3. For jobs/slurm/simmer.sbatch, then jobs/slurm/simmer_array.sbatch (array task 0, whose
#     seeds 1 and 1 are the config's, so the same reference applies): submits the same run with
#     --ntasks=2, waits until the job runs, has a checkpoint and its log shows step >= 3000,
#     then signals it:
#        simmer.sbatch        scancel --signal=TERM --full JOBID   (issue 4's scenario)
#        simmer_array.sbatch  scancel --signal=USR1 --batch JOBID  (what --signal=B:USR1@120
#                                                                   does before a time limit)
#     and waits (bounded) until SLURM has requeued it, it has restarted (SLURM_RESTART_COUNT 1,
#     "resuming at step" in its log) and completed with exit code 0. A requeued job waits for
#     its BeginTime (about now + 120 s on this SLURM); the test moves it to now with
#     `scontrol update JobId=... StartTime=now` (or `scontrol release` if it is held).
#  4. Compares each archive with the reference bit for bit (tests/simmer_test.py compare, the
#     comparator of every bit-identity test, with /usr/bin/python3 and h5py): every object,
#     dataset dtype, shape and bytes, and attribute in both directions; /config except its
#     placement lines; the root's provenance attributes aside.
#  5. Cancels its jobs if any are left, stops the daemons it started, removes its files.
#
# Exit codes: 0 pass, 1 fail, 77 skip (SLURM cannot start here, or /usr/bin/python3 has no h5py).
# Environment:
#   SIMMER_SLURM_KEEP=1            keep the temporary directory (its path is printed)
#   SIMMER_SLURM_SIGNAL="..."      scancel options for simmer.sbatch (default "--signal=TERM --full")
#   SIMMER_SLURM_ARRAY_SIGNAL="..." the same for the array task (default "--signal=USR1 --batch")
#   SIMMER_SLURM_ARRAY=0           skip the array part (25-40 s less)
#   SIMMER_SLURM_BUDGET=seconds    give up (fail) after this long in total (default 270)
# shellcheck disable=SC2317  # functions called from traps
set -uo pipefail

SKIP=77
JOB_NAME="simmer-slurm-requeue-$$"
BUDGET=${SIMMER_SLURM_BUDGET:-270}
SIGNAL_SINGLE=${SIMMER_SLURM_SIGNAL:---signal=TERM --full}
SIGNAL_ARRAY=${SIMMER_SLURM_ARRAY_SIGNAL:---signal=USR1 --batch}
MIN_STEP=3000        # signal once the job's log shows at least this simmering step
PY=/usr/bin/python3  # the system Python, which has h5py (the one on PATH may not)
tmp=""
started=$SECONDS

log() { echo "slurm_requeue_test: [$((SECONDS - started))s] $*"; }
skip() { echo "SKIP: $*"; exit $SKIP; }
fail() {
  echo "FAIL: $*" >&2
  echo "slurm_requeue_test: 0 passed, 1 failed"
  exit 1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/slurm/slurm_common.sh
. "$here/slurm_common.sh"

# ------------------------------------------------------------------- traps and arguments
slurm_setup slurm_requeue_test jobs/iris_retrofit.ini "$@"
[ -f "$here/../simmer_test.py" ] || fail "$here/../simmer_test.py is missing"
"$PY" -c 'import h5py' 2>/dev/null || skip "$PY cannot import h5py (needed to compare the archives)"
command -v mpirun >/dev/null 2>&1 || skip "mpirun is not installed"

slurm_bring_up

remaining() { echo $((BUDGET - (SECONDS - started))); }
over_budget() { [ "$(remaining)" -le 0 ]; }

tmp=$(mktemp -d /tmp/simmer-slurm-requeue.XXXXXX) || fail "mktemp failed"
chmod 755 "$tmp"

if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# Long enough to be signalled mid-way (about 12 s alone on 2 cores: 20000 steps took 23 s and the
# log showed step 3200 5 s after sbatch), checkpoints every 1000 steps, the ranks' signal check
# every 100; progress lines every second so the log shows how far it got.
CONFIG=jobs/iris_retrofit.ini
STEPS=10000
overrides=(--adam.epochs 60 --simmer.steps "$STEPS" --simmer.every 500 --ensemble.window 2000
           --ensemble.fraction 0 --ensemble.stride 5 --ensemble.store_every 2
           --run.trajectories 4 --run.gather_interval 500 --run.checkpoint_interval 1000 --run.checkpoint_budget 1
           --run.sync_every 100 --run.progress_seconds 1)

# ----------------------------------------------------------------- (a) the uninterrupted run
mkdir -p "$tmp/reference"
reference="$tmp/reference/iris_retrofit.h5"
log "reference: mpirun -n 2 $bin --config $CONFIG ${overrides[*]}"
t0=$SECONDS
( cd "$root" && timeout 150 mpirun --oversubscribe -n 2 "$bin" --config "$CONFIG" "${overrides[@]}" \
    --output "$reference" ) > "$tmp/reference/log" 2>&1
rc=$?
if [ $rc != 0 ]; then
  tail -n 20 "$tmp/reference/log"
  fail "the reference run exited with code $rc"
fi
log "reference: done in $((SECONDS - t0)) s"

# --------------------------------------------------------------------------- job helpers
# `scontrol -o show job` of a job (or array task "A_k"): one line, empty if SLURM no longer
# knows it; field LINE NAME picks one field out of it.
job_line() { timeout 10 scontrol -o show job "$1" 2>/dev/null | head -n1; }
field() { grep -o " $2=[^ ]*" <<<"$1" | head -n1 | cut -d= -f2-; }
job_field() { field "$(job_line "$1")" "$2"; }  # jobref name
job_summary() {  # jobref [line]
  local line=${2-$(job_line "$1")}
  grep -oE " (JobState|Reason|Restarts|ExitCode)=[^ ]*" <<<"$line" | tr -d '\n'
}
highest_step() {  # log
  grep -o 'simmer step [0-9]*' "$1" 2>/dev/null | tail -n1 | awk '{ print $3 }'
}
show_log() {  # log
  echo "---- $1 (last 40 lines)"
  tail -n 40 "$1" 2>/dev/null
  echo "----"
}

# Submits SCRIPT, signals it with SCANCEL_OPTS mid-way, waits for its requeue, restart and
# completion, and compares its archive with the reference.
run_case() {  # name script scancel-opts sbatch-options...
  local name=$1 script=$2 sig=$3
  shift 3
  local out="$tmp/$name" jobref logf archive id state step t_sub t_sig t_requeue="" t_start2=""
  local restarts code summary reason line last="" nudged=0 released=0 t_nudge=0 sig_opts
  read -ra sig_opts <<<"$sig"
  mkdir -p "$out"

  log "$name: sbatch --ntasks=2 $* $script ${overrides[*]}"
  t_sub=$SECONDS
  id=$(SIMMER_BIN=$bin SIMMER_CONFIG=$CONFIG SIMMER_OUTPUT_DIR=$out SIMMER_PROJECT_DIR=$root \
       timeout 20 sbatch --parsable --partition="$partition" --ntasks=2 --time=00:10:00 \
         --job-name="$JOB_NAME" --chdir="$tmp" "$@" "$root/$script" "${overrides[@]}" 2>"$tmp/$name.sbatch-err") \
    || { cat "$tmp/$name.sbatch-err"; fail "$name: sbatch failed"; }
  id=${id%%;*}
  if [[ "$script" == *array* ]]; then
    jobref="${id}_0"; logf="$tmp/$name-${id}_0.out"; archive="$out/iris_retrofit-${id}_0.h5"
  else
    jobref=$id; logf="$tmp/$name-$id.out"; archive="$out/iris_retrofit-$id.h5"
  fi
  log "$name: job $jobref submitted"

  # (b) Running, with a checkpoint, and past MIN_STEP: then signal.
  while :; do
    over_budget && fail "$name: time budget (${BUDGET} s) used up waiting for job $jobref to progress ($(job_summary "$jobref"))"
    state=$(job_field "$jobref" JobState)
    step=$(highest_step "$logf")
    case "$state" in
      RUNNING)
        if [ -f "$archive.ckpt" ] && [ "${step:-0}" -ge $MIN_STEP ]; then break; fi ;;
      PENDING|CONFIGURING|"") ;;
      *)
        show_log "$logf"
        fail "$name: job $jobref ended ($state) before it could be signalled at step >= $MIN_STEP (log at step ${step:-?}); raise simmer.steps if this machine is fast" ;;
    esac
    [ $((SECONDS - t_sub)) -lt 120 ] || { show_log "$logf"; fail "$name: job $jobref did not reach step $MIN_STEP within 120 s (state '$state', step ${step:-none})"; }
    sleep 0.2
  done
  t_sig=$SECONDS
  log "$name: job $jobref running, checkpoint present, log at step $step: scancel ${sig_opts[*]} $jobref"
  timeout 10 scancel "${sig_opts[@]}" "$jobref" || fail "$name: scancel ${sig_opts[*]} $jobref failed"

  # (c) Requeued, restarted, completed.
  while :; do
    over_budget && { show_log "$logf"; fail "$name: time budget (${BUDGET} s) used up waiting for job $jobref to requeue and finish (now:$(job_summary "$jobref"))"; }
    [ $((SECONDS - t_sig)) -lt 180 ] || { show_log "$logf"; fail "$name: job $jobref not requeued and completed within 180 s of the signal (now:$(job_summary "$jobref"))"; }
    line=$(job_line "$jobref")
    summary=$(job_summary "$jobref" "$line")
    [ "$summary" = "$last" ] || log "$name: $jobref:${summary:- unknown to scontrol}"
    last=$summary
    state=$(field "$line" JobState)
    restarts=$(field "$line" Restarts)
    case "$state" in
      PENDING|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|SPECIAL_EXIT)
        [ -n "$t_requeue" ] || t_requeue=$SECONDS
        reason=$(field "$line" Reason)
        if [[ "$state" == REQUEUE_HOLD || "$reason" == JobHeld* ]] && [ $released -lt 3 ]; then
          log "$name: $jobref is held ($state, $reason): scontrol release"
          timeout 10 scontrol release "$jobref" || true
          released=$((released + 1))
        elif [ "$state" = PENDING ] && [ $((SECONDS - t_requeue)) -ge 3 ] \
             && [ $((SECONDS - t_nudge)) -ge 5 ] && [ $nudged -lt 5 ]; then
          # A requeued job's BeginTime is ~2 minutes ahead here (CredExpire + 1); start it now,
          # but not in the second of the requeue: slurmd refuses a credential created in the
          # second its job was killed ("Job N already killed, do not launch batch job") and
          # the job then ends FAILED with exit code 1.
          log "$name: $jobref pending ($reason): scontrol update JobId=$jobref StartTime=now"
          timeout 10 scontrol update JobId="$jobref" StartTime=now || true
          nudged=$((nudged + 1)) t_nudge=$SECONDS
        fi ;;
      RUNNING|CONFIGURING|COMPLETING)
        if [ -n "$t_requeue" ] && [ -z "$t_start2" ]; then t_start2=$SECONDS; fi ;;
      COMPLETED)
        [ "${restarts:-0}" -ge 1 ] && break
        show_log "$logf"
        fail "$name: job $jobref completed without being requeued (Restarts=${restarts:-?}): the signal did not stop it" ;;
      "")
        # Forgotten by slurmctld (a reused SLURM with a short MinJobAge): judge by the log.
        if grep -q "(restart 1)" "$logf" 2>/dev/null && grep -q "sbatch: archive " "$logf"; then
          restarts=1; break
        fi ;;
      *)
        show_log "$logf"
        if grep -q "srun: forcing job termination" "$logf"; then
          echo "(srun received the SIGTERM itself and killed the ranks before they could checkpoint;" \
            "the script must requeue from the last periodic checkpoint then: see jobs/README.md)"
        fi
        fail "$name: job $jobref ended $state (ExitCode=$(field "$line" ExitCode), Restarts=${restarts:-?}) instead of requeueing and completing" ;;
    esac
    sleep 0.5
  done
  code=$(job_field "$jobref" ExitCode)
  log "$name: $jobref completed (Restarts=$restarts, ExitCode=${code:-unknown}):" \
    "signal→requeue $(( ${t_requeue:-$SECONDS} - t_sig )) s, signal→restart $(( ${t_start2:-$SECONDS} - t_sig )) s," \
    "signal→done $((SECONDS - t_sig)) s"

  [ -z "$code" ] || [ "$code" = "0:0" ] || { show_log "$logf"; fail "$name: job $jobref exit code $code, expected 0:0"; }
  [ "$restarts" = 1 ] || { show_log "$logf"; fail "$name: job $jobref restarted $restarts times, expected 1"; }
  grep -q "(restart 1)" "$logf" || { show_log "$logf"; fail "$name: no '(restart 1)' (SLURM_RESTART_COUNT=1) in $logf"; }
  grep -q "resuming at step" "$logf" || { show_log "$logf"; fail "$name: no 'resuming at step' in $logf: the requeued job did not resume"; }
  grep -q -- "--resume $archive" "$logf" || { show_log "$logf"; fail "$name: the requeued job did not run simmer_mpi --resume $archive"; }
  # How the first run ended: a checkpoint on the signal (exit 3), or killed by srun (see
  # jobs/README.md) and resumed from the last periodic checkpoint.
  log "$name: first run: $(grep -m1 -oE 'received SIG[A-Z0-9]+ at step [0-9]+|Exited with exit code [0-9]+|tasks [0-9-]+: Killed' "$logf" || echo '?'); $(grep -m1 -o 'resuming at step [0-9]* of [0-9]*' "$logf")"

  # (d) Bit for bit against the reference.
  [ -s "$archive" ] || fail "$name: archive $archive is missing"
  "$PY" "$here/../simmer_test.py" compare "$reference" "$archive" || fail "$name: the resumed archive differs from the uninterrupted run"
}

run_case single jobs/slurm/simmer.sbatch "$SIGNAL_SINGLE" --output="$tmp/single-%j.out"
cases="simmer.sbatch ($SIGNAL_SINGLE)"
if [ "${SIMMER_SLURM_ARRAY:-1}" != 0 ]; then
  # Task 0 with seed bases 1: run.seed = data.split_seed = 1, the config's, as in the reference.
  export SIMMER_SEED_BASE=1 SIMMER_SPLIT_SEED_BASE=1 SIMMER_VARY_SPLIT=1
  run_case array jobs/slurm/simmer_array.sbatch "$SIGNAL_ARRAY" --array=0 --output="$tmp/array-%A_%a.out"
  cases="$cases and simmer_array.sbatch task 0 ($SIGNAL_ARRAY)"
fi

log "PASS: $cases: signalled, requeued, resumed, archive identical to the uninterrupted run ($((SECONDS - started)) s)"
echo "slurm_requeue_test: 1 passed, 0 failed"
exit 0
