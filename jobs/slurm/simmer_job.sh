# shellcheck shell=bash
# What both SLURM scripts share (sourced by simmer.sbatch and simmer_array.sbatch from
# SIMMER_HOME: an install's share/simmer/jobs/slurm/ or a checkout's jobs/slurm/): finding
# simmer_mpi, environment modules, checks, signal forwarding, and requeueing a stopped run.
# The caller sets PROG (its name for messages), PROJECT_DIR, SIMMER_HOME, CONFIG, SIMMER_MPI,
# MODULES, and later OUTPUT and REQUEUE_REF (the job or array task scontrol requeues).

die() { echo "$PROG: error: $*" >&2; exit 2; }

# Loads the environment modules in $MODULES (space separated), finding `module` if needed.
simmer_load_modules() {
  [ -n "$MODULES" ] || return 0
  if ! command -v module >/dev/null 2>&1; then
    for init in /etc/profile.d/lmod.sh /etc/profile.d/modules.sh /usr/share/lmod/lmod/init/bash; do
      # shellcheck disable=SC1090
      if [ -f "$init" ]; then set +u; . "$init"; set -u; break; fi
    done
  fi
  command -v module >/dev/null 2>&1 || die "MODULES='$MODULES' is set but no 'module' command exists"
  read -ra modules <<<"$MODULES"
  set +u; module load "${modules[@]}" || die "module load $MODULES failed"; set -u
}

# SIMMER_MPI when SIMMER_BIN left it empty: SIMMER_HOME's install (bin/) or build (build/src/),
# else simmer_mpi on PATH.
simmer_find_binary() {
  [ -z "$SIMMER_MPI" ] || return 0
  for candidate in "$SIMMER_HOME/bin/simmer_mpi" "$SIMMER_HOME/build/src/simmer_mpi"; do
    if [ -x "$candidate" ]; then SIMMER_MPI=$candidate; return 0; fi
  done
  SIMMER_MPI=simmer_mpi
}

# simmer_mpi and the config must exist: fail before srun, with a message that says where.
simmer_check_inputs() {
  if [[ "$SIMMER_MPI" != */* ]]; then
    resolved=$(command -v "$SIMMER_MPI" 2>/dev/null) || die "simmer_mpi is neither in SIMMER_HOME='$SIMMER_HOME' (bin/ or build/src/) nor on PATH: set SIMMER_HOME to simmer's install prefix or checkout, or SIMMER_BIN to the executable"
    SIMMER_MPI=$resolved
  fi
  [ -f "$SIMMER_MPI" ] || die "simmer_mpi not found at '$SIMMER_MPI' (from $PWD); build it (cmake --build build) or set SIMMER_BIN"
  [ -x "$SIMMER_MPI" ] || die "'$SIMMER_MPI' is not executable"
  [ -f "$CONFIG" ] || die "config '$CONFIG' not found (from $PWD); set SIMMER_CONFIG (relative to the submit directory, or absolute)"
  # OpenMPI refuses to run as root unless told (containers, test machines).
  if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
}

# The arguments of this (possibly requeued) run: resume from the checkpoint, start again over
# this run's own unfinished archive, or start. "$@": the arguments of a fresh start.
simmer_args() {
  # Ranks per trajectory (run.ranks_per_trajectory): only when asked, so a config's own value
  # stands otherwise. A resume may change it (placement, not science).
  local share=()
  if [ -n "${RANKS_PER_TRAJECTORY:-}" ]; then share=(--run.ranks_per_trajectory "$RANKS_PER_TRAJECTORY"); fi
  if [ -f "$OUTPUT" ] && [ -f "$OUTPUT.ckpt" ]; then
    # Requeued: continue from the last checkpoint (the archive holds the config, seeds included).
    args=(--resume "$OUTPUT" "${share[@]}")
  elif [ -f "$OUTPUT" ] && [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then
    # Requeued before its first checkpoint (e.g. a node failure during set-up): the archive is
    # this run's own unfinished one; start again.
    args=(--config "$CONFIG" --output "$OUTPUT" --overwrite "${share[@]}" "$@")
  else
    args=(--config "$CONFIG" --output "$OUTPUT" "${share[@]}" "$@")
  fi
}

# Runs simmer_mpi under srun with the arguments in ${args[@]}; sets status and stop_requested.
# --mpi=$SIMMER_SRUN_MPI (default pmix; pmi2 where the site's SLURM has no PMIx): a plain srun
# cannot start OpenMPI ranks. srun runs in the background so the shell
# can pass a stop signal on to the ranks (bash runs traps only between commands): srun forwards
# SIGUSR1 to every task. (srun itself must not get SIGTERM: it answers it by killing the tasks,
# see jobs/README.md.)
simmer_srun() {
  echo "$PROG: $SIMMER_MPI ${args[*]}"
  stop_requested=0 interrupted=0 srun_pid=""
  forward() {
    stop_requested=1 interrupted=1
    if [ -n "$srun_pid" ]; then kill -USR1 "$srun_pid" 2>/dev/null || true; fi
  }
  trap forward USR1 TERM
  srun --mpi="${SIMMER_SRUN_MPI:-pmix}" "$SIMMER_MPI" "${args[@]}" &
  srun_pid=$!
  # A signal that came before srun's pid was known: pass it on now.
  if [ "$stop_requested" = 1 ]; then kill -USR1 "$srun_pid" 2>/dev/null || true; fi
  while :; do
    interrupted=0
    if wait "$srun_pid"; then status=0; else status=$?; fi
    # A trapped signal cuts wait short (status > 128): wait again for srun's own exit status.
    if [ "$interrupted" = 1 ] && [ "$status" -gt 128 ]; then continue; fi
    break
  done
  trap - USR1 TERM
}

# Stopped but not requeued: exit 3 if a checkpoint exists (say how to resume), else srun's status.
simmer_not_requeued() {
  if [ -f "$OUTPUT.ckpt" ]; then
    echo "$PROG: resume by hand (jobs/README.md): mpirun ... $SIMMER_MPI --resume $OUTPUT" >&2
    exit 3
  fi
  exit "$status"
}

# Requeues $REQUEUE_REF when simmer_mpi stopped after a checkpoint (exit code 3), or when a stop
# signal came and the ranks were killed instead (status 1 or > 128: srun answers a SIGTERM of its
# own by killing them; a signal in the first fraction of a second, before simmer_mpi handles
# signals, kills them too). The requeued run resumes from the last checkpoint (same result), or
# starts again if there is none. Only while SLURM still shows it RUNNING: one being cancelled (or
# killed at its time limit) shows COMPLETING, and scontrol would requeue it all the same, undoing
# an scancel (whose SIGTERM also makes the ranks checkpoint and exit 3). Then exits: 0 requeued
# or finished, srun's status otherwise.
simmer_finish() {
  requeue=0
  if [ "$status" -eq 3 ]; then
    requeue=1
  elif [ "$stop_requested" = 1 ] && { [ "$status" -eq 1 ] || [ "$status" -gt 128 ]; }; then
    if [ -f "$OUTPUT.ckpt" ]; then
      echo "$PROG: the ranks were killed (status $status) after a stop signal; the last" \
        "checkpoint ($OUTPUT.ckpt) is kept"
    else
      echo "$PROG: the ranks were killed (status $status) after a stop signal, before a checkpoint"
    fi
    requeue=1
  fi
  if [ "$requeue" = 1 ]; then
    [ -n "$REQUEUE_REF" ] || { echo "$PROG: not a SLURM job: cannot requeue" >&2; simmer_not_requeued; }
    state=$(scontrol -o show job "$REQUEUE_REF" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -n1 | cut -d= -f2) || state=""
    case "$state" in
      RUNNING|"") ;;
      *)
        echo "$PROG: $REQUEUE_REF is $state (being cancelled or killed): not requeueing" >&2
        simmer_not_requeued ;;
    esac
    echo "$PROG: stopped by a signal; requeueing $REQUEUE_REF"
    for attempt in 1 2 3; do
      if scontrol requeue "$REQUEUE_REF"; then exit 0; fi
      [ "$attempt" = 3 ] || sleep 2
    done
    echo "$PROG: requeue failed" >&2
    simmer_not_requeued
  fi
  [ "$status" -eq 0 ] || exit "$status"
  echo "$PROG: archive $(realpath -m "$OUTPUT")"
  exit 0
}
