#!/usr/bin/env python3
"""Writes data/friedman1.csv: 300 rows of Friedman's first regression problem (Friedman 1991),
y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + e, e ~ N(0, 1), with x1..x10 uniform on
[0, 1] (x6..x10 do not enter y). The noise sd is known (1), so a run's simmer.noise_sd = auto can
be checked against it. Standard library only; the same file on every machine (seed 20261128).
Usage: python3 data/make_friedman1.py [OUT.csv]"""
import math
import random
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "data/friedman1.csv"
rng = random.Random(20261128)
with open(out, "w") as f:
    f.write(",".join(f"x{i}" for i in range(1, 11)) + ",y\n")
    for _ in range(300):
        x = [rng.random() for _ in range(10)]
        y = 10 * math.sin(math.pi * x[0] * x[1]) + 20 * (x[2] - 0.5) ** 2 + 10 * x[3] + 5 * x[4] + rng.gauss(0, 1)
        f.write(",".join(f"{v:.6f}" for v in x) + f",{y:.6f}\n")
