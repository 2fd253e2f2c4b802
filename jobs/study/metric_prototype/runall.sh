#!/bin/bash
# The whole prototype (about 50 min on one core): setup, ten variants, the summary, the drift check;
# then the rebuilt-metric study (about 35 min more).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
cd "$(dirname "${BASH_SOURCE[0]}")"
P=/usr/bin/python3
$P setup.py
$P run.py unit_A unit A 10
$P run.py lr20_A lr20 A 10
$P run.py lr20_B lr20 B 10 0.1414
$P run.py dense_A dense A 10
$P run.py dense_B dense B 10 1.0
$P run.py lr60_A lr60 A 10
$P run.py lr60_B lr60 B 10 0.1414
$P run.py unit_B unit B 10 0.1414
$P run.py unit_A_tau100 unit A 100
$P run.py unit_A_tau1000 unit A 1000
$P summarize.py -v
$P drift.py
# A metric rebuilt along the trajectory (README, last section; about 35 min more on one core):
# unit masses at the equal budget of 30 000 gradients per trajectory (window: its last 20 000) and a long reference
NSTEP=30000 WIN=20000 $P run.py unit_A_G30k unit A 10
NSTEP=100000 WIN=80000 $P run.py unit_A_ref unit A 10
# rebuild_runs.sh NAME k r f iterations-per-rebuild v-mode: the same budget, steps = 30000 / (1 + 2(k+1)·iterations/r);
# fixed_k8_f01 (r = 100000) is never rebuilt: the constant-metric control
for a in "rb_k20_r10_f05 20 10 0.05 1 map" "rb_k20_r20_f05 20 20 0.05 1 map" "rb_k20_r5_f05 20 5 0.05 1 map" \
         "rb_k20_r10_f05_n2 20 10 0.05 2 map" "rb_k20_r10_f02 20 10 0.02 1 map" "rb_k20_r10_f20 20 10 0.2 1 map" \
         "rb_k40_r10_f05 40 10 0.05 1 map" "rb_k8_r5_f05 8 5 0.05 1 map" "rb_k8_r5_f05_keep 8 5 0.05 1 keep" \
         "rb_k8_r5_f05_refresh 8 5 0.05 1 refresh" "rb_k20_r10_f02_refresh 20 10 0.02 1 refresh" \
         "rb_k8_r25_f01_keep 8 25 0.01 1 keep" "rb_k8_r1_f05_keep 8 1 0.05 1 keep" "fixed_k8_f01 8 100000 0.01 1 keep"; do
  ./rebuild_runs.sh $a
done
$P summarize_rebuild.py unit_A_ref unit_A_G30k unit_A fixed_k8_f01 rb_k20_r10_f05 rb_k20_r20_f05 rb_k20_r5_f05 rb_k20_r10_f05_n2 \
   rb_k20_r10_f02 rb_k20_r10_f20 rb_k40_r10_f05 rb_k8_r5_f05 rb_k8_r5_f05_keep rb_k8_r5_f05_refresh rb_k20_r10_f02_refresh \
   rb_k8_r25_f01_keep rb_k8_r1_f05_keep > summary_rebuild.txt
