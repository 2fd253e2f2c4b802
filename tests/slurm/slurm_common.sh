# shellcheck shell=bash
# Bringing up (and tearing down) a one-node SLURM on localhost for the tests under tests/slurm.
# Sourced, not run; both slurm_test.sh and slurm_requeue_test.sh use it
# (Debian 12's slurm-wlm and munge, one node, as root; the steps below):
#   - reuses a SLURM that already answers sinfo (then starts and stops nothing);
#   - cancels jobs a killed earlier test run left queued (slurmctld saves its job state, so a
#     requeued test job survives a daemon restart and would hold the node until its time limit);
#   - otherwise, as root: starts munged if munge does not work, writes /etc/slurm/slurm.conf
#     when it is absent or not ours (saving a foreign one as slurm.conf.pre-simmer; the marker
#     line is the one slurm_test.sh writes, so either test recognises the other's file), starts
#     slurmctld and slurmd unless their pid files name live ones, and waits for a usable node.
#
# The caller defines before sourcing:
#   log MESSAGE...   prints a progress line
#   skip REASON      prints "SKIP: REASON" and exits 77
# and afterwards calls slurm_bring_up (sets $partition) and, from its EXIT trap,
# slurm_stop_started_daemons (stops only the daemons slurm_bring_up started).
# shellcheck disable=SC2034,SC2317  # variables used by the caller; functions called from traps

PATH=$PATH:/usr/sbin:/sbin
SLURM_CONF_FILE=/etc/slurm/slurm.conf
SLURM_CONF_MARKER="# simmer tests/slurm/slurm_test.sh: one-node localhost cluster"
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
MUNGED_PID=/run/munge/munged.pid
UP_TIMEOUT=${UP_TIMEOUT:-20}   # seconds the daemons get to bring the node up

started_munged=0 started_ctld=0 started_slurmd=0
partition=""

# A pid file's process, if it is alive and is the named program (guards against pid reuse).
alive_pid() {   # pidfile comm
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$2" ] || return 1
  echo "$pid"
}

stop_daemon() {  # pidfile comm
  local pid _
  pid=$(alive_pid "$1" "$2") || return 0
  log "stopping $2 (pid $pid)"
  kill "$pid" 2>/dev/null
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  log "$2 (pid $pid) ignored SIGTERM for 10 s: SIGKILL"
  kill -9 "$pid" 2>/dev/null
}

# Stops the daemons slurm_bring_up started, never ones that were already running.
slurm_stop_started_daemons() {
  [ "$started_slurmd" = 1 ] && stop_daemon "$SLURMD_PID" slurmd
  [ "$started_ctld" = 1 ] && stop_daemon "$CTLD_PID" slurmctld
  [ "$started_munged" = 1 ] && stop_daemon "$MUNGED_PID" munged
  started_slurmd=0 started_ctld=0 started_munged=0
}

# The first partition's node state as sinfo reports it (idle, mix, alloc, down, drain...), or
# nothing if SLURM does not answer.
node_state() { timeout 10 sinfo -h -o '%t' 2>/dev/null | head -n1 | tr -d '*~#$@^-'; }
usable() { case "$(node_state)" in idle|mix|alloc|comp|completing) return 0 ;; *) return 1 ;; esac; }

# Waits up to UP_TIMEOUT seconds for a usable node, resuming a down/drained one once.
wait_until_usable() {
  local deadline=$((SECONDS + UP_TIMEOUT)) resumed=0 state node
  while [ $SECONDS -lt $deadline ]; do
    usable && return 0
    state=$(node_state)
    if [ $resumed = 0 ] && [[ "$state" =~ ^(down|drain|drng|drained|fail)$ ]]; then
      node=$(timeout 10 sinfo -h -o '%N' 2>/dev/null | head -n1)
      log "node '$node' is $state: scontrol update state=resume"
      timeout 10 scontrol update nodename="$node" state=resume >/dev/null 2>&1
      resumed=1
    fi
    sleep 1
  done
  return 1
}

slurm_diagnostics() {
  local f
  for f in /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log; do
    [ -f "$f" ] && { echo "---- last lines of $f"; tail -n 15 "$f"; }
  done
  timeout 10 sinfo -R 2>&1 | head -n 5
}

# Is a SLURM already answering? (Skip the probe when our own localhost config is in place and
# no slurmctld runs here: sinfo would spend ~9 s retrying before it fails.)
slurm_answers() {
  if [ -f "$SLURM_CONF_FILE" ] && grep -qxF "$SLURM_CONF_MARKER" "$SLURM_CONF_FILE" \
     && command -v pgrep >/dev/null 2>&1 && ! pgrep -x slurmctld >/dev/null 2>&1; then
    return 1
  fi
  timeout 10 sinfo -h >/dev/null 2>&1
}

# Jobs named simmer-slurm-<test>-<pid> (the tests' job names) whose submitting test process is no
# longer alive: left by a run that was killed before its EXIT trap could scancel them. Cancels
# them and waits (up to 30 s) for them to leave the queue. A concurrent test's jobs are kept.
cancel_stale_test_jobs() {
  local id name pid stale=() _
  while read -r id name; do
    [[ "$name" =~ ^simmer-slurm-[a-z]+-([0-9]+)$ ]] || continue
    pid=${BASH_REMATCH[1]}
    [ "$pid" != "$$" ] && kill -0 "$pid" 2>/dev/null && continue
    stale+=("$id")
  done < <(timeout 10 squeue -h -o '%A %j' 2>/dev/null)
  [ ${#stale[@]} -gt 0 ] || return 0
  log "cancelling ${#stale[@]} job(s) left by an earlier test run: ${stale[*]}"
  timeout 10 scancel "${stale[@]}" >/dev/null 2>&1
  for _ in $(seq 30); do
    [ -z "$(timeout 10 squeue -h -j "$(IFS=,; echo "${stale[*]}")" -o '%A' 2>/dev/null)" ] && return 0
    sleep 1
  done
  log "the cancelled jobs are still in the queue after 30 s (squeue: $(timeout 10 squeue -h -o '%A %j %T' 2>&1 | tr '\n' ';'))"
}

# Skips (exit 77 through the caller's skip) when a SLURM client or daemon is not installed, when
# SLURM is not running and this is not root, or when the daemons do not bring a node up.
# Sets $partition (the default partition, else the first one).
slurm_bring_up() {
  local b pid cpus mem_mb force
  for b in sinfo sbatch srun scontrol scancel squeue slurmctld slurmd munged munge unmunge; do
    command -v "$b" >/dev/null 2>&1 || skip "'$b' is not installed (cmake/install-deps.sh --with-slurm installs slurm-wlm and munge)"
  done

  if slurm_answers; then
    log "SLURM is already running: reusing it"
    wait_until_usable || skip "the running SLURM has no usable node (state '$(node_state)') after ${UP_TIMEOUT} s"
  else
    [ "$(id -u)" -eq 0 ] || skip "SLURM is not running and starting slurmctld/slurmd needs root"
    log "starting munge, slurmctld and slurmd on localhost"
    mkdir -p /var/spool/slurmd /var/spool/slurmctld /run/munge /var/log/slurm
    chown munge:munge /run/munge
    if [ ! -f /etc/munge/munge.key ]; then
      mungekey -c || skip "cannot create /etc/munge/munge.key"
    fi
    chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key

    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
      force=()
      # A socket left by a munged that died would make the new one refuse to start.
      [ -S /run/munge/munge.socket.2 ] && force=(--force)
      su munge -s /bin/sh -c "/usr/sbin/munged ${force[*]}" || skip "munged failed to start"
      started_munged=1
      for _ in $(seq 25); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.2; done
      munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || skip "munged started but munge/unmunge does not work"
    fi

    if [ ! -f "$SLURM_CONF_FILE" ] || ! grep -qxF "$SLURM_CONF_MARKER" "$SLURM_CONF_FILE"; then
      if [ -f "$SLURM_CONF_FILE" ] && [ ! -f "$SLURM_CONF_FILE.pre-simmer" ]; then
        cp -p "$SLURM_CONF_FILE" "$SLURM_CONF_FILE.pre-simmer"
        log "saved the existing $SLURM_CONF_FILE as $SLURM_CONF_FILE.pre-simmer"
      fi
      # A one-node configuration, with this machine's CPU count and memory (a node that
      # declares more than it has is drained) and log files for diagnostics.
      cpus=$(nproc)
      mem_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
      [ "$mem_mb" -gt 20000 ] && mem_mb=20000
      mkdir -p "$(dirname "$SLURM_CONF_FILE")"
      cat > "$SLURM_CONF_FILE" <<EOF
$SLURM_CONF_MARKER
ClusterName=local
SlurmctldHost=localhost
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmUser=root
ReturnToService=2
MpiDefault=none
NodeName=localhost CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
      log "wrote $SLURM_CONF_FILE (CPUs=$cpus RealMemory=$mem_mb)"
    fi

    if pid=$(alive_pid "$CTLD_PID" slurmctld); then
      log "slurmctld is already running (pid $pid): leaving it"
    else
      slurmctld || { slurm_diagnostics; skip "slurmctld failed to start"; }
      started_ctld=1
    fi
    if pid=$(alive_pid "$SLURMD_PID" slurmd); then
      log "slurmd is already running (pid $pid): leaving it"
    else
      slurmd || { slurm_diagnostics; skip "slurmd failed to start"; }
      started_slurmd=1
    fi
    wait_until_usable || { slurm_diagnostics; skip "slurmctld/slurmd did not bring the node up within ${UP_TIMEOUT} s (state '$(node_state)')"; }
  fi

  cancel_stale_test_jobs

  partition=$(timeout 10 sinfo -h -o '%P' | sed -n 's/\*$//p' | head -n1)
  [ -n "$partition" ] || partition=$(timeout 10 sinfo -h -o '%P' | head -n1)
  log "SLURM is up: partition '$partition', node state '$(node_state)'"
}

# The start every SLURM test script shares: `slurm_setup NAME JOB_FILE SCRIPT_ARGS...` traps the
# exit (the test's jobs cancelled by JOB_NAME, the daemons it started stopped, its directory $tmp
# removed unless SIMMER_SLURM_KEEP=1) and interrupts, then reads SCRIPT_ARGS as SIMMER_MPI
# PROJECT_ROOT into $bin and $root, checking the job scripts and JOB_FILE are there. Uses the
# script's log and fail.
slurm_cleanup() {
  trap - EXIT INT TERM
  # Jobs this test submitted that are still queued or running (after a failure or timeout).
  if [ -n "$tmp" ]; then timeout 5 scancel --name="$JOB_NAME" >/dev/null 2>&1; fi
  slurm_stop_started_daemons
  if [ -n "$tmp" ] && [ -d "$tmp" ]; then
    if [ "${SIMMER_SLURM_KEEP:-0}" = 1 ]; then log "kept $tmp"; else rm -rf "$tmp"; fi
  fi
}

slurm_setup() {
  local name=$1 job=$2
  shift 2
  trap slurm_cleanup EXIT
  # shellcheck disable=SC2064  # the name is fixed now
  trap "echo \"$name: interrupted\" >&2; exit 1" INT TERM
  [ $# -eq 2 ] || { echo "usage: $0 SIMMER_MPI PROJECT_ROOT" >&2; exit 2; }
  bin=$(realpath -e "$1" 2>/dev/null) || fail "simmer_mpi '$1' does not exist (build it first)"
  [ -x "$bin" ] || fail "'$bin' is not executable"
  root=$(realpath -e "$2" 2>/dev/null) || fail "project root '$2' does not exist"
  local f
  for f in jobs/slurm/simmer.sbatch jobs/slurm/simmer_array.sbatch "$job"; do
    [ -f "$root/$f" ] || fail "$root/$f is missing"
  done
}
