#!/usr/bin/python3
"""End-to-end checks of issue 17 (choosing T on held-out data): the validation split, the deep
ensemble of the Adam end points, Adam alone (simmer.mode = adam), the temperature ladder and
the choice among its candidates (pytest functions, one CTest test each: tests/conftest.py says
how to run them by hand; Debian's /usr/bin/python3: h5py, numpy, scipy).

tests: validation  data.validation_fraction carves its rows out of the training split only (the
                   test rows and their order unchanged); every score is also computed on the
                   validation set, and the archive's validation scores equal a numpy
                   recomputation from /ensemble/validation and /baseline/validation
       deep        the deep ensemble's /metrics equal a vote and mean softmax computed by hand
                   from /baseline/<set>/prediction (Iris), and a mean and variance of them
                   (sine, Gaussian NLL and predictive coverage with the validation residuals as
                   noise); simmer.mode = adam trains the same Adam networks as the retrofit run
                   and reports them as its ensemble
       identical   a ladder run gives bit-identical archives at -n 1, 2 and 4, and stopped by
                   SIGUSR1 mid-ladder on 2 ranks and resumed on 1
       exchange    parallel rungs with replica exchange (issue 21): trajectory i's draws all at rung
                   i mod K; the rounds proposed per rung pair are the count the schedule gives and
                   some are accepted; bit-identical at -n 1, 2, 4, with two ranks per trajectory,
                   and stopped between rounds on 2 ranks and resumed on 1
       select      the chosen candidate has the lowest validation NLL recomputed in numpy from
                   every candidate's validation probabilities (rule best), or is the first within
                   one standard error of the paired differences (one_se); select_by = metric uses
                   the error rate; /ensemble holds the chosen candidate's arrays; summary and
                   predict follow the choice; the candidates stacked in /selection: weights at the
                   maximum of the validation likelihood (numpy's gradients), NLL and accuracy;
                   predict --candidate stacked weighs each candidate's networks by its weight
       merge       merged retrofit archives report the deep ensemble of all their Adam end points
                   (recomputed from the merged /baseline predictions)
       merge_ladder ladder runs of three seeds pool each rung (votes add, probabilities average by
                   members) and the choice is made again: numpy's lowest pooled validation NLL;
                   (a+b)+c equals a+b+c; other rung temperatures are refused; parallel rungs keep
                   trajectory i at rung i mod K (the run's trajectory count is a multiple of K) with
                   the exchange log pooled; a regression ladder
                   pools means and variances (Chan), coverage counts, components and σ², and
                   its stacked candidates (MSE of the mixture's mean) equal numpy's
"""
import csv
import io
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

sys.path.insert(0, os.path.join(st.ROOT, "jobs", "study"))
from study_fair_deep import log_densities, mixture  # noqa: E402  (the study's numpy densities)

SIMMER, ANALYZE, ROOT = st.SIMMER_MPI, st.SIMMER_ANALYZE, st.ROOT
fail = st.fail
SANITIZED = st.SANITIZED

# A small Iris retrofit with a 25 % validation split (every member stored).
IRIS = ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"), "--data.path", os.path.join(ROOT, "data/iris.csv"),
        "--model.architecture", "2-32-32-3",
        "--adam.epochs", "80", "--simmer.steps", "300", "--simmer.every", "50",
        "--ensemble.window", "150", "--ensemble.fraction", "0", "--ensemble.count", "0", "--ensemble.stride", "3",
        "--ensemble.store_every", "1", "--data.validation_fraction", "0.25",
        "--run.trajectories", "4", "--run.gather_interval", "130", "--run.trace_every", "10"]
# The same with a three-rung ladder in posterior units (prior N(0, 1/fan_in), thermal start).
LADDER = st.opts(IRIS, "--simmer.ladder", "0.01,0.1,1", "--simmer.temperature_unit", "posterior",
                 "--simmer.prior", "gaussian", "--simmer.prior_scaling", "fan_in",
                 "--simmer.start_velocity", "thermal")


def run(ranks, args, expect=0):
    return st.run(SIMMER, ranks, args, expect=expect)


def predicted_test(archive, extra=()):
    """simmer_analyze predict of `archive` on its own test inputs (raw units, written as a points
    CSV beside it): (exit code, {column: array over the rows} of the numeric columns, stderr)."""
    with h5py.File(archive, "r") as f:
        names = st.strings(f["data/feature_names"])
        x = f["data/test/x"][()]
    points = archive[:-3] + "_points.csv"
    with open(points, "w") as fh:
        fh.write(",".join(names) + "\n" + "".join(",".join(repr(v) for v in r) + "\n" for r in x))
    p = subprocess.run([ANALYZE, "predict", "--digits", "17", archive, "--points", points, *extra], env=st.ENV, capture_output=True,
                       text=True)
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    columns = {k: np.array([float(r[k]) for r in rows]) for k in (rows[0] if rows else {}) if not k.endswith("_class")}
    return p.returncode, columns, p.stderr


def predicted_test_fractions(archive, extra=()):
    """predicted_test's fraction_* columns as an array [row, class]."""
    rc, columns, err = predicted_test(archive, extra)
    return rc, np.array([columns[k] for k in columns if k.startswith("fraction_")]).T, err


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def nll_rows(p, y):
    return -np.log(np.maximum(p[np.arange(len(y)), y], np.finfo(float).tiny))


def close(a, b, what, rtol=1e-12, atol=1e-14):
    """a and b agree to rtol, atol (NaN where both are NaN: the stacked row's validation loss)."""
    if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        fail(f"{what}: {a} vs {b}")


def vote(logits_per_net, classes):
    """Majority of the networks' arg-max classes (ties: lowest class), and the vote table."""
    votes = np.zeros((logits_per_net.shape[1], classes), dtype=np.int64)
    for z in logits_per_net:
        votes[np.arange(z.shape[0]), np.argmax(z, axis=1)] += 1
    return np.argmax(votes, axis=1), votes


def test_validation(tmp):
    plain, held = os.path.join(tmp, "plain.h5"), os.path.join(tmp, "held.h5")
    run(2, st.opts(IRIS, "--data.validation_fraction", "0") + ["--output", plain])
    run(2, IRIS + ["--output", held])
    with h5py.File(plain, "r") as a, h5py.File(held, "r") as b:
        if not np.array_equal(a["data/test/x"][()], b["data/test/x"][()]):
            fail("the validation split changed the test rows")
        n_train, n_valid = len(b["data/train/y"]), len(b["data/validation/y"])
        if (n_train, n_valid) != (84, 28):
            fail(f"train/validation rows {n_train}/{n_valid}, expected 84/28 (25 % of 112)")
        joined = np.concatenate([b["data/train/x"][()], b["data/validation/x"][()]])
        key = lambda m: sorted(map(tuple, np.round(m, 12)))
        if key(joined) != key(a["data/train/x"][()]):
            fail("train + validation rows are not the training split of the run without validation")
        # Scores on the validation set, recomputed from what the archive holds.
        y = b["data/validation/y"][()]
        m = b["metrics"].attrs
        p = b["ensemble/validation/probability"][()]
        close(m["ensemble_validation_nll"], np.mean(nll_rows(p, y)), "ensemble validation NLL")
        close(m["ensemble_validation_accuracy"], np.mean(b["ensemble/validation/prediction"][()] == y),
              "ensemble validation accuracy")
        logits = b["baseline/validation/prediction"][()]
        acc = [np.mean(np.argmax(z, axis=1) == y) for z in logits]
        close(m["baseline_validation_accuracy_mean"], np.mean(acc), "Adam's mean validation accuracy")
        close(b["baseline/validation_nll"][()], [np.mean(nll_rows(softmax(z), y)) for z in logits],
              "each Adam network's validation NLL", rtol=1e-10)
        if "validation" in a["ensemble"] or "ensemble_validation_nll" in a["metrics"].attrs:
            fail("a run without a validation split reports validation scores")
    print("validation: rows held out of the training split only; validation scores recomputed in numpy")


def deep_iris(out):
    """The Iris run's deep ensemble against a vote and a mean softmax by hand."""
    with h5py.File(out, "r") as f:
        m = f["metrics"].attrs
        if int(m["deep_ensemble_members"]) != 4:
            fail(f"deep_ensemble_members {m['deep_ensemble_members']}, expected 4")
        for split in ("train", "test", "validation"):
            logits = f[f"baseline/{split}/prediction"][()]  # [chain, row, class]
            y = f[f"data/{split}/y"][()]
            majority, votes = vote(logits, logits.shape[2])
            if not np.array_equal(votes, f[f"deep_ensemble/{split}/votes"][()]):
                fail(f"{split}: the deep ensemble's votes differ from a count by hand")
            close(m[f"deep_ensemble_{split}_accuracy"], np.mean(majority == y), f"{split} deep ensemble accuracy")
            p = softmax(logits).mean(axis=0)
            close(f[f"deep_ensemble/{split}/probability"][()], p, f"{split} mean softmax", rtol=1e-12)
            close(m[f"deep_ensemble_{split}_nll"], np.mean(nll_rows(p, y)), f"{split} deep ensemble NLL")
            close(m[f"deep_ensemble_{split}_brier"], np.mean(np.sum((p - np.eye(3)[y]) ** 2, axis=1)),
                  f"{split} deep ensemble Brier")


def deep_sine(tmp):
    """A sine run's deep ensemble: mean, variance, Gaussian NLL, predictive coverage."""
    sine = os.path.join(tmp, "sine.h5")
    run(2, ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "200",
            "--simmer.steps", "300", "--simmer.every", "50", "--ensemble.window", "100",
            "--run.trajectories", "3", "--data.validation_fraction", "0.2", "--output", sine])
    with h5py.File(sine, "r") as f:
        m = f["metrics"].attrs
        preds = {s: f[f"baseline/{s}/prediction"][()] for s in ("train", "test", "validation")}
        # σ²: the deep ensemble mean's residuals on the validation split (issue 26).
        noise = np.mean((preds["validation"].mean(axis=0) - f["data/validation/y"][()]) ** 2, axis=0)
        close(f["deep_ensemble/noise_variance"][()], noise, "sine deep ensemble noise variance", rtol=1e-12)
        if st.text(f["deep_ensemble/noise_variance"].attrs["noise_source"]) != "validation":
            fail("the deep ensemble's noise is not from the validation residuals")
        for split, pr in preds.items():
            mean, var = pr.mean(axis=0), pr.var(axis=0, ddof=1)
            y = f[f"data/{split}/y"][()]
            close(f[f"deep_ensemble/{split}/mean"][()], mean, f"sine {split} deep ensemble mean", rtol=1e-12)
            close(m[f"deep_ensemble_{split}_mse"], np.mean((mean - y) ** 2), f"sine {split} MSE")
            sd2 = var + noise
            nll = np.mean(0.5 * (np.log(2 * np.pi * sd2) + (y - mean) ** 2 / sd2))
            close(m[f"deep_ensemble_{split}_nll"], nll, f"sine {split} Gaussian NLL", rtol=1e-10)
            # The predictive law: the networks' equal mixture of N(prediction, σ²).
            close(f[f"deep_ensemble/{split}/trajectory_mean"][()], pr, f"sine {split} components", rtol=1e-12)
            pit = np.mean(stats.norm.cdf((y - pr) / np.sqrt(noise)), axis=0)
            for level in (50, 90, 95):
                a = (1 - level / 100) / 2
                close(m[f"deep_ensemble_{split}_coverage_{level}"], np.mean((pit >= a) & (pit <= 1 - a)),
                      f"sine {split} predictive coverage {level}", rtol=1e-12)


def adam_alone(tmp, out):
    """Adam alone: the retrofit run's (`out`) Adam networks, reported as the run's ensemble."""
    alone = os.path.join(tmp, "adam.h5")
    p = run(2, IRIS + ["--simmer.mode", "adam", "--output", alone])
    if "simmer step" in p.stdout:
        fail("simmer.mode = adam simmered")
    with h5py.File(alone, "r") as f, h5py.File(out, "r") as g:
        if not np.array_equal(f["baseline/params"][()], g["baseline/params"][()]):
            fail("simmer.mode = adam trained other networks than the retrofit run's Adam phase")
        if text(f["metrics"].attrs["ensemble"]) != "deep_ensemble":
            fail("Adam alone: the run's ensemble is not the deep ensemble")
        for k in ("test_accuracy", "validation_nll", "train_brier"):
            if f["metrics"].attrs[f"ensemble_{k}"] != g["metrics"].attrs[f"deep_ensemble_{k}"]:
                fail(f"Adam alone: ensemble_{k} differs from the retrofit run's deep_ensemble_{k}")
        if f["posterior/params"].shape[1] != 0 or "diagnostics" in f:
            fail("Adam alone stored draws or diagnostics")
    summary = subprocess.run([ANALYZE, "summary", alone], env=st.ENV, capture_output=True, text=True)
    if summary.returncode != 0 or "Adam alone" not in summary.stdout or "deep ensemble accuracy" not in summary.stdout:
        fail(f"summary of an Adam-alone run:\n{summary.stdout}\n{summary.stderr}")


def test_deep(tmp):
    out = os.path.join(tmp, "iris.h5")
    run(2, IRIS + ["--output", out])
    deep_iris(out)
    deep_sine(tmp)
    adam_alone(tmp, out)
    print("deep: the deep ensemble's votes, probabilities and scores equal numpy's; Adam alone is the same Adam")


def test_identical(tmp):
    paths = st.archives_at(run, LADDER, tmp, "ladder")
    for other in paths[1:]:
        st.compare_archives(paths[0], other)
    with h5py.File(paths[0], "r") as f:
        t = f["sample_stats/temperature"][()]
        dps = int(f["posterior/params"].attrs["draws_per_stage"])
        rungs = f["ladder"].attrs["temperatures"]
        temperatures = [float(x) for x in text(rungs).split(",")]
        for k, temperature in enumerate(temperatures):
            if not np.all(t[:, k * dps:(k + 1) * dps] == temperature):
                fail(f"draws of rung {k} are not at its temperature {temperature}")
        if not np.all(np.diff(f["sample_stats/step"][0]) > 0):
            fail("the draws are not in step order")
    # Stopped mid-ladder (step 550, in the second rung, between checkpoints) on 2 ranks, resumed on 1.
    st.stopped_and_resumed(SIMMER, LADDER, os.path.join(tmp, "resumed.h5"), [], [], "the ladder run",
                           at_step=550)
    print("identical: a ladder run is bit-identical at -n 1, 2, 4 and stopped mid-ladder and resumed")


def test_exchange(tmp):
    # Two sets of three rungs, a round every 20 steps: rounds after steps 20, 40, ..., 280.
    parallel = st.opts(LADDER, "--simmer.ladder", "0.3,0.6,1", "--simmer.ladder_mode", "parallel",
                       "--simmer.exchange_every", "20", "--run.trajectories", "6")
    paths = []
    for n, extra in ((1, []), (2, []), (4, []), (4, ["--run.ranks_per_trajectory", "2"])):
        if SANITIZED and n == 4:
            continue
        out = os.path.join(tmp, f"exchange_n{n}_{len(paths)}.h5")
        run(n, parallel + ["--run.gradient_chunks", "2", "--output", out] + extra)
        paths.append(out)
    for other in paths[1:]:
        st.compare_archives(paths[0], other)
    with h5py.File(paths[0], "r") as f:
        t = f["sample_stats/temperature"][()]
        rungs = [float(x) for x in text(f["ladder"].attrs["temperatures"]).split(",")]
        for i in range(6):
            if not np.all(t[i] == rungs[i % 3]):
                fail(f"trajectory {i}'s draws are not all at rung {i % 3}'s temperature {rungs[i % 3]}")
        proposed = f["ladder/exchange_proposed"][()]
        accepted = f["ladder/exchange_accepted"][()]
        # 14 rounds: the 7 even ones propose (0,1), the 7 odd ones (1,2), in each of 2 sets.
        if list(proposed) != [14, 14] or int(f["ladder"].attrs["exchange_rounds"]) != 14:
            fail(f"proposed swaps {list(proposed)} over {f['ladder'].attrs['exchange_rounds']} rounds, "
                 "expected [14, 14] over 14")
        if accepted.sum() == 0 or np.any(accepted > proposed):
            fail(f"accepted swaps {list(accepted)} of {list(proposed)}")
        if f["ladder/round_trips"].shape != (6,):
            fail("round trips are not per configuration")
        # Swaps move states, not only labels: the configuration each trajectory holds, carried
        # in the swapped bytes (the run checks it against the exchange's bookkeeping), is a
        # permutation within each set of rungs, and here not where it started.
        held = [int(c) for c in f["ladder/configuration_held"][()]]
        if sorted(held) != list(range(6)):
            fail(f"configurations held {held} are not a permutation of the trajectories")
        if held == list(range(6)):
            fail("after 14 rounds with accepted swaps every trajectory holds its own configuration: no state moved")
    check_metropolis(paths[0], rounds=14)
    # Every step a round (299 of them, ~600 proposals): the acceptances against the exact
    # Metropolis probabilities of the energies the archive says the decisions used.
    every_step = os.path.join(tmp, "exchange_every_step.h5")
    run(1, st.opts(parallel, "--simmer.exchange_every", "1") + ["--output", every_step])
    check_metropolis(every_step, rounds=299)
    # predict --candidate rung_1 evaluates trajectories 1 and 4's draws: their votes are the rung's
    # ensemble (every member is stored here).
    with h5py.File(paths[0], "r") as f:
        expected = f["ladder/rung_1/test/fraction"][()]
    rc, got, err = predicted_test_fractions(paths[0], ["--candidate", "rung_1"])
    if rc != 0 or got.shape != expected.shape or not np.array_equal(got, expected):
        fail(f"predict --candidate rung_1 of a parallel ladder differs from /ladder/rung_1/test/fraction:\n{err}")
    summary = subprocess.run([ANALYZE, "summary", paths[0]], env=st.ENV, capture_output=True, text=True)
    if summary.returncode != 0 or "rung 2, T = " not in summary.stdout or "side by side" not in summary.stdout:
        fail(f"summary of a parallel ladder does not diagnose each rung:\n{summary.stdout}\n{summary.stderr}")
    # Stopped at step 150 (between the rounds after 140 and 160) on 2 ranks, resumed on 1.
    st.stopped_and_resumed(SIMMER, parallel, os.path.join(tmp, "exchange_resumed.h5"), [], [],
                           "the replica-exchange run", at_step=150)
    print("exchange: parallel rungs with replica exchange are bit-identical at -n 1, 2, 4, in groups of "
          "two ranks and across a resume; every draw is at its trajectory's rung")


def check_metropolis(path, rounds):
    """/ladder/exchange_loss and exchange_swapped against the rule: in round n (1-based) each set
    of K rungs proposes the pairs (k, k + 1) with k even when n is even, odd when n is odd, and
    accepts one with probability min(1, exp((1/T_k - 1/T_k+1)(U_k - U_k+1))), U the trajectory's
    loss in that round. Only proposed pairs swap, both sides; a pair the rule accepts for sure
    swaps; the swaps' count is the probabilities' sum within binomial noise."""
    with h5py.File(path, "r") as f:
        loss = f["ladder/exchange_loss"][()]
        swapped = f["ladder/exchange_swapped"][()]
        temperature = f["sample_stats/temperature"][()][:, 0]  # each trajectory's rung, loss units
        accepted_total = int(f["ladder/exchange_accepted"][()].sum())
        rungs = len(text(f["ladder"].attrs["temperatures"]).split(","))
    chains = len(temperature)
    if loss.shape != (rounds, chains) or swapped.shape != (rounds, chains):
        fail(f"{path}: exchange log shapes {loss.shape}, {swapped.shape}, expected ({rounds}, {chains})")
    probability, outcome, expected_flags = [], [], np.zeros_like(swapped)
    for n in range(1, rounds + 1):
        for first in range(0, chains, rungs):
            for k in range(n % 2, rungs - 1, 2):
                lo, hi = first + k, first + k + 1
                delta = (1 / temperature[lo] - 1 / temperature[hi]) * (loss[n - 1, lo] - loss[n - 1, hi])
                p = min(1.0, float(np.exp(min(delta, 0.0))))
                took = bool(swapped[n - 1, lo])
                if swapped[n - 1, hi] != swapped[n - 1, lo]:
                    fail(f"round {n}: trajectories {lo} and {hi} disagree on their swap")
                expected_flags[n - 1, lo] = expected_flags[n - 1, hi] = took
                if p == 1.0 and not took:
                    fail(f"round {n}: rungs {k},{k + 1} of the set at {first} were rejected with probability 1")
                if p < 1e-12 and took:
                    fail(f"round {n}: rungs {k},{k + 1} of the set at {first} swapped with probability {p:.3g}")
                probability.append(p)
                outcome.append(took)
    if not np.array_equal(swapped, expected_flags):
        fail(f"{path}: a trajectory outside the round's proposed pairs is marked swapped")
    p, took = np.array(probability), np.array(outcome)
    if int(took.sum()) != accepted_total:
        fail(f"{path}: {int(took.sum())} swaps in the log, {accepted_total} in /ladder/exchange_accepted")
    sd = float(np.sqrt(np.sum(p * (1 - p))))
    if abs(took.sum() - p.sum()) > 4 * sd + 1:
        fail(f"{path}: {int(took.sum())} of {len(p)} proposals accepted, the exact Metropolis probabilities sum "
             f"to {p.sum():.1f} (sd {sd:.1f})")
    print(f"exchange: {int(took.sum())} of {len(p)} proposals accepted, Metropolis expects {p.sum():.1f} "
          f"(sd {sd:.1f}; {int(np.sum(p == 1))} certain)")


def check_stacking(f, what):
    """/selection's stacked candidates, checked in numpy from the archive's candidate groups (the
    study's densities): the weights are on the simplex and at the maximum of the validation rows'
    mean log-likelihood of the candidates' mixture (no candidate's gradient g_k = mean_i p_k /
    mixture_i above 1 + 1e-8, the Frank-Wolfe gap that bounds the distance from it); the stacked
    candidate, the last row, is every candidate's members weighted by its weight: its mean the
    weighted mean, its variance sum_k w_k (v_k + (m_k - m)^2), its noise variance the mean squared
    validation residual of that mean, its NLL the Gaussian's of mean and variance + noise (or its
    probabilities the weighted mean, its vote the weighted vote fractions' arg max), in /stacked
    and in its /selection row alike."""
    names = st.strings(f["selection/candidate"])
    if names[-1] != "stacked":
        fail(f"{what}: the last candidate is {names[-1]}, not the stacked candidates")
    names = names[:-1]
    groups = [n if n == "deep_ensemble" else f"ladder/{n}" for n in names]
    weights = f["selection/stacking_weight"][()]
    w = weights[:-1]
    if not np.isnan(weights[-1]) or np.any(w < 0) or abs(w.sum() - 1) > 1e-12:
        fail(f"{what}: stacking weights {weights} are not on the simplex (and NaN in the stacked row)")
    valid = log_densities(f, groups, "validation")
    g = np.exp(valid - mixture(w, valid)[0]).mean(1)
    if g.max() > 1 + 1e-8:
        fail(f"{what}: the stacking weights {w} are not at the maximum: gradients {g}")
    a = f["stacked"].attrs
    row = lambda column: f[f"selection/{column}"][()][-1]  # noqa: E731
    classification = "test/probability" in f["stacked"]
    for split in ("validation", "test"):
        y = f[f"data/{split}/y"][()]
        if classification:
            p = sum(wk * f[f"{gk}/{split}/probability"][()] for wk, gk in zip(w, groups))
            close(f[f"stacked/{split}/probability"][()], p, f"{what}: stacked {split} probabilities", rtol=1e-6)
            nll = np.mean(nll_rows(p, y))
            fraction = sum(wk * f[f"{gk}/{split}/fraction"][()] for wk, gk in zip(w, groups))
            metric = np.mean(np.argmax(fraction, axis=1) == y.reshape(-1))
            key = "accuracy"
        else:
            means = [f[f"{gk}/{split}/mean"][()][:, 0] for gk in groups]
            m = sum(wk * mk for wk, mk in zip(w, means))
            v = sum(wk * (f[f"{gk}/{split}/variance"][()][:, 0] + (mk - m) ** 2) for wk, gk, mk in zip(w, groups, means))
            close(f[f"stacked/{split}/mean"][()][:, 0], m, f"{what}: stacked {split} mean", rtol=1e-6)
            close(f[f"stacked/{split}/variance"][()][:, 0], v, f"{what}: stacked {split} variance", rtol=1e-5)
            yv = f["data/validation/y"][()][:, 0]
            mv = sum(wk * f[f"{gk}/validation/mean"][()][:, 0] for wk, gk in zip(w, groups))
            noise = np.mean((yv - mv) ** 2)
            close(f["stacked/noise_variance"][()][0], noise, f"{what}: stacked noise variance", rtol=1e-6)
            var = v + noise
            nll = np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (y[:, 0] - m) ** 2 / var)
            metric = np.mean((y[:, 0] - m) ** 2)
            key = "mse"
        close(a[f"ensemble_{split}_nll"], nll, f"{what}: stacked {split} NLL", rtol=1e-6)
        close(row(f"{split}_nll"), nll, f"{what}: the stacked row's {split} NLL", rtol=1e-6)
        close(a[f"ensemble_{split}_{key}"], metric, f"{what}: stacked {split} {key}", rtol=1e-6, atol=1e-12)
    print(f"{what}: stacking weights {np.round(w, 3)} ({int(f['selection'].attrs['stacking_sweeps'])} sweeps), "
          f"the stacked candidates' validation NLL {a['ensemble_validation_nll']:.5f} (the candidates' "
          f"{np.round(f['selection/validation_nll'][()][:-1], 5)}), test NLL {a['ensemble_test_nll']:.5f}")


def test_select(tmp):
    # Seed 3: the two rules disagree (best: rung_1; one_se: the deep ensemble, within one
    # standard error of it), so a rule ignored or swapped shows.
    chosen_by = {}
    for rule in ("best", "one_se"):
        out = os.path.join(tmp, f"{rule}.h5")
        run(2, LADDER + ["--run.seed", "3", "--ensemble.select_rule", rule, "--output", out])
        with h5py.File(out, "r") as f:
            names = st.strings(f["selection/candidate"])
            if names != ["deep_ensemble", "rung_0", "rung_1", "rung_2", "stacked"]:
                fail(f"candidates {names}")
            y = f["data/validation/y"][()]
            groups = ["deep_ensemble"] + [f"ladder/{n}" for n in names[1:-1]]
            rows = np.array([nll_rows(f[f"{g}/validation/probability"][()], y) for g in groups])
            loss = rows.mean(axis=1)
            close(f["selection/validation_loss"][()][:-1], loss, "validation NLL per candidate", rtol=1e-12)
            if not np.isnan(f["selection/validation_loss"][()][-1]):
                fail("the stacked row has a validation loss of the choice's comparison")
            best = int(np.argmin(loss))
            diff = rows - rows[best]
            se = diff.std(axis=1, ddof=1) / np.sqrt(len(y))
            one_se = int(np.flatnonzero(loss - loss[best] <= se + 1e-15)[0])
            close(f["selection/validation_loss_stderr_difference"][()][:-1], se, "paired standard errors", rtol=1e-9)
            expected = best if rule == "best" else one_se
            chosen = int(f["selection"].attrs["selected"])
            if chosen != expected or text(f["metrics"].attrs["ensemble"]) != names[expected]:
                fail(f"rule {rule}: chose {chosen} ({names[chosen]}), numpy says {expected} (loss {loss}, se {se})")
            for split in ("test", "validation"):
                if not np.array_equal(f[f"ensemble/{split}/probability"][()],
                                      f[f"{groups[expected]}/{split}/probability"][()]):
                    fail(f"/ensemble/{split} is not the chosen candidate's")
            chosen_by[rule] = chosen
            print(f"select ({rule}): validation NLL {np.round(loss, 4)}, chose {names[expected]}")
            check_stacking(f, f"select ({rule})")
        summary = subprocess.run([ANALYZE, "summary", out], env=st.ENV, capture_output=True, text=True)
        if summary.returncode != 0 or "<- the run's ensemble" not in summary.stdout \
                or "stacked: the candidates' shares" not in summary.stdout:
            fail(f"summary has no candidates' table:\n{summary.stdout}\n{summary.stderr}")
    if chosen_by["best"] == chosen_by["one_se"]:
        fail(f"best and one_se chose the same candidate {chosen_by['best']}: the data no longer tells the rules apart")
    # select_rule = stacking: the stacked candidates are the run's ensemble (/ensemble, /metrics, the
    # choice), the same run otherwise (the same seed: the same candidates and weights as `best`).
    out = os.path.join(tmp, "stacking.h5")
    log = run(2, LADDER + ["--run.seed", "3", "--ensemble.select_rule", "stacking", "--output", out]).stdout
    with h5py.File(out, "r") as f, h5py.File(os.path.join(tmp, "best.h5"), "r") as b:
        names = st.strings(f["selection/candidate"])
        if int(f["selection"].attrs["selected"]) != len(names) - 1 or text(f["selection"].attrs["selected_name"]) \
                != "stacked" or text(f["metrics"].attrs["ensemble"]) != "stacked":
            fail(f"select_rule = stacking chose {f['selection'].attrs['selected']} of {names}")
        for split in ("test", "validation"):
            for field in ("probability", "votes", "prediction"):
                if not np.array_equal(f[f"ensemble/{split}/{field}"][()], f[f"stacked/{split}/{field}"][()]) or \
                        not np.array_equal(f[f"stacked/{split}/{field}"][()], b[f"stacked/{split}/{field}"][()]):
                    fail(f"/ensemble/{split}/{field} is not the stacked candidates' (or differs from the best run's)")
            close(f["metrics"].attrs[f"ensemble_{split}_nll"], f["stacked"].attrs[f"ensemble_{split}_nll"],
                  f"/metrics' {split} NLL of the stacked candidates", rtol=0, atol=0)
        check_stacking(f, "select (stacking)")
    if "ensemble = stacked" not in log or "the run's ensemble (ensemble.select_rule = stacking)" not in log:
        fail(f"the run's table does not name the stacked candidates as its ensemble:\n{log}")
    st.run(ANALYZE, None, ["verify", out])
    # predict's default is then --candidate stacked.
    rc, default, err = predicted_test(out)
    rc2, stacked, err2 = predicted_test(out, ["--candidate", "stacked"])
    if rc != 0 or rc2 != 0 or any(not np.array_equal(default[k], stacked[k]) for k in stacked):
        fail(f"predict of a run that chose the stacked candidates is not --candidate stacked:\n{err}\n{err2}")
    # select_by = metric: the validation error rate.
    out = os.path.join(tmp, "metric.h5")
    run(2, LADDER + ["--ensemble.select_by", "metric", "--ensemble.select_rule", "best", "--output", out])
    with h5py.File(out, "r") as f:
        y = f["data/validation/y"][()]
        groups = ["deep_ensemble", "ladder/rung_0", "ladder/rung_1", "ladder/rung_2"]
        errors = [np.mean(f[f"{g}/validation/prediction"][()] != y) for g in groups]
        if int(f["selection"].attrs["selected"]) != int(np.argmin(errors)):
            fail(f"select_by = metric: chose {f['selection'].attrs['selected']}, error rates {errors}")
    # predict evaluates the chosen candidate's networks by default.
    with h5py.File(os.path.join(tmp, "best.h5"), "r") as f:
        expected = f["ensemble/test/fraction"][()]
    rc, got, err = predicted_test_fractions(os.path.join(tmp, "best.h5"))
    if rc != 0 or got.shape != expected.shape or not np.array_equal(got, expected):
        fail(f"predict of the chosen candidate differs from /ensemble/test/fraction:\n{err}")
    # predict --candidate stacked weighs each candidate's networks by its stacking weight: weights
    # set by hand to two candidates (this seed's maximum takes one alone), the deep ensemble's
    # Adam networks and a rung's draws, so both sources mix.
    stacked = os.path.join(tmp, "stacked.h5")
    shutil.copy(os.path.join(tmp, "best.h5"), stacked)
    w = {"deep_ensemble": 0.25, "rung_1": 0.75}
    with h5py.File(stacked, "r+") as f:
        names = st.strings(f["selection/candidate"])
        f["selection/stacking_weight"][...] = [w.get(n, 0.0) for n in names]
    rc, mix, err = predicted_test(stacked, ["--candidate", "stacked"])
    if rc != 0 or "arg max of the stacked probability" not in err:
        fail(f"predict --candidate stacked failed or did not say what it computed:\n{err}")
    parts = {}
    for name in w:
        rc, parts[name], err = predicted_test(stacked, ["--candidate", name])
        if rc != 0:
            fail(f"predict --candidate {name}:\n{err}")
    for column in mix:
        if column.startswith(("probability_", "fraction_")):
            close(mix[column], sum(wk * parts[n][column] for n, wk in w.items()), f"stacked {column}", rtol=1e-12)
    probability = np.array([mix[k] for k in mix if k.startswith("probability_")]).T
    entropy = -np.sum(probability * np.log(np.where(probability > 0, probability, 1)), axis=1)
    close(mix["entropy"], entropy, "stacked entropy", rtol=1e-10, atol=1e-14)
    # The members' mean entropy is each candidate's (its entropy - its mutual information), weighed.
    members = sum(wk * (parts[n]["entropy"] - parts[n]["mutual_information"]) for n, wk in w.items())
    close(mix["mutual_information"], np.maximum(entropy - members, 0), "stacked mutual information", rtol=1e-8,
          atol=1e-12)
    fraction = np.array([mix[k] for k in mix if k.startswith("fraction_")]).T
    if not np.array_equal(mix["vote_prediction"], np.argmax(fraction, axis=1)) \
            or not np.array_equal(mix["prediction"], np.argmax(probability, axis=1)):
        fail("predict --candidate stacked: the predictions are not the weighted vote's and probability's arg max")
    print("select: the choice, its standard errors and /ensemble agree with numpy; predict follows it, and "
          "predict --candidate stacked weighs the candidates' networks")


def test_merge(tmp):
    parts = []
    for seed in (1, 2):
        out = os.path.join(tmp, f"seed{seed}.h5")
        run(2, st.opts(IRIS, "--run.seed", str(seed)) + ["--output", out])
        parts.append(out)
    merged = os.path.join(tmp, "merged.h5")
    p = subprocess.run([ANALYZE, "merge"] + parts + ["-o", merged], env=st.ENV, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"merge failed:\n{p.stdout}\n{p.stderr}")
    with h5py.File(merged, "r") as f:
        m = f["metrics"].attrs
        if int(m["deep_ensemble_members"]) != 8:
            fail(f"merged deep ensemble has {m['deep_ensemble_members']} members, expected 8")
        for split in ("train", "test", "validation"):
            logits = np.concatenate([h5py.File(q, "r")[f"baseline/{split}/prediction"][()] for q in parts])
            y = f[f"data/{split}/y"][()]
            majority, _ = vote(logits, 3)
            p_mean = softmax(logits).mean(axis=0)
            close(m[f"deep_ensemble_{split}_accuracy"], np.mean(majority == y), f"merged {split} accuracy")
            close(m[f"deep_ensemble_{split}_nll"], np.mean(nll_rows(p_mean, y)), f"merged {split} NLL")
    print("merge: the merged deep ensemble equals numpy's over all Adam end points")


def merge(inputs, out, expect=0):
    p = subprocess.run([ANALYZE, "merge"] + inputs + ["-o", out], env=st.ENV, capture_output=True, text=True)
    if (p.returncode != 0) if expect == 0 else (p.returncode != expect):
        fail(f"merge of {inputs}: exit {p.returncode}, expected {expect}:\n{p.stdout}\n{p.stderr}")
    if expect == 0:
        st.run(ANALYZE, None, ["verify", out])
    return p


def seeds_merged(tmp, name, args):
    """Runs of `args` with run.seed 1 and 2 and their merge: ([the two archives], the merged one)."""
    pair = []
    for seed in (1, 2):
        out = os.path.join(tmp, f"{name}{seed}.h5")
        run(2, args + ["--run.seed", str(seed), "--output", out])
        pair.append(out)
    merged = os.path.join(tmp, f"{name}.h5")
    merge(pair, merged)
    return pair, merged


def members(f, group):
    return int(f[group].attrs["members"])


def test_merge_ladder(tmp):
    """Ladder runs of three seeds pool each rung's members; the choice is made again on the pooled
    validation rows (numpy's lowest validation NLL); merging a merge gives the same; a ladder at
    other temperatures is refused; parallel rungs keep trajectory i at rung i mod K and pool the
    exchange log; a regression ladder pools means, variances, coverage and mixture components."""
    short = st.opts(LADDER, "--simmer.steps", "60", "--ensemble.window", "30")
    seeds = []
    for seed in (1, 2, 3):  # seed 3 with half the trajectories: the runs' weights differ
        out = os.path.join(tmp, f"ladder{seed}.h5")
        run(2, st.opts(short, "--run.trajectories", "2" if seed == 3 else "4") + ["--run.seed", str(seed), "--output", out])
        seeds.append(out)
    abc, ab, ab_c = (os.path.join(tmp, n) for n in ("abc.h5", "ab.h5", "ab_c.h5"))
    merge(seeds, abc)
    merge(seeds[:2], ab)
    merge([ab, seeds[2]], ab_c)
    ins = [h5py.File(q, "r") for q in seeds]
    with h5py.File(abc, "r") as f:
        names = st.strings(f["selection/candidate"])
        if names != ["deep_ensemble", "rung_0", "rung_1", "rung_2", "stacked"]:
            fail(f"merged candidates {names}")
        names = names[:-1]
        y = f["data/validation/y"][()]
        for rung in names[1:]:
            for split in ("train", "test", "validation"):
                g = f"ladder/{rung}/{split}"
                n = [members(i, g) for i in ins]
                if members(f, g) != sum(n):
                    fail(f"{g}: {members(f, g)} members, the runs have {n}")
                if not np.array_equal(f[f"{g}/votes"][()], sum(i[f"{g}/votes"][()] for i in ins)):
                    fail(f"{g}/votes are not the sum of the runs'")
                pooled = sum(k * i[f"{g}/probability"][()] for k, i in zip(n, ins)) / sum(n)
                close(f[f"{g}/probability"][()], pooled, f"{g}/probability (members-weighted mean)")
            verdicts = sum((st.strings(i[f"ladder/{rung}/diagnostics/verdict"]) for i in ins), [])
            if st.strings(f[f"ladder/{rung}/diagnostics/verdict"]) != verdicts:
                fail(f"ladder/{rung}/diagnostics/verdict is not the runs' in input order")
            close(f[f"ladder/{rung}"].attrs["ensemble_validation_nll"],
                  np.mean(nll_rows(f[f"ladder/{rung}/validation/probability"][()], y)), f"{rung}'s validation NLL")
        groups = ["deep_ensemble"] + [f"ladder/{n}" for n in names[1:]]
        loss = np.array([np.mean(nll_rows(f[f"{g}/validation/probability"][()], y)) for g in groups])
        close(f["selection/validation_loss"][()][:-1], loss, "merged validation NLL per candidate")
        best = int(np.argmin(loss))
        if int(f["selection"].attrs["best"]) != best:
            fail(f"merge's lowest validation NLL is {f['selection'].attrs['best']}, numpy says {best} ({loss})")
        # The rule (the default, stacking) made again on the pooled rows: the stacked candidates.
        chosen = int(f["selection"].attrs["selected"])
        if chosen != len(names) or text(f["metrics"].attrs["ensemble"]) != "stacked" \
                or text(f["ensemble"].attrs["candidate"]) != "stacked":
            fail(f"merge chose {chosen}, not the stacked candidates (validation NLL {loss})")
        if not np.array_equal(f["ensemble/test/votes"][()], f["stacked/test/votes"][()]):
            fail("the merged /ensemble is not the chosen candidate's")
        close(f["metrics"].attrs["ensemble_test_nll"], f["stacked"].attrs["ensemble_test_nll"], "merged test NLL")
        check_stacking(f, "merge of ladder runs")
        # /diagnostics: the trajectories of the rung with the largest weight.
        w = f["selection/stacking_weight"][()][1:-1]
        rung = names[1 + int(np.argmax(w))]
        expected = sum((st.strings(i[f"ladder/{rung}/diagnostics/verdict"]) for i in ins), [])
        if st.strings(f["diagnostics/verdict"]) != expected:
            fail(f"/diagnostics is not {rung}'s trajectories")
        runs = [text(i["selection"].attrs["selected_name"]) for i in ins]
        print(f"merge ladders: the runs chose {runs}; merged validation NLL {np.round(loss, 4)}: stacked, the "
              f"heaviest rung {rung}")
        with h5py.File(ab_c, "r") as g:
            for path in ["selection/validation_loss", "ladder/rung_0/validation/probability",
                         "ladder/rung_2/test/fraction", "ensemble/validation/probability"]:
                close(g[path][()], f[path][()], f"(a+b)+c vs a+b+c: {path}")
            for key in ("selected_name",):
                if g["selection"].attrs[key] != f["selection"].attrs[key]:
                    fail(f"(a+b)+c chose {g['selection'].attrs[key]}, a+b+c {f['selection'].attrs[key]}")
            close(g["metrics"].attrs["ensemble_validation_nll"], f["metrics"].attrs["ensemble_validation_nll"],
                  "(a+b)+c vs a+b+c: the ensemble's validation NLL")
    for i in ins:
        i.close()
    # The same seed twice is one run counted twice; other temperatures do not pool.
    merge([seeds[0], ab], os.path.join(tmp, "twice.h5"), expect=2)
    hot = os.path.join(tmp, "hot.h5")
    shutil.copy(seeds[2], hot)
    with h5py.File(hot, "r+") as f:
        f["ladder/rung_1"].attrs["temperature"] = 2 * f["ladder/rung_1"].attrs["temperature"]
    p = merge([seeds[0], hot], os.path.join(tmp, "no.h5"), expect=2)
    if "rung_1's temperature" not in p.stderr:
        fail(f"a ladder at other temperatures was not refused naming the rung:\n{p.stderr}")
    # Parallel rungs with replica exchange: two seeds of 6 trajectories (K = 3).
    parallel = st.opts(short, "--simmer.ladder_mode", "parallel", "--simmer.exchange_every", "10",
                       "--run.trajectories", "6")
    pair, merged = seeds_merged(tmp, "parallel", parallel)
    ins = [h5py.File(q, "r") for q in pair]
    with h5py.File(merged, "r") as f:
        for k in range(3):
            ids = f[f"ladder/rung_{k}/diagnostics/chain"][()]
            if list(ids) != list(range(k, 12, 3)):
                fail(f"rung_{k}'s merged trajectories are {ids}, expected every third from {k}")
            t = f["sample_stats/temperature"][()]
            if not np.all(t[k::3] == f[f"ladder/rung_{k}"].attrs["temperature"]):
                fail(f"merged trajectories {k}::3 are not all at rung {k}")
        for name in ("exchange_proposed", "exchange_accepted"):
            if not np.array_equal(f[f"ladder/{name}"][()], sum(i[f"ladder/{name}"][()] for i in ins)):
                fail(f"/ladder/{name} is not the sum of the runs'")
        held = np.concatenate([ins[0]["ladder/configuration_held"][()], ins[1]["ladder/configuration_held"][()] + 6])
        if not np.array_equal(f["ladder/configuration_held"][()], held):
            fail("/ladder/configuration_held is not renumbered with the trajectories")
        swaps = np.concatenate([i["ladder/exchange_swapped"][()] for i in ins], axis=1)
        if not np.array_equal(f["ladder/exchange_swapped"][()], swaps):
            fail("/ladder/exchange_swapped is not the runs' side by side")
    for i in ins:
        i.close()
    # A regression ladder: means and variances by Chan's formula, coverage counts, components.
    sine = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50", "--simmer.steps", "200",
            "--simmer.every", "50", "--ensemble.window", "100", "--ensemble.store_every", "25",
            "--run.trajectories", "2", "--simmer.temperature_unit", "posterior", "--data.validation_fraction", "0.2",
            "--simmer.ladder", "0.5,1", "--simmer.noise_sd", "0.1", "--ensemble.track", "0,3"]
    pair, merged = seeds_merged(tmp, "sine", sine)
    # A merge of the merge (with tracked rows, whose dataset must not create /ensemble's sets out
    # of their order) takes a third seed (uninstrumented: the same merge code ran above).
    if not SANITIZED:
        third = os.path.join(tmp, "sine3.h5")
        run(2, sine + ["--run.seed", "3", "--output", third])
        merge([merged, third], os.path.join(tmp, "sine_ab_c.h5"))
    ins = [h5py.File(q, "r") for q in pair]
    with h5py.File(merged, "r") as f:
        for rung in ("rung_0", "rung_1"):
            g = f"ladder/{rung}/validation"
            n = np.array([members(i, g) for i in ins], dtype=float)
            means = [i[f"{g}/mean"][()] for i in ins]
            mean = (n[0] * means[0] + n[1] * means[1]) / n.sum()
            close(f[f"{g}/mean"][()], mean, f"{g}/mean", rtol=1e-10)
            m2 = sum((k - 1) * i[f"{g}/variance"][()] + k * (mu - mean) ** 2 for k, i, mu in zip(n, ins, means))
            close(f[f"{g}/variance"][()], m2 / (n.sum() - 1), f"{g}/variance", rtol=1e-9)
            below = sum(i[f"{g}/coverage_below"][()] for i in ins)
            if not np.array_equal(f[f"{g}/coverage_below"][()], below):
                fail(f"{g}/coverage_below is not the sum of the runs'")
            parts = np.concatenate([i[f"{g}/trajectory_mean"][()] for i in ins])
            if not np.array_equal(f[f"{g}/trajectory_mean"][()], parts):
                fail(f"{g}/trajectory_mean is not the runs' trajectories in order")
            y = f["data/validation/y"][()]
            resid = np.mean((f[f"{g}/mean"][()] - y.reshape(f[f"{g}/mean"].shape)) ** 2)
            close(f[f"ladder/{rung}/noise_variance"][()][0], resid, f"{rung}'s σ² (pooled validation residuals)",
                  rtol=1e-10)
        chosen = text(f["selection"].attrs["selected_name"])
        if chosen != "stacked" or not np.array_equal(f["ensemble/test/mean"][()], f["stacked/test/mean"][()]):
            fail(f"the regression ladder's merge chose {chosen}, not the stacked candidates")
        check_stacking(f, "merge of a regression ladder")
    for i in ins:
        i.close()
    # predict --candidate stacked on regression: each network N(prediction, the stacked candidates'
    # σ²), weighed by its candidate's weight (set by hand to two): the mixture's mean and variances.
    with h5py.File(merged, "r+") as f:
        w = {"deep_ensemble": 0.4, "rung_1": 0.6}
        f["selection/stacking_weight"][...] = [w.get(n, 0.0) for n in st.strings(f["selection/candidate"])]
    rc, mix, err = predicted_test(merged, ["--candidate", "stacked"])
    parts = {n: predicted_test(merged, ["--candidate", n])[1] for n in w}
    if rc != 0 or "each candidate's networks weighing its stacking weight" not in err:
        fail(f"predict --candidate stacked (regression) failed or did not say what it computed:\n{err}")
    mean = sum(wk * parts[n]["mean_y"] for n, wk in w.items())
    close(mix["mean_y"], mean, "stacked mean", rtol=1e-12)
    second = sum(wk * (parts[n]["sd_model_y"] ** 2 + parts[n]["mean_y"] ** 2) for n, wk in w.items())
    close(mix["sd_model_y"], np.sqrt(second - mean ** 2), "stacked sd_model", rtol=1e-9)
    with h5py.File(merged, "r") as f:
        noise = f["stacked/noise_variance"][()][0]
    close(mix["sd_y"], np.sqrt(second - mean ** 2 + noise), "stacked sd (the stacked candidates' noise)", rtol=1e-9)
    # Adam alone keeps the default simmer.ladder in its configuration but simmers nothing: merged
    # as any run, without a /ladder.
    if not SANITIZED:  # (the plain merge runs instrumented in analyze: merge)
        pair, merged = seeds_merged(tmp, "adam", st.opts(short, "--simmer.mode", "adam"))
        with h5py.File(merged, "r") as f:
            n = sum(members(h5py.File(q, "r"), "ensemble/test") for q in pair)
            if "ladder" in f or members(f, "ensemble/test") != n:
                fail("a merge of Adam-alone runs is not a plain merge of their deep ensemble")
    print("merge ladders: rungs pooled and the choice made again (three seeds, (a+b)+c the same); other "
          "temperatures refused; parallel rungs and their exchange log, Adam-alone runs, a tracked regression ladder's means, variances, coverage and components pooled")
