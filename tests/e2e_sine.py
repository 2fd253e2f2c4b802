#!/usr/bin/python3
"""simmer_sine at reduced length, end to end: exits 0, prints finite losses, and learns the sine:
the ensemble's test MSE is far below the targets' variance (~0.5 for sin(2 pi x) on [-1, 1]) and
near the noise (sd 0.1, variance 0.01). (It replaced a pass regular expression, which ignored the
exit code and accepted any number.)

usage: e2e_sine.py SIMMER_SINE
"""
import re
import subprocess
import sys

p = subprocess.run([sys.argv[1], "--adam-epochs", "300", "--steps", "2000", "--window", "500"],
                   capture_output=True, text=True, timeout=300)
print(p.stdout, p.stderr)
if p.returncode != 0:
    sys.exit(f"FAIL: simmer_sine exited {p.returncode}")
m = re.search(r"ensemble last SSE +([0-9.eE+-]+) +test MSE ([0-9.eE+-]+)", p.stdout)
a = re.search(r"Adam +train SSE +([0-9.eE+-]+) +test MSE ([0-9.eE+-]+)", p.stdout)
if not m or not a:
    sys.exit("FAIL: the output has no Adam and ensemble lines")
values = [float(x) for x in (*a.groups(), *m.groups())]
if not all(v == v and abs(v) < float("inf") for v in values):
    sys.exit(f"FAIL: a loss is not finite: {values}")
ensemble_mse = values[3]
if not ensemble_mse < 0.1:
    sys.exit(f"FAIL: the ensemble's test MSE {ensemble_mse} is not below 0.1: it did not learn the sine")
print(f"e2e: exit 0, finite losses, ensemble test MSE {ensemble_mse} < 0.1")
