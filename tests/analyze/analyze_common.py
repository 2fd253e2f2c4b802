"""Shared by tests/analyze/test_analyze.py and tests/analyze/test_analyze_files.py: the small Iris
and sine runs, the launchers, CSV and points-file helpers, an independent numpy transcription of
ArviZ's split-R-hat and ESS (with rank normalisation), the summary's line finders, and the
module-scoped fixtures of the runs several tests read (never write)."""
import csv
import io
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402  (tests/simmer_test.py: ENV, fail, archive comparison, ...)

SIMMER, ANALYZE, ROOT = st.SIMMER_MPI, st.SIMMER_ANALYZE, st.ROOT
ENV = st.ENV
opts, fail = st.opts, st.fail

# Small Iris retrofit run: every member stored (float64), a stride so members are deterministic.
IRIS_SMALL = st.iris_small(3)
SINE_SMALL = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50",
              "--simmer.steps", "300", "--simmer.every", "50", "--ensemble.window", "100",
              "--ensemble.store_every", "1", "--run.trajectories", "3", "--run.gather_interval", "70"]


def write_idx(dirname, part, n, rng):
    st.write_idx(dirname, part, n, rng, gz_images=False)


def simmer(ranks, args):
    st.run(SIMMER, ranks, args)


def analyze(args, ranks=None, expect=0):
    return st.run(ANALYZE, ranks, args, expect=expect)


def read_csv(text):
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def write_points(path, names, x, extra=True):
    """The points with their feature columns in reverse order, plus an ignored text column."""
    with open(path, "w") as fh:
        cols = list(reversed(range(len(names))))
        fh.write(",".join((["label"] if extra else []) + [names[j] for j in cols]) + "\n")
        for row in x:
            fh.write(",".join((["ignored"] if extra else []) + [repr(float(row[j])) for j in cols]) + "\n")


def names_of(f, key):
    return st.strings(f[key])


# --- ArviZ's split-R-hat and ESS ('mean'), transcribed to numpy independently of the C++ ---------
def _split(a):
    h = a.shape[1] // 2
    return np.concatenate([a[:, :h], a[:, -h:]])


def rhat(a):
    a = _split(np.asarray(a, float))
    n = a.shape[1]
    b = n * np.var(a.mean(1), ddof=1)
    w = np.mean(np.var(a, axis=1, ddof=1))
    return np.sqrt((b / w + n - 1) / n)


def ess(a):
    a = _split(np.asarray(a, float))
    m, n = a.shape
    c = a - a.mean(1, keepdims=True)
    acov = np.array([[np.sum(r[:n - t] * r[t:]) / n for t in range(n)] for r in c])
    mean_var = acov[:, 0].mean() * n / (n - 1)
    var_plus = mean_var * (n - 1) / n + np.var(a.mean(1), ddof=1)
    rho = np.zeros(n)
    rho[0] = even = 1.0
    rho[1] = odd = 1 - (mean_var - acov[:, 1].mean()) / var_plus
    t = 1
    while t < n - 3 and even + odd > 0:
        even = 1 - (mean_var - acov[:, t + 1].mean()) / var_plus
        odd = 1 - (mean_var - acov[:, t + 2].mean()) / var_plus
        if even + odd >= 0:
            rho[t + 1], rho[t + 2] = even, odd
        t += 2
    max_t = t - 2
    if even > 0:
        rho[max_t + 1] = even
    t = 1
    while t <= max_t - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = rho[t + 2] = (rho[t - 1] + rho[t]) / 2
        t += 2
    tau = -1 + 2 * rho[:max_t + 1].sum() + rho[max_t + 1:max_t + 2].sum()
    return m * n / max(tau, 1 / np.log10(m * n))


# Rank normalisation (Vehtari et al. 2021, ArviZ's _z_scale) on top of the transcription above.
def z_scale(a):
    from scipy.stats import norm, rankdata
    a = np.asarray(a, float)
    ranks = rankdata(a, method="average").reshape(a.shape)
    return norm.ppf((ranks - 0.375) / (a.size + 0.25))


def bulk_ess(a):
    return ess(z_scale(a))


def rank_rhat(a):
    a = np.asarray(a, float)
    return max(rhat(z_scale(a)), rhat(z_scale(np.abs(a - np.median(a)))))


def next_line(text, line):
    lines = text.splitlines()
    return lines[lines.index(line) + 1] if line in lines and lines.index(line) + 1 < len(lines) else ""


def diagnostics_line(text, which):
    for line in text.splitlines():
        if line.strip().startswith(which):
            return line
    fail(f"summary has no '{which}' line:\n{text}")


# --- Runs several tests read (never write): one per module in a by-hand run ----------------------
# (CTest runs each test in its own pytest process, so there each test makes its own.)
# The small Iris (IRIS_SMALL) and sine (SINE_SMALL) runs on 2 ranks: the archives' paths.
iris_run = st.shared_archive(lambda path: simmer(2, opts(IRIS_SMALL, "--output", path)), "iris.h5")
sine_run = st.shared_archive(lambda path: simmer(2, opts(SINE_SMALL, "--output", path)), "sine.h5")
