#!/usr/bin/python3
"""Long windows at T_Bayes (docs/MIXING.md, "Windows that long do it"): the sine or Auto-MPG M with
the study's shared settings, one rung at T_Bayes (noise sd measured on validation), the automatic
step and the massive thermostat, 8 trajectories; then per run the verdict counts, T_conf/T, the
split-R-hat of each trajectory's member series (training loss, test metric), the bulk ESS of the
loss, and the rung's test NLL and MSE beside the fair deep ensemble's (Adam alone for the run's
whole gradient budget, early-stopped on validation: jobs/study/study_fair_deep.py's rule).

usage: long_window.py CASE STEPS WINDOW STORE_EVERY SEED [SEED ...]
  CASE  sine | autompg_m;  e.g. long_window.py sine 1000000 800000 1000 1 2 3 4  (6-7 min a seed
        on one core), long_window.py autompg_m 300000 240000 300 1  (16 min)
environment: SIMMER_MPI, SIMMER_LONG_DIR (archives; default runs/long_window), SIMMER_TIME_STEP
(default auto; 0.002 is the paper's step, for the side-by-side ESS per second), SIMMER_STRIDE
(ensemble.stride, default 1: every step of the window a member; WINDOW/3000 keeps 3 000 members and
halves the sine's wall time, the same trajectories, verdicts from the thinned series),
SIMMER_STEP_FRACTION (simmer.step_fraction of the automatic step, default the program's 0.2),
SIMMER_FAIR_DEEP (0: leave out the fair deep ensemble, for a comparison of steps alone),
SIMMER_SPLITTING (simmer.splitting, default the program's), SIMMER_THERMOSTAT (simmer.thermostat,
default massive_nose_hoover_langevin), SIMMER_FRICTION (simmer.friction, for langevin).
"""
import math
import os
import re
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The fair deep ensemble's rule, the archive's configuration text, the paths and the environment.
from study_common import UNBOUND  # noqa: E402
from study_fair_deep import ENV, ROOT, SIMMER, config_text, fair_deep_ensemble  # noqa: E402

OUT = os.environ.get("SIMMER_LONG_DIR", os.path.join(ROOT, "runs", "long_window"))
STEP = os.environ.get("SIMMER_TIME_STEP", "auto")
STRIDE = os.environ.get("SIMMER_STRIDE", "1")
FRACTION = os.environ.get("SIMMER_STEP_FRACTION")
FAIR = os.environ.get("SIMMER_FAIR_DEEP", "1") != "0"
SPLITTING = os.environ.get("SIMMER_SPLITTING")
THERMOSTAT = os.environ.get("SIMMER_THERMOSTAT", "massive_nose_hoover_langevin")
FRICTION = os.environ.get("SIMMER_FRICTION")
JOBS = {"sine": ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini")],
        "autompg_m": ["--config", os.path.join(ROOT, "jobs/autompg_m_retrofit.ini"),
                      "--data.path", os.path.join(ROOT, "data/auto-mpg.csv")]}
SHARED = ["--run.precision", "float32", "--data.validation_fraction", "0.2", "--simmer.prior", "gaussian",
          "--simmer.prior_sigma", "1", "--simmer.prior_scaling", "fan_in", "--simmer.start_velocity", "thermal",
          "--simmer.temperature_unit", "posterior", "--simmer.noise_sd", "auto", "--run.trajectories", "8",
          "--simmer.ladder", "1", "--simmer.thermostat", THERMOSTAT]
SHARED += [] if FRICTION is None else ["--simmer.friction", FRICTION]


def split_rhat(x, parts=4):
    """Split-R-hat of one series cut into `parts` pieces (the verdict's four quarters)."""
    x = x[np.isfinite(x)]
    n = len(x) // parts
    c = np.array([x[i * n:(i + 1) * n] for i in range(parts)])
    w = c.var(axis=1, ddof=1).mean()
    return math.sqrt(((n - 1) / n * w + n * c.mean(axis=1).var(ddof=1) / n) / w)


def text(v):
    """A verdict, which the archive holds as characters (one per element)."""
    return v.astype("S1").tobytes().decode().rstrip("\x00")


def simmer(args, log):
    t0 = time.time()
    with open(log, "w") as f:
        rc = subprocess.call(["mpirun", "--oversubscribe", "-n", "1"] + UNBOUND + [SIMMER] + args, stdout=f,
                             stderr=subprocess.STDOUT, cwd=ROOT, env=ENV)
    if rc != 0:
        sys.exit(f"{log}: exit {rc}")
    return time.time() - t0


def main(case, steps, window, every, seeds):
    os.makedirs(OUT, exist_ok=True)
    for seed in seeds:
        tags = (("" if STRIDE == "1" else "-stride" + STRIDE) + ("" if FRACTION is None else "-fraction" + FRACTION) +
                ("" if SPLITTING is None else "-" + SPLITTING) +
                ("" if THERMOSTAT.startswith("massive") else "-" + THERMOSTAT) +
                ("" if FRICTION is None else "-g" + FRICTION))
        path = os.path.join(OUT, f"{case}-{steps}-h{STEP}{tags}-seed{seed}.h5")
        wall = simmer(JOBS[case] + SHARED + [
            "--run.seed", seed, "--data.split_seed", seed, "--simmer.time_step", STEP, "--simmer.steps", steps,
            "--ensemble.window", window, "--ensemble.stride", STRIDE, "--ensemble.store_every", every,
            "--run.gather_interval", str(max(1000, int(steps) // 10)), "--run.checkpoint_interval", steps,
            "--output", path, "--overwrite"] + ([] if FRACTION is None else ["--simmer.step_fraction", FRACTION]) +
            ([] if SPLITTING is None else ["--simmer.splitting", SPLITTING]),
            path[:-3] + ".log")
        with h5py.File(path, "r") as f:
            d, rung = f["diagnostics"], f["ladder/rung_0"].attrs
            verdicts = [text(v) for v in d["verdict"][()]]
            ratio = d["configurational_temperature"][()] / d["temperature"][()]
            loss_rhat = [split_rhat(r) for r in d["series_train_loss"][()]]
            metric_rhat = [split_rhat(r) for r in d["series_test_metric"][()]]
            ess = float(d.attrs["bulk_ess_train_loss"])
            h = float(np.median(d["time_step"][()]))
            ini = config_text(f)
            ours = (float(rung["ensemble_test_nll"]), float(rung["ensemble_test_mse"]))
        summary = (f"{case} seed {seed}, {steps} steps (window {window}, h {h:.4g}, {wall:.0f} s): "
                   f"{verdicts.count('stationary')} of {len(verdicts)} stationary; T_conf/T "
                   f"{ratio.min():.2f}-{ratio.max():.2f} ({int(np.sum(np.abs(ratio - 1) <= 0.05))} within 5 %); "
                   f"split-R-hat < 1.1: loss {sum(r < 1.1 for r in loss_rhat)}, test metric "
                   f"{sum(r < 1.1 for r in metric_rhat)}; bulk ESS of the loss {ess:.0f} ({ess / wall:.2f}/s); "
                   f"test NLL {ours[0]:.4g}, MSE {ours[1]:.4g}")
        if not FAIR:
            print(summary, flush=True)
            continue
        # The fair deep ensemble: the run's configuration without the ladder, Adam for its budget.
        budget = int(re.search(r"(?m)^epochs = (\d+)", ini).group(1)) + int(steps)
        fair = path[:-3] + "-fair_deep"
        done = fair_deep_ensemble(ini, budget, fair, ranks=1)
        if done.returncode != 0:
            sys.exit(f"{fair}.h5: the fair deep ensemble failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        with h5py.File(fair + ".h5", "r") as g:
            m = g["metrics"].attrs
            theirs = (float(m["deep_ensemble_test_nll"]), float(m["deep_ensemble_test_mse"]))
        print(f"{summary} (fair deep ensemble: NLL {theirs[0]:.4g}, MSE {theirs[1]:.4g})", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 6 or sys.argv[1] not in JOBS:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
