#!/usr/bin/python3
"""What a user carries away (issue 26): predictive intervals that cover what they say,
probabilities from predict, inputs the ensemble has never seen flagged, bad inputs refused
(pytest functions, one CTest test each, "predictive: <test>": tests/conftest.py says how to run
them by hand).

tests:
  linear          known truth: y = 2x + 1 + N(0, 0.5²), a 1-1 (linear) network retrofitted on 3000
                  rows with 600 held out for validation; the run's predictive test coverage at 90 %
                  over 2000 test rows is within 0.03 of 0.90 (50 % and 95 % likewise), σ² is named
                  as the validation residuals', and predict's intervals on the test inputs cover
                  the same share (its mixture is over the stored networks, the run's over the
                  trajectories' members)
  classification  Iris: predict's probability_<class>, entropy and mutual_information equal numpy's
                  from the stored networks (forward pass in numpy), prediction is their arg max,
                  vote_prediction the majority; the same for mpirun -n 1 and 3
  inputs          a row 9,9 is flagged outside_training_range = 2 and a row inside 0; a row
                  1e100,1e100 exits 2 naming the file line and column and writes nothing (--out);
                  the same for a float32 archive
  merge           two sine runs merged: the mixture's components are the inputs' concatenated, σ² the
                  merged mean's validation residuals, and the predictive coverage of the merged
                  ensemble and of the merged deep ensemble equal a scipy transcription
  autompg         the issue's check: jobs/autompg_m_ladder.ini with 2000 steps and a window of
                  1500 reports the run's ensemble's predictive test coverage at 90 % in [0.80, 0.97]
                  and at 50 % in [0.35, 0.65], and /metrics names the noise estimate it used; its
                  trajectories do not mix in that window, and the run's window line and summary's
                  give the window their split-R-hats ask for (window (R^2 - 1)/(1.1^2 - 1))
"""
import csv
import io
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ANALYZE, ROOT = st.SIMMER_MPI, st.SIMMER_ANALYZE, st.ROOT
fail, opts = st.fail, st.opts
IRIS = ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"), "--data.path", os.path.join(ROOT, "data/iris.csv"),
        "--adam.epochs", "60", "--simmer.steps", "400", "--simmer.every", "50", "--ensemble.window", "200",
        "--ensemble.stride", "2", "--ensemble.store_every", "1", "--run.trajectories", "3"]


def analyze(args, ranks=None, expect=0):
    return st.run(ANALYZE, ranks, args, expect=expect)


def table(text):
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def column(header, rows, name):
    j = header.index(name)
    return np.array([float(r[j]) for r in rows])


def coverage(y, lo, hi):
    return float(np.mean((y >= lo) & (y <= hi)))


def test_linear(tmp):
    rng = np.random.default_rng(26)
    n_train, n_test = 3000, 2000
    x = rng.uniform(-1, 1, n_train + n_test)
    y = 2 * x + 1 + 0.5 * rng.standard_normal(x.size)
    data = os.path.join(tmp, "linear.csv")
    np.savetxt(data, np.stack([x, y], axis=1), delimiter=",", header="x,y", comments="")
    out = os.path.join(tmp, "linear.h5")
    st.run(SIMMER, 2, ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--data.source", "csv",
                       "--data.path", data, "--data.features", "x", "--data.target", "y",
                       "--data.train", str(n_train), "--data.test", str(n_test), "--data.validation_fraction", "0.2",
                       "--model.architecture", "1-1", "--model.loss", "mse", "--adam.epochs", "2000",
                       "--adam.lr", "0.01", "--simmer.steps", "600", "--simmer.every", "100",
                       "--simmer.T_target", "0.001", "--simmer.dT", "0.0002", "--ensemble.window", "300",
                       "--ensemble.store_every", "10", "--run.trajectories", "4", "--output", out])
    with h5py.File(out, "r") as f:
        m = f["metrics"].attrs
        if st.text(m["ensemble_noise_source"]) != "validation":
            fail(f"the noise is not from the validation residuals: {m['ensemble_noise_source']}")
        sigma = np.sqrt(float(m["ensemble_noise_variance"]))
        if not 0.45 < sigma < 0.55:
            fail(f"noise sd {sigma}, the truth's is 0.5")
        for level, margin in ((50, 0.03), (90, 0.03), (95, 0.02)):
            got = float(m[f"ensemble_test_coverage_{level}"])
            if abs(got - level / 100) > margin:
                fail(f"predictive test coverage at {level} %: {got:.4f}, not within {margin} of {level / 100}")
            if float(m[f"ensemble_test_mean_coverage_{level}"]) > 0.5 * level / 100:
                fail("the members' own coverage (no noise) is as wide as the predictive one")
        x_test, y_test = f["data/test/x"][()], f["data/test/y"][()][:, 0]
    points = os.path.join(tmp, "linear_points.csv")
    np.savetxt(points, x_test, delimiter=",", header="x", comments="")
    header, rows = table(analyze(["predict", "--digits", "17", out, "--points", points, "--quantiles", "0.05,0.95"], ranks=2).stdout)
    got = coverage(y_test, column(header, rows, "q0.05_y"), column(header, rows, "q0.95_y"))
    if abs(got - m_coverage(out)) > 0.01:
        fail(f"predict's 90 % intervals cover {got:.4f} of the test rows, the run's {m_coverage(out):.4f}")
    sd, sd_model = column(header, rows, "sd_y"), column(header, rows, "sd_model_y")
    if not np.allclose(sd ** 2, sd_model ** 2 + sigma ** 2, rtol=1e-9):
        fail("predict's sd is not the networks' spread with the noise added")
    print(f"linear: sigma {sigma:.4f} (truth 0.5) from the validation residuals; predictive test coverage "
          f"50/90/95 % within 0.03/0.03/0.02 of nominal over {n_test} rows; predict's 90 % intervals cover {got:.4f}")


def m_coverage(path):
    with h5py.File(path, "r") as f:
        return float(f["metrics"].attrs["ensemble_test_coverage_90"])


def test_classification(tmp):
    out = os.path.join(tmp, "iris.h5")
    p = st.run(SIMMER, 2, IRIS + ["--output", out])
    # The end-of-run table: every row labelled (no continuation rows), no "loss nan" in progress.
    final = p.stdout[p.stdout.find("accuracy"):p.stdout.find("\nresult: ")]
    for needle in ("ensemble NLL", "ensemble Brier", "ensemble ECE (10 bins)", "Adam NLL", "Adam Brier"):
        if needle not in final:
            fail(f"the table has no row '{needle}':\n{final}")
    if any(line.startswith(" " * 20) and line.strip() for line in final.splitlines()) or "loss nan" in p.stdout:
        fail(f"an unlabelled row in the table, or 'loss nan' in the progress:\n{p.stdout[-3000:]}")
    points = os.path.join(tmp, "iris_points.csv")
    with h5py.File(out, "r") as f:
        names = st.strings(f["data/feature_names"])
        x = f["data/test/x"][()]
        params = f["posterior/params"][()].reshape(-1, f["posterior/params"].shape[2])
        layout = st.read_layout(f)
        probs = []
        for p in params:
            z = st.forward(p, layout, st.scaled(f, x))
            e = np.exp(z - z.max(axis=1, keepdims=True))
            probs.append(e / e.sum(axis=1, keepdims=True))
        classes = st.strings(f["data/class_names"])
    np.savetxt(points, x, delimiter=",", header=",".join(names), comments="")
    outs = [analyze(["predict", "--digits", "17", out, "--points", points], ranks=n).stdout for n in (1, 3)]
    if outs[0] != outs[1]:
        fail("iris: predict's probabilities differ between mpirun -n 1 and 3")
    header, rows = table(outs[0])
    probs = np.array(probs)
    mean = probs.mean(axis=0)
    entropy = lambda p: -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0), axis=-1)  # noqa: E731
    mi = entropy(mean) - entropy(probs).mean(axis=0)
    got = np.stack([column(header, rows, f"probability_{c}") for c in classes], axis=1)
    if not np.allclose(got, mean, rtol=1e-9, atol=1e-12):
        fail(f"iris: probability_<class> differs from numpy's mean softmax by {np.abs(got - mean).max():.3g}")
    if not np.allclose(column(header, rows, "entropy"), entropy(mean), rtol=1e-9, atol=1e-12):
        fail("iris: entropy differs from numpy's")
    if not np.allclose(column(header, rows, "mutual_information"), np.maximum(mi, 0), rtol=1e-7, atol=1e-12):
        fail("iris: mutual_information differs from numpy's")
    if list(column(header, rows, "prediction").astype(int)) != list(mean.argmax(axis=1)):
        fail("iris: prediction is not the arg max of the mean probability")
    votes = np.bincount(probs.argmax(axis=2).T.reshape(-1) + 3 * np.repeat(np.arange(len(x)), len(probs)),
                        minlength=3 * len(x)).reshape(len(x), 3)
    if list(column(header, rows, "vote_prediction").astype(int)) != list(votes.argmax(axis=1)):
        fail("iris: vote_prediction is not the networks' majority")
    print(f"classification: probability, entropy, mutual information and both predictions equal numpy's from "
          f"{len(probs)} stored networks; the same on 1 and 3 ranks")


def test_inputs(tmp):
    for precision in ("float64", "float32"):
        out = os.path.join(tmp, f"iris_{precision}.h5")
        st.run(SIMMER, 2, IRIS + ["--run.precision", precision, "--output", out])
        good = os.path.join(tmp, "good.csv")
        with open(good, "w") as fh:
            fh.write("sepal_width,petal_width\n3.0,0.2\n9,9\n3.0,9\n")
        header, rows = table(analyze(["predict", "--digits", "17", out, "--points", good]).stdout)
        flags = list(column(header, rows, "outside_training_range").astype(int))
        if flags != [0, 2, 1]:
            fail(f"{precision}: outside_training_range {flags}, expected [0, 2, 1]")
        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w") as fh:
            fh.write("sepal_width,petal_width\n3.0,0.2\n1e100,1e100\n")
        written = os.path.join(tmp, "written.csv")
        p = analyze(["predict", "--digits", "17", out, "--points", bad, "--out", written], ranks=2, expect=2)
        if "bad.csv:3" not in p.stderr or "'sepal_width'" not in p.stderr or os.path.exists(written):
            fail(f"{precision}: a row 1e100,1e100 is not refused naming line 3 and its column, or output was "
                 f"written:\n{p.stderr}")
    print("inputs: 9,9 flagged (2 features outside the training range), 1e100 refused naming bad.csv:3 "
          "(float64 and float32 archives), nothing written")


def test_merge(tmp):
    sine = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "200", "--simmer.steps", "300",
            "--simmer.every", "50", "--ensemble.window", "100", "--ensemble.store_every", "10",
            "--data.validation_fraction", "0.2", "--run.trajectories", "2"]
    a, b, ab = (os.path.join(tmp, n) for n in ("a.h5", "b.h5", "ab.h5"))
    st.run(SIMMER, 2, opts(sine, "--run.seed", "3", "--output", a))
    st.run(SIMMER, 2, opts(sine, "--run.seed", "4", "--output", b))
    analyze(["merge", a, b, "-o", ab])
    from scipy import stats
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb, h5py.File(ab, "r") as f:
        m = f["metrics"].attrs
        parts = {k: np.concatenate([fa[f"ensemble/test/{k}"][()], fb[f"ensemble/test/{k}"][()]])
                 for k in ("trajectory_members", "trajectory_mean", "trajectory_variance")}
        for k, v in parts.items():
            if not np.array_equal(f[f"ensemble/test/{k}"][()], v):
                fail(f"merge: /ensemble/test/{k} is not the inputs' concatenated")
        noise = np.mean((f["ensemble/validation/mean"][()] - f["data/validation/y"][()]) ** 2, axis=0)
        if not np.allclose(f["ensemble/noise_variance"][()], noise, rtol=1e-12) or \
                st.text(m["ensemble_noise_source"]) != "validation":
            fail("merge: the merged ensemble's noise is not its mean's validation residuals")
        w = parts["trajectory_members"] / parts["trajectory_members"].sum()
        y = f["data/test/y"][()]
        pit = np.tensordot(w, stats.norm.cdf((y - parts["trajectory_mean"]) /
                                             np.sqrt(parts["trajectory_variance"] + noise)), axes=1)
        for level in (50, 90, 95):
            q = (1 - level / 100) / 2
            want = np.mean((pit >= q) & (pit <= 1 - q))
            if not np.isclose(float(m[f"ensemble_test_coverage_{level}"]), want, rtol=0, atol=1e-15):
                fail(f"merge: predictive coverage {level} % {m[f'ensemble_test_coverage_{level}']}, scipy {want}")
        deep = np.concatenate([fa["baseline/test/prediction"][()], fb["baseline/test/prediction"][()]])
        deep_noise = np.mean((np.concatenate([fa["baseline/validation/prediction"][()],
                                              fb["baseline/validation/prediction"][()]]).mean(axis=0)
                              - f["data/validation/y"][()]) ** 2, axis=0)
        pit = np.mean(stats.norm.cdf((y - deep) / np.sqrt(deep_noise)), axis=0)
        want = np.mean((pit >= 0.05) & (pit <= 0.95))
        if not np.isclose(float(m["deep_ensemble_test_coverage_90"]), want, rtol=0, atol=1e-15):
            fail(f"merge: the deep ensemble's coverage {m['deep_ensemble_test_coverage_90']}, scipy {want}")
    print("merge: the mixture's components concatenated, sigma^2 from the merged mean's validation residuals, "
          "predictive coverage (run's and deep ensemble's) equal to scipy's")


def test_autompg(tmp):
    out = os.path.join(tmp, "autompg.h5")
    p = st.run(SIMMER, 2, ["--config", os.path.join(ROOT, "jobs/autompg_m_ladder.ini"),
                           "--data.path", os.path.join(ROOT, "data/auto-mpg.csv"),
                           "--simmer.steps", "2000", "--ensemble.window", "1500", "--output", out], timeout=900)
    # The run's last lines, for a person: the result, the deep ensemble's comparison with the
    # validation noise, and what to do about the verdicts.
    tail = p.stdout[p.stdout.rfind("\nresult: "):]
    for needle in ("result: the run's ensemble is rung_", "against the deep ensemble (8 Adam networks): validation NLL",
                   "over 63 rows: ", "test NLL", "simmer_analyze predict"):
        if needle not in tail:
            fail(f"the run's last lines lack '{needle}':\n{tail}")
    if "not mixed" in p.stdout.split("stationarity of")[-1].split("\n")[0] and "what to do: " not in tail:
        fail(f"trajectories not mixed, and the last lines do not say what to do:\n{tail}")
    # The window line: how long a window the run's own split-R-hats ask for (and summary's, the same).
    # Regression over a 1 500-step window does not mix here, so both must have the line.
    if not st.check_window_line(p.stdout, out, 1500):
        fail("Auto-MPG M over 1 500 steps: no split-R-hat above 1.1, so this test no longer sees the window line")
    st.check_window_line(st.run(ANALYZE, None, ["summary", out]).stdout, out, 1500)
    with h5py.File(out, "r") as f:
        m = f["metrics"].attrs
        c50, c90 = float(m["ensemble_test_coverage_50"]), float(m["ensemble_test_coverage_90"])
        source = st.text(m["ensemble_noise_source"])
        variance = float(m["ensemble_noise_variance"])
        chosen = st.text(m["ensemble"])
    if not (0.80 <= c90 <= 0.97 and 0.35 <= c50 <= 0.65):
        fail(f"Auto-MPG M ladder ({chosen}): predictive test coverage 50/90 % = {c50:.3f}/{c90:.3f}, outside "
             "[0.35, 0.65] / [0.80, 0.97]")
    if source != "validation" or not variance > 0:
        fail(f"Auto-MPG: /metrics does not name the noise estimate: {source} {variance}")
    print(f"autompg: the run's ensemble ({chosen}) covers {c50:.3f} / {c90:.3f} of the test rows at 50 / 90 %; "
          f"noise variance {variance:.4g} from the {source} residuals")
