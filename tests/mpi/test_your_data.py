#!/usr/bin/python3
"""A new user's own CSV at the defaults (issue 36; docs/YOUR_DATA.md), each a pytest function and
one CTest test (tests/conftest.py says how to run them by hand). The runs are shortened on the
command line (epochs, steps, window); every other key is the default: all rows, a validation
split, model.architecture = auto, the ladder in posterior units at the automatic step,
simmer.noise_sd = auto.

tests: regression      jobs/your_data.ini (data/friedman1.csv: path and target only): the rows
                       line (300 read; train 192, validation 48, test 60), the measured noise line,
                       the result and the deep-ensemble comparison; in the archive the resolved
                       architecture and loss, /metrics noise_sd with its source, equal to the deep
                       ensemble's own validation noise estimate (computed by other code), and
                       T_Bayes = 2 s^2 / n from it
       classification  a 300-row CSV with three classes (path, target, task): 240 rows of which
                       48 validation, 60 test, cce and features-64-64-classes
       unused_rows     a fixed data.train + data.test below the rows says how many are unused
       quickstart_warnings  the quick start's job (jobs/iris_abinitio.ini on 36 ranks, shortened):
                       at most 3 warning lines, whatever the number of ranks that warn (36 "slow
                       to heat" lines before: one per rank)
       fair_deep_ensemble  docs/YOUR_DATA.md's early-stopped deep ensemble (simmer.mode = adam at the
                       defaults: the default ladder is not used, the noise is measured, no
                       automatic step is chosen), shortened
       adam_keep       adam.keep = best_validation end to end: on the sine, overfit by 3000 epochs at
                       lr 0.01, each Adam network kept is at least as good on the validation rows as
                       the last epoch's (the last is a candidate) and better for at least one, and
                       the networks differ; keep = last (the break) gives the same networks
       noise_resume    simmer.noise_sd = auto across a stop after Adam and a resume on another
                       rank count: the archive equals an uninterrupted one-rank run's (so the
                       measured noise, checkpointed, is the same on every rank count)
"""
import os
import random
import re
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ROOT = st.SIMMER_MPI, st.ROOT
JOB = os.path.join(ROOT, "jobs", "your_data.ini")
# Seconds, not minutes: the recipe's shape (five rungs, eight Adam networks in the job) kept.
SHORT = ["--adam.epochs", "300", "--simmer.steps", "300", "--ensemble.window", "200", "--run.trajectories", "4"]


def attr(f, name):
    v = f["metrics"].attrs[name]
    return v.decode() if isinstance(v, bytes) else v


def config_value(f, key):
    """A key's value in the archive's effective configuration (/config)."""
    section, name = key.split(".")
    current = ""
    for line in st._config_lines(f["config"]):  # (placement lines aside)
        line = line.strip()
        if line.startswith("["):
            current = line[1:-1]
        elif current == section and line.partition("=")[0].strip() == name:
            return line.partition("=")[2].strip()
    st.fail(f"/config has no {key}")


def test_regression(tmp):
    out = os.path.join(tmp, "runs", "friedman1.h5")  # runs/ does not exist: it is made
    p = st.run(SIMMER, 2, ["--config", JOB, "--data.path", os.path.join(ROOT, "data", "friedman1.csv"),
                           "--output", out] + SHORT)
    for needed in ("rows: 300 read; train 192, validation 48, test 60",
                   "noise: s = ", "the deep ensemble's RMS residual on the 48 validation rows",
                   "result: the run's ensemble is", "against the deep ensemble (4 Adam networks)"):
        if needed not in p.stdout:
            st.fail(f"the output lacks '{needed}':\n{p.stdout}")
    m = re.search(r"noise: s = ([0-9.e+-]+)", p.stdout)
    with h5py.File(out, "r") as f:
        if config_value(f, "model.architecture") != "10-64-64-1" or config_value(f, "model.loss") != "mse":
            st.fail(f"/config: architecture {config_value(f, 'model.architecture')}, loss "
                    f"{config_value(f, 'model.loss')} (expected auto's 10-64-64-1 and mse)")
        s = float(attr(f, "noise_sd"))
        if attr(f, "noise_sd_source") != "validation residuals of the deep ensemble":
            st.fail(f"/metrics noise_sd_source = {attr(f, 'noise_sd_source')!r}")
        if abs(s - float(m.group(1))) > 1e-3 * s:
            st.fail(f"/metrics noise_sd {s} but the run printed {m.group(1)}")
        # The deep ensemble's own noise estimate: the variance of its mean's validation residuals.
        deep = float(attr(f, "deep_ensemble_noise_variance"))
        if attr(f, "deep_ensemble_noise_source").find("validation") < 0 or abs(s * s - deep) > 1e-9 * deep:
            st.fail(f"noise_sd^2 = {s * s!r} but the deep ensemble's validation noise variance is {deep!r} "
                    f"({attr(f, 'deep_ensemble_noise_source')})")
        bayes = float(attr(f, "bayes_temperature"))
        if abs(bayes - 2 * s * s / 192) > 1e-12 * bayes:
            st.fail(f"T_Bayes {bayes!r} is not 2 s^2 / n = {2 * s * s / 192!r}")
        rung = f["ladder"]["rung_4"].attrs["temperature"]
        if abs(rung - bayes) > 1e-12 * bayes:
            st.fail(f"the ladder's top rung is T = {rung!r}, not 1 x T_Bayes = {bayes!r}")
        # The defaults' ensemble: the candidates stacked (the last row), named so in the table and
        # the result, without the line that points a chosen single candidate to them.
        names = st.strings(f["selection/candidate"])
        chosen = int(f["selection"].attrs["selected"])
        w = f["selection/stacking_weight"][()][:-1]
        if names[chosen] != "stacked" or chosen != len(names) - 1 or attr(f, "ensemble") != "stacked":
            st.fail(f"the defaults chose {names[chosen]}, not the stacked candidates")
    if "\n  stacked: the candidates' shares" not in p.stdout or "the run's ensemble is the candidates stacked" \
            not in p.stdout or "\nstacked: the candidates stacked" in p.stdout:
        st.fail(f"the table, the result line or the conclusion misnames the stacked candidates:\n{p.stdout}")
    print(f"regression at the defaults: s = {s:.4g}, T_Bayes = {bayes:.4g}; stacking weights {w.round(3)}")


def test_classification(tmp):
    rng = random.Random(7)
    path = os.path.join(tmp, "mine.csv")
    with open(path, "w") as f:
        f.write("a,b,c,d,kind\n")
        for i in range(300):
            k = i % 3
            f.write(",".join(f"{rng.gauss(k, 1):.4f}" for _ in range(2)) + "," +
                    ",".join(f"{rng.gauss(0, 1):.4f}" for _ in range(2)) + f",class_{k}\n")
    ini = os.path.join(tmp, "mine.ini")
    with open(ini, "w") as f:
        f.write(f"[data]\npath = {path}\ntarget = kind\ntask = classification\n")
    out = os.path.join(tmp, "mine.h5")
    p = st.run(SIMMER, 2, ["--config", ini, "--output", out] + SHORT)
    if "rows: 300 read; train 192, validation 48, test 60" not in p.stdout:
        st.fail(f"the rows line is missing or wrong:\n{p.stdout}")
    with h5py.File(out, "r") as f:
        if config_value(f, "model.architecture") != "4-64-64-3" or config_value(f, "model.loss") != "cce":
            st.fail(f"/config: {config_value(f, 'model.architecture')}, {config_value(f, 'model.loss')}")
        if "noise_sd" in f["metrics"].attrs:
            st.fail("a classification run records a noise sd")


def test_unused_rows(tmp):
    p = st.run(SIMMER, 1, ["--config", JOB, "--data.path", os.path.join(ROOT, "data", "friedman1.csv"),
                           "--data.train", "100", "--data.test", "50", "--estimate",
                           "--output", os.path.join(tmp, "x.h5")])
    if "rows: 300 read; train 80, validation 20, test 50, 150 unused" not in p.stdout:
        st.fail(f"the rows line does not name the unused rows:\n{p.stdout}")


def test_noise_resume(tmp):
    args = ["--config", JOB, "--data.path", os.path.join(ROOT, "data", "friedman1.csv")] + SHORT
    st.stopped_and_resumed(SIMMER, st.opts(args, "--run.trajectories", "2"), os.path.join(tmp, "stopped.h5"),
                           [], [], "a run with simmer.noise_sd = auto", at_step=300)


def test_quickstart_warnings(tmp):
    # jobs/quickstart.sh's run, shortened: every trajectory starts at rest at a small T, so every
    # rank's trajectory is slow to heat.
    p = st.run(SIMMER, 36, ["--config", os.path.join(ROOT, "jobs", "iris_abinitio.ini"),
                            "--data.path", os.path.join(ROOT, "data", "iris.csv"), "--simmer.steps", "600",
                            "--ensemble.window", "300", "--ensemble.count", "100", "--run.gather_interval", "600",
                            "--run.checkpoint_interval", "600", "--output", os.path.join(tmp, "quick.h5")])
    warnings = [ln for ln in (p.stdout + p.stderr).splitlines() if "warning" in ln.lower()]
    if len(warnings) > 3:
        st.fail(f"{len(warnings)} warning lines (at most 3):\n" + "\n".join(warnings))
    print(f"quick start: {len(warnings)} warning line(s)")


def test_adam_keep(tmp):
    base = ["--config", os.path.join(ROOT, "jobs", "sine_retrofit.ini"), "--simmer.mode", "adam",
            "--data.validation_fraction", "0.3", "--adam.epochs", "3000", "--adam.lr", "0.01",
            "--run.trajectories", "3", "--ensemble.select_by", "none"]
    kept = {}
    for keep in ("last", "best_validation"):
        out = os.path.join(tmp, f"{keep}.h5")
        st.run(SIMMER, 1, base + ["--adam.keep", keep, "--output", out])
        with h5py.File(out, "r") as f:
            kept[keep] = (f["baseline/validation_mse"][()], f["baseline/params"][()])
    (last_mse, last_x), (best_mse, best_x) = kept["last"], kept["best_validation"]
    if not (np.all(best_mse <= last_mse) and np.any(best_mse < last_mse) and not np.array_equal(best_x, last_x)):
        st.fail(f"adam.keep = best_validation: validation MSE {best_mse} against the last epoch's {last_mse} "
                "(each at most, one below, and other networks expected)")
    print(f"adam.keep: validation MSE {best_mse} (best epoch) against {last_mse} (last)")


def test_fair_deep_ensemble(tmp):
    out = os.path.join(tmp, "adam.h5")
    p = st.run(SIMMER, 2, ["--config", JOB, "--data.path", os.path.join(ROOT, "data", "friedman1.csv"),
                           "--simmer.mode", "adam", "--adam.epochs", "400", "--adam.keep", "best_validation",
                           "--adam.patience", "50", "--run.trajectories", "4", "--output", out])
    if "result: the run's ensemble is the deep ensemble" not in p.stdout or "noise: s = " not in p.stdout:
        st.fail(f"Adam alone at the defaults did not end with the deep ensemble and the noise line:\n{p.stdout}")
    with h5py.File(out, "r") as f:
        if not float(attr(f, "noise_sd")) > 0 or "ladder" in f:
            st.fail("Adam alone: no measured noise sd in /metrics, or a /ladder group")
        nll = float(attr(f, "deep_ensemble_test_nll"))
    # The result line gives the early-stopped networks' test scores, the next line the epochs kept.
    m = re.search(r"result: the run's ensemble is the deep ensemble of the 4 Adam networks \(test MSE [0-9.e+-]+, "
                  r"test NLL ([0-9.e+-]+)\)", p.stdout)
    if m is None or abs(float(m.group(1)) - nll) > 5e-4 * abs(nll):
        st.fail(f"the result line does not give the test NLL {nll}:\n{p.stdout}")
    k = re.search(r"Adam kept each network at its lowest validation loss \(adam.keep = best_validation\): "
                  r"epochs? (\d+)(?:-(\d+))? of 400; adam.patience = 50 ended (\d) of 4 early", p.stdout)
    if k is None or not 1 <= int(k.group(1)) <= int(k.group(2) or k.group(1)) <= 400:
        st.fail(f"no line with the epochs Adam kept:\n{p.stdout}")
    # The archive's summary says the epochs are a maximum.
    s = st.run(st.SIMMER_ANALYZE, None, ["summary", out])
    if "4 trajectories × 400 Adam epochs at most (adam.patience = 50 " not in s.stdout:
        st.fail(f"the summary does not say the Adam epochs are a maximum:\n{s.stdout[:600]}")
