#!/bin/bash
# Rebuilt low-rank metric vs unit masses at an equal budget of G gradient evaluations per trajectory
# (window = the last GW of them). usage: [taskset -c 1] rebuild_runs.sh NAME k r f niter vmode
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
cd "$(dirname "${BASH_SOURCE[0]}")"
G=${G:-30000} GW=${GW:-20000} /usr/bin/python3 run_rebuild.py "$@" > "$1.log" 2>&1
