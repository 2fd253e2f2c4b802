#!/bin/bash
# The whole prototype (about 50 min on one core): setup, ten variants, the summary, the drift check.
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
