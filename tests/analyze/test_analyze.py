#!/usr/bin/python3
"""End-to-end checks of simmer_analyze on small simmer_mpi runs (pytest functions, one CTest test
each, "analyze: <test>": tests/conftest.py says how to run them by hand; Debian's /usr/bin/python3,
which has h5py, numpy, scipy and xarray). The archive files' checks (badfiles, verify, incomplete)
are in tests/analyze/test_analyze_files.py; the shared runs and helpers in analyze_common.py.

tests: summary   configuration, metrics and health of an Iris and a sine run; split-R-hat and ESS
                 equal an independent numpy transcription of ArviZ's; n/a for one trajectory;
                 NaN rows of a stopped trajectory are skipped
       predict   on the archive's own test inputs with every member stored (float64): votes equal
                 /ensemble/test/votes, the sine mean equals /ensemble/test/mean; quantiles equal
                 numpy's; identical output under mpirun -n 1, 2 and 3; float32 archives read
       merge     merge(A, B) against A and B combined in numpy (posterior concatenated, votes
                 added, means combined by Chan's formula, metrics recomputed); A merged with itself
                 doubles votes and chains; xarray opens the result; incompatible runs refused
       export    trace, samples (and --params) and ensemble tables equal the archive's arrays
"""
import os
import re
import shutil
import sys

import h5py
import numpy as np
from scipy import optimize, stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# tests/analyze/analyze_common.py: the small runs, launchers, ArviZ's R-hat and ESS in numpy, and
# the module-scoped runs (fixtures iris_run, sine_run) that several tests read.
from analyze_common import (IRIS_SMALL, ROOT, SINE_SMALL, analyze, bulk_ess, diagnostics_line,  # noqa: E402
                            ess, fail, names_of, next_line, opts, rank_rhat, read_csv, rhat, simmer, st,
                            write_idx, write_points)
from analyze_common import iris_run, sine_run  # noqa: E402,F401  (fixtures)


# --- summary ----------------------------------------------------------------------------------
def _summary_iris(iris):
    """The Iris run's summary: highlights, R-hat and ESS (all draws, last stage, rank-normalised)
    equal numpy's, and /diagnostics' member series. Returns /sample_stats/loss."""
    text = analyze(["summary", iris]).stdout
    with h5py.File(iris, "r") as f:
        m = f["metrics"].attrs
        expect = ["classification", "2-100-50-50-3", "retrofit", "4 trajectories", "400 steps",
                  "h = 0.002", "0 -> 0.1 by 0.01 every 50 steps", f"{int(m['members'])} members",
                  "4 × 100 draws", "status 'complete'",
                  f"{m['ensemble_test_accuracy']:.4f}", f"{m['baseline_test_accuracy_mean']:.4f}",
                  "mean T_kin", "H_ext drift", "split-R̂"]
        for e in expect:
            if e not in text:
                fail(f"summary lacks '{e}':\n{text}")
        loss = f["sample_stats/loss"][()]
        temps = f["sample_stats/temperature"][()]
        kin = f["sample_stats/kinetic_temperature"][()]
    # Split-R-hat and ESS over all draws equal the numpy transcription of ArviZ's.
    line = diagnostics_line(text, "all stored draws")
    want = f"split-R̂ {rhat(loss):.3f}, ESS {ess(loss):.0f} of 400 draws (4 chains × 100)"
    if want not in line:
        fail(f"diagnostics '{line.strip()}' differ from numpy's '{want}'")
    # ... and the rank-normalised R-hat and bulk ESS (with bulk ESS per second) follow it.
    want = f"rank-normalised R̂ {rank_rhat(loss):.3f}, bulk ESS {bulk_ess(loss):.0f}, "
    if want not in next_line(text, line) or "per second of the run's" not in next_line(text, line):
        fail(f"rank diagnostics '{next_line(text, line).strip()}' differ from numpy's '{want}'")
    last = temps[0, -1]
    sel = temps[0] == last
    line = diagnostics_line(text, "last stage")
    want = f"split-R̂ {rhat(loss[:, sel]):.3f}, ESS {ess(loss[:, sel]):.0f}"
    if want not in line:
        fail(f"last-stage diagnostics '{line.strip()}' differ from numpy's '{want}'")
    # Mean kinetic temperature of chain 0 at the last stage.
    if f"{kin[0, sel].mean():.5g}" not in text:
        fail(f"chain 0's mean T_kin at T = {last} ({kin[0, sel].mean():.5g}) is not in the summary")

    # Every member's series in /diagnostics (issue 21): its training losses are the stored draws'
    # (every member is stored here), and the pooled R-hat and bulk ESS equal numpy's.
    with h5py.File(iris, "r") as f:
        d = f["diagnostics"]
        series = d["series_train_loss"][()]
        if series.shape != loss.shape or not np.array_equal(series, loss):
            fail("/diagnostics/series_train_loss differs from /sample_stats/loss of the same members")
        for name in ("train_loss", "test_metric", "point_0", "point_2"):
            values = d[f"series_{name}"][()]
            for key, want in (("bulk_ess", bulk_ess(values)), ("rank_rhat", rank_rhat(values))):
                got = float(d.attrs[f"{key}_{name}"])
                if not np.isclose(got, want, rtol=1e-9, atol=0):
                    fail(f"/diagnostics {key}_{name} = {got}, numpy's {want}")
        per_second = f"train_loss {rank_rhat(series):.3f}, {bulk_ess(series):.0f}, " \
                     f"{bulk_ess(series) / float(f.attrs['wall_seconds']):.3g}/s"
        # Classification: log-probabilities of the true class at fixed test rows.
        points = d["series_point_1"][()]
        if not (np.all(points <= 0) and np.all(np.isfinite(points))):
            fail("series_point_1 is not a log-probability")
    if "member series (every member" not in text or per_second not in text:
        fail(f"summary lacks the member series' R-hat and bulk ESS:\n{text}")
    return loss


def test_summary(tmp, sine_run):
    iris = os.path.join(tmp, "iris.h5")
    sine = sine_run
    simmer(2, opts(IRIS_SMALL, "--run.trajectories", "4", "--output", iris))
    loss = _summary_iris(iris)

    # A stopped trajectory: its unwritten rows read NaN and are skipped.
    stopped = os.path.join(tmp, "stopped.h5")
    shutil.copy(iris, stopped)
    with h5py.File(stopped, "r+") as f:
        for k in ("step", "temperature", "loss", "kinetic_temperature", "extended_energy"):
            f[f"sample_stats/{k}"][1, 60:] = np.nan
        f["sample_stats/diverged_at_step"][1] = 321
        # Written as a run would have: its content digest follows (else summary rightly says DAMAGED).
        digest = st.content_digest(f["sample_stats/diverged_at_step"][()])
        f["sample_stats/diverged_at_step"].attrs.create("content_fnv1a64", np.bytes_(digest))
    text = analyze(["summary", stopped]).stdout
    line = diagnostics_line(text, "all stored draws")
    want = f"split-R̂ {rhat(loss[:, :60]):.3f}, ESS {ess(loss[:, :60]):.0f} of 240 draws (4 chains × 60)"
    if want not in line or "step 321" not in text:
        fail(f"NaN rows not skipped: '{line.strip()}' vs '{want}'\n{text}")

    # One trajectory: no R-hat.
    simmer(1, opts(IRIS_SMALL, "--run.trajectories", "1", "--output", os.path.join(tmp, "one.h5")))
    text = analyze(["summary", os.path.join(tmp, "one.h5")]).stdout
    if "split-R̂ n/a, ESS n/a" not in text:
        fail(f"one trajectory: expected n/a diagnostics:\n{text}")
    # The sine run (sine_run: SINE_SMALL on 2 ranks).
    text = analyze(["summary", sine]).stdout
    with h5py.File(sine, "r") as f:
        mse = f["metrics"].attrs["ensemble_test_mse"]
    for e in ("regression", "1-20-20-1", "ensemble MSE", "ensemble R²", f"{mse:.4g}"):
        if e not in text:
            fail(f"sine summary lacks '{e}':\n{text}")
    print("summary: highlights, metrics, health and R-hat/ESS (= numpy's) of Iris and sine runs")


# --- predict ----------------------------------------------------------------------------------
def _predict_iris(tmp, iris):
    """Iris: votes and majority equal the run's, identical for -n 1, 2, 3 and without mpirun."""
    pts = os.path.join(tmp, "iris_points.csv")
    with h5py.File(iris, "r") as f:
        write_points(pts, names_of(f, "data/feature_names"), f["data/test/x"][()])
        votes = f["ensemble/test/votes"][()]
        majority = f["ensemble/test/prediction"][()]
        classes = names_of(f, "data/class_names")
    outs = {}
    for n in (1, 2, 3):
        out = os.path.join(tmp, f"iris_pred_{n}.csv")
        analyze(["predict", "--digits", "17", iris, "--points", pts, "--out", out], ranks=n)
        outs[n] = open(out).read()
    if not outs[1] == outs[2] == outs[3]:
        fail("iris: predict output differs between mpirun -n 1, 2 and 3")
    header, rows = read_csv(outs[1])
    # The points file's text column 'label' is copied through (--keep's default: every column
    # that is not a feature).
    want = (["point", "label", "prediction", "prediction_class"] + [f"probability_{c}" for c in classes]
            + ["entropy", "mutual_information"] + [f"fraction_{c}" for c in classes]
            + ["vote_prediction", "vote_prediction_class", "outside_training_range"])
    if header != want:
        fail(f"iris: header {header}")
    at = {name: i for i, name in enumerate(header)}
    if {r[at["label"]] for r in rows} != {"ignored"}:
        fail("iris: the points' label column was not copied through")
    fraction = np.array([[float(r[at[f"fraction_{c}"]]) for c in classes] for r in rows])
    members = votes.sum(axis=1)[0]
    if not np.array_equal(np.rint(fraction * members).astype(np.int64), votes):
        fail("iris: predicted vote fractions differ from /ensemble/test/votes")
    if not np.array_equal([int(r[at["vote_prediction"]]) for r in rows], majority):
        fail("iris: predicted majority differs from /ensemble/test/prediction")
    if [r[at["vote_prediction_class"]] for r in rows] != [classes[m] for m in majority]:
        fail("iris: majority class names wrong")
    # Without mpirun (a singleton MPI process) too, to stdout.
    if analyze(["predict", "--digits", "17", iris, "--points", pts]).stdout != outs[1]:
        fail("iris: stdout output differs from --out")
    # The defaults: 7 significant digits; --keep '' copies nothing.
    header, rows = read_csv(analyze(["predict", iris, "--points", pts, "--keep", ""]).stdout)
    if "label" in header:
        fail(f"iris: --keep '' still copies the label column: {header}")
    digits = max(len(v.replace("-", "").replace(".", "").split("e")[0].lstrip("0")) for r in rows for v in r[1:]
                 if re.fullmatch(r"-?[0-9.]+(e[-+][0-9]+)?", v))
    if digits > 7:
        fail(f"iris: a number with {digits} significant digits at the default --digits 7")
    # A points file without one of the features: named as missing, with every feature needed.
    with h5py.File(iris, "r") as f:
        names = names_of(f, "data/feature_names")
    lacking = os.path.join(tmp, "iris_lacking.csv")
    with open(lacking, "w") as fh:
        fh.write("id," + names[0] + "\n7,3.0\n")
    p = analyze(["predict", iris, "--points", lacking], expect=2)
    if f"the column(s) '{names[1]}' are missing" not in p.stderr or ",".join(names) not in p.stderr:
        fail(f"iris: a missing feature column is not named as missing with the columns needed:\n{p.stderr}")


def _predict_sine(tmp, sine):
    """Sine: mean, sd and quantiles (scipy's of the predictive mixture). Returns the points file
    and the run's test mean."""
    pts = os.path.join(tmp, "sine_points.csv")
    with h5py.File(sine, "r") as f:
        write_points(pts, names_of(f, "data/feature_names"), f["data/test/x"][()], extra=False)
        mean, var = f["ensemble/test/mean"][()][:, 0], f["ensemble/test/variance"][()][:, 0]
        noise = f["ensemble/noise_variance"][0]
        params = f["posterior/params"][()]
        x = f["data/test/x"][()]
        lo, hi = f["data/scaling/x_min"][()], f["data/scaling/x_max"][()]
        ylo, yhi = f["data/scaling/y_min"][()], f["data/scaling/y_max"][()]
        layout = st.read_layout(f)
    outs = {}
    for n in (1, 3):
        out = os.path.join(tmp, f"sine_pred_{n}.csv")
        analyze(["predict", "--digits", "17", sine, "--points", pts, "--out", out, "--quantiles", "0.1,0.5,0.9"], ranks=n)
        outs[n] = open(out).read()
    if outs[1] != outs[3]:
        fail("sine: predict output differs between mpirun -n 1 and 3")
    header, rows = read_csv(outs[1])
    if header != ["point", "mean_y", "sd_y", "sd_model_y", "q0.1_y", "q0.5_y", "q0.9_y", "outside_training_range"]:
        fail(f"sine: header {header}")
    table = np.array([[float(v) for v in r] for r in rows])
    rel = np.max(np.abs(table[:, 1] - mean) / np.maximum(np.abs(mean), 1e-300))
    if rel > 1e-12:
        fail(f"sine: predicted mean differs from /ensemble/test/mean by {rel:.3g} (relative)")
    members = params.shape[0] * params.shape[1]
    if not np.allclose(table[:, 3] ** 2, var * (members - 1) / members, rtol=1e-9, atol=1e-15):
        fail("sine: the networks' sd (sd_model) differs from /ensemble/test/variance")
    if not np.allclose(table[:, 2] ** 2, table[:, 3] ** 2 + noise, rtol=1e-9, atol=1e-15):
        fail("sine: the predictive sd is not the networks' sd with the noise added")
    # Quantiles against scipy's of the predictive mixture (forward pass in numpy).
    xs = 2 * (x - lo) / (hi - lo) - 1
    preds = np.array([st.forward(params[c, d], layout, xs)[:, 0] * (yhi - ylo) / 2 + (yhi + ylo) / 2
                      for c in range(params.shape[0]) for d in range(params.shape[1])])
    for i in range(len(rows)):
        cdf = lambda y: np.mean(stats.norm.cdf((y - preds[:, i]) / np.sqrt(noise)))  # noqa: E731
        for j, level in enumerate((0.1, 0.5, 0.9)):
            want = optimize.brentq(lambda y: cdf(y) - level, -50, 50, xtol=1e-13)
            if not np.isclose(table[i, 4 + j], want, rtol=1e-9, atol=1e-9):
                fail(f"sine point {i}: predictive quantile {level} {table[i, 4 + j]}, scipy {want}")
    return pts, mean


def _predict_lenet(tmp):
    """LeNet-5 on IDX files the test writes: predicted votes equal the run's."""
    # LeNet-5: the input shape comes from /model's input_shape attribute.
    idx = os.path.join(tmp, "idx")
    os.mkdir(idx)
    rng = np.random.default_rng(5)
    write_idx(idx, "train", 150, rng)
    write_idx(idx, "t10k", 30, rng)
    lenet = os.path.join(tmp, "lenet.h5")
    simmer(2, ["--config", os.path.join(ROOT, "jobs/mnist_retrofit.ini"), "--data.path", idx,
               "--data.train", "100", "--data.test", "20", "--adam.epochs", "5", "--simmer.steps", "20",
               "--simmer.every", "10", "--ensemble.window", "10", "--ensemble.store_every", "1",
               "--ensemble.store_dtype", "float64", "--run.trajectories", "2",
               "--simmer.stability_check", "warn", "--output", lenet])
    pts = os.path.join(tmp, "lenet_points.csv")
    with h5py.File(lenet, "r") as f:
        write_points(pts, names_of(f, "data/feature_names"), f["data/test/x"][()])
        votes = f["ensemble/test/votes"][()]
    header, rows = read_csv(analyze(["predict", "--digits", "17", lenet, "--points", pts], ranks=2).stdout)
    first = header.index([h for h in header if h.startswith("fraction_")][0])
    fraction = np.array([[float(v) for v in r[first:first + 10]] for r in rows])
    if not np.array_equal(np.rint(fraction * votes.sum(axis=1)[0]).astype(np.int64), votes):
        fail("lenet5: predicted votes differ from /ensemble/test/votes")


def test_predict(tmp, iris_run, sine_run):
    sine = sine_run
    _predict_iris(tmp, iris_run)
    pts, mean = _predict_sine(tmp, sine)

    # float32 storage, every 2nd member: reads and evaluates every stored network.
    f32 = os.path.join(tmp, "sine32.h5")
    simmer(1, opts(SINE_SMALL, "--ensemble.store_dtype", "float32", "--ensemble.store_every", "2", "--output", f32))
    header, rows = read_csv(analyze(["predict", "--digits", "17", f32, "--points", pts]).stdout)
    got = np.array([float(r[1]) for r in rows])
    if len(rows) != len(mean) or not np.all(np.isfinite(got)) or np.max(np.abs(got - mean)) > 0.2:
        fail("float32 archive: predictions missing or far from the float64 run's ensemble")
    # A points file without a feature column is refused naming it.
    bad = os.path.join(tmp, "bad_points.csv")
    with open(bad, "w") as fh:
        fh.write("z\n1\n")
    p = analyze(["predict", "--digits", "17", sine, "--points", bad], expect=2)
    if "bad_points.csv" not in p.stderr or "'x'" not in p.stderr:
        fail(f"points without column x: message does not name the file and column:\n{p.stderr}")
    _predict_lenet(tmp)
    print("predict: votes (Iris, LeNet-5) and means (sine) equal the run's ensemble; identical for -n 1, 2, 3")


# --- merge ------------------------------------------------------------------------------------
def _check_iris_merge(a, b, ab):
    """The merged Iris archive against A and B combined in numpy."""
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb, h5py.File(ab, "r") as fm:
        def both(key):
            return np.concatenate([fa[key][()], fb[key][()]])
        for key in ("posterior/params", "sample_stats/step", "sample_stats/loss", "sample_stats/temperature",
                    "sample_stats/kinetic_temperature", "sample_stats/extended_energy",
                    "sample_stats/diverged_at_step", "trace/train_loss", "trace/step", "initial/params",
                    "initial/velocity", "baseline/params", "baseline/train_accuracy", "baseline/test_accuracy",
                    "baseline/test/prediction"):
            if key not in fa or key not in fm:  # (this test's own runs write every one of them)
                fail(f"/{key} is missing from an input or the merged archive")
            got, want = fm[key][()], both(key)
            if not np.array_equal(got, want, equal_nan=got.dtype.kind == "f"):
                fail(f"merged /{key} is not A's then B's")
        if fm.attrs["trajectories"] != 5 or fm["posterior/params"].shape[0] != 5:
            fail("merged archive does not have 5 chains")
        # Every member's series: A's chains then B's, their R-hat and bulk ESS recomputed over all five.
        for name in ("train_loss", "test_metric", "point_0"):
            got, want = fm[f"diagnostics/series_{name}"][()], both(f"diagnostics/series_{name}")
            if not np.array_equal(got, want):
                fail(f"merged /diagnostics/series_{name} is not A's then B's")
            for key, value in (("bulk_ess", bulk_ess(want)), ("rank_rhat", rank_rhat(want))):
                if not np.isclose(fm["diagnostics"].attrs[f"{key}_{name}"], value, rtol=1e-9, atol=0):
                    fail(f"merged /diagnostics {key}_{name} is not numpy's over the five chains")
        if not np.array_equal(fm["posterior/chain"][()], np.arange(5)):
            fail("chains not renumbered 0..4")
        for split in ("train", "test"):
            votes = fa[f"ensemble/{split}/votes"][()] + fb[f"ensemble/{split}/votes"][()]
            if not np.array_equal(fm[f"ensemble/{split}/votes"][()], votes):
                fail(f"merged {split} votes are not A's + B's")
            n = fa["metrics"].attrs["members"] + fb["metrics"].attrs["members"]
            if fm[f"ensemble/{split}"].attrs["members"] != n:
                fail(f"merged {split} members attribute")
            if not np.allclose(fm[f"ensemble/{split}/fraction"][()], votes / n, rtol=0, atol=1e-15):
                fail(f"merged {split} fractions are not votes / members")
            pred = np.argmax(votes, axis=1)
            if not np.array_equal(fm[f"ensemble/{split}/prediction"][()], pred):
                fail(f"merged {split} majority")
            acc = np.mean(pred == fm[f"data/{split}/y"][()])
            if not np.isclose(fm["metrics"].attrs[f"ensemble_{split}_accuracy"], acc, rtol=1e-15):
                fail(f"merged ensemble {split} accuracy is not recomputed")
            base = both(f"baseline/{split}_accuracy")
            if not np.isclose(fm["metrics"].attrs[f"baseline_{split}_accuracy_mean"], base.mean()) or \
                    not np.isclose(fm["metrics"].attrs[f"baseline_{split}_accuracy_sd"], base.std(ddof=1), atol=1e-15):
                fail(f"merged baseline {split} mean/sd")
        if fm["metrics"].attrs["members"] != fa["metrics"].attrs["members"] + fb["metrics"].attrs["members"]:
            fail("merged /metrics members")
        for k in ("data/train/x", "data/test/y", "data/scaling/x_min", "model/tensor_offset"):
            if not np.array_equal(fm[k][()], fa[k][()]):
                fail(f"/{k} not copied from the first archive")
        if b"11,12" not in fm["config"].attrs["run_seeds"] and "11,12" not in str(fm["config"].attrs["run_seeds"]):
            fail("/config does not note the seeds")


def _merge_iris(tmp):
    """Two Iris runs merged (checked in numpy, read by xarray and summary); A with itself refused.
    Returns the paths of A, B and their merge."""
    a, b = os.path.join(tmp, "a.h5"), os.path.join(tmp, "b.h5")
    simmer(2, opts(IRIS_SMALL, "--run.trajectories", "2", "--run.seed", "11", "--output", a))
    simmer(2, opts(IRIS_SMALL, "--run.trajectories", "3", "--run.seed", "12", "--run.gather_interval", "100",
                   "--output", b))
    ab = os.path.join(tmp, "ab.h5")
    print(analyze(["merge", a, b, "-o", ab]).stdout.strip())
    _check_iris_merge(a, b, ab)
    import xarray as xr
    post = xr.open_dataset(ab, group="posterior", engine="netcdf4")
    stats_ds = xr.open_dataset(ab, group="sample_stats", engine="netcdf4")
    if post["params"].dims != ("chain", "draw", "param") or stats_ds["loss"].dims != ("chain", "draw"):
        fail("merged archive lost its named dimensions")
    # The merged archive is itself an archive: summary and predict read it.
    analyze(["summary", ab])

    # A merged with itself (or a copy of itself) would count its trajectories twice: refused.
    aa = os.path.join(tmp, "aa.h5")
    a_copy = os.path.join(tmp, "a_copy.h5")
    shutil.copy(a, a_copy)
    for second in (a, a_copy):
        p = analyze(["merge", a, second, "-o", aa], expect=None)
        if p.returncode == 0 or "same run" not in p.stdout + p.stderr or os.path.exists(aa):
            fail(f"merging an archive with {second} was not refused as the same run:\n{p.stdout}{p.stderr}")
    with h5py.File(ab, "r") as fm, h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        stiff = "harmonic_loss_rise_stiff_modes"
        want = (2 * fa["metrics"].attrs[stiff] + 3 * fb["metrics"].attrs[stiff]) / 5
        if stiff not in fm["metrics"].attrs or not np.isclose(fm["metrics"].attrs[stiff], want, rtol=1e-12):
            fail(f"the merged archive lost or miscounted /metrics@{stiff}")
    return a, b, ab


def _merge_sine(tmp):
    """Two sine runs merged; returns the first (sa), which the refusals merge with an Iris run."""
    # Regression: means and variances combine by Chan's formula.
    sa, sb = os.path.join(tmp, "sa.h5"), os.path.join(tmp, "sb.h5")
    simmer(2, opts(SINE_SMALL, "--run.trajectories", "2", "--run.seed", "3", "--output", sa))
    simmer(1, opts(SINE_SMALL, "--run.trajectories", "1", "--run.seed", "4", "--output", sb))
    sab = os.path.join(tmp, "sab.h5")
    analyze(["merge", sa, sb, "-o", sab])
    with h5py.File(sa, "r") as fa, h5py.File(sb, "r") as fb, h5py.File(sab, "r") as fm:
        na, nb = fa["metrics"].attrs["members"], fb["metrics"].attrs["members"]
        for split in ("train", "test"):
            ma, mb = fa[f"ensemble/{split}/mean"][()], fb[f"ensemble/{split}/mean"][()]
            va, vb = fa[f"ensemble/{split}/variance"][()], fb[f"ensemble/{split}/variance"][()]
            n = na + nb
            mean = (na * ma + nb * mb) / n
            var = ((na - 1) * va + (nb - 1) * vb + (mb - ma) ** 2 * na * nb / n) / (n - 1)
            if not np.allclose(fm[f"ensemble/{split}/mean"][()], mean, rtol=1e-12, atol=1e-14):
                fail(f"sine: merged {split} mean is not the members' combined mean")
            if not np.allclose(fm[f"ensemble/{split}/variance"][()], var, rtol=1e-10, atol=1e-14):
                fail(f"sine: merged {split} variance is not the members' combined variance")
            y = fm[f"data/{split}/y"][()]
            mse = np.mean((fm[f"ensemble/{split}/mean"][()] - y) ** 2)
            if not np.isclose(fm["metrics"].attrs[f"ensemble_{split}_mse"], mse, rtol=1e-12):
                fail(f"sine: merged ensemble {split} MSE is not recomputed")
    # Predicting with the merged archive (all members stored) gives the merged mean.
    pts = os.path.join(tmp, "sine_points.csv")
    with h5py.File(sab, "r") as f:
        write_points(pts, names_of(f, "data/feature_names"), f["data/test/x"][()], extra=False)
        mean = f["ensemble/test/mean"][()][:, 0]
    _, rows = read_csv(analyze(["predict", "--digits", "17", sab, "--points", pts], ranks=2).stdout)
    if not np.allclose([float(r[1]) for r in rows], mean, rtol=1e-12, atol=1e-14):
        fail("predict on the merged archive differs from its merged ensemble mean")
    return sa


def _merge_refusals(tmp, a, b, ab, sa):
    """Merges refused naming the key (steps, split, data source) or --overwrite; none leaves a file."""
    # Refusals: another study, different data, an existing output.
    c = os.path.join(tmp, "c.h5")
    simmer(1, opts(IRIS_SMALL, "--run.trajectories", "1", "--simmer.steps", "360", "--output", c))
    out = os.path.join(tmp, "refused.h5")
    p = analyze(["merge", a, c, "-o", out], expect=2)
    if "simmer.steps" not in p.stderr or "'400'" not in p.stderr or "'360'" not in p.stderr:
        fail(f"incompatible steps: message does not name the key and both values:\n{p.stderr}")
    d = os.path.join(tmp, "d.h5")
    simmer(1, opts(IRIS_SMALL, "--run.trajectories", "1", "--data.split_seed", "9", "--output", d))
    p = analyze(["merge", a, d, "-o", out], expect=2)
    if "different data" not in p.stderr or "data.split_seed" not in p.stderr:
        fail(f"different split: message does not say different data:\n{p.stderr}")
    p = analyze(["merge", a, sa, "-o", out], expect=2)
    if "data.source" not in p.stderr:
        fail(f"iris + sine: message does not name data.source:\n{p.stderr}")
    if os.path.exists(out) or os.path.exists(out + ".partial"):
        fail("a refused merge left a file behind")
    p = analyze(["merge", a, b, "-o", ab], expect=2)
    if "--overwrite" not in p.stderr:
        fail("existing output: no refusal mentioning --overwrite")
    analyze(["merge", a, b, "-o", ab, "--overwrite"])


def test_merge(tmp):
    a, b, ab = _merge_iris(tmp)
    sa = _merge_sine(tmp)
    _merge_refusals(tmp, a, b, ab, sa)
    print("merge: concatenation, votes, Chan means and metrics equal numpy's; refusals name the key")


# --- export -----------------------------------------------------------------------------------
def _export_iris(iris):
    """Trace, samples and ensemble tables of the Iris run against its arrays."""
    with h5py.File(iris, "r") as f:
        header, rows = read_csv(analyze(["export", iris, "--what", "trace"]).stdout)
        if header != ["chain", "phase", "step", "temperature", "train_loss", "test_loss", "distance",
                      "path_length", "param_rms", "param_max_abs"]:
            fail(f"trace header {header}")
        t = np.array([[float(v) for v in r] for r in rows])
        C, R = f["trace/step"].shape
        for j, k in enumerate(header[1:], start=1):
            want = f[f"trace/{k}"][()].reshape(-1)
            if not np.array_equal(t[:, j], want, equal_nan=True):
                fail(f"trace column {k} differs from /trace/{k}")
        if not np.array_equal(t[:, 0], np.repeat(np.arange(C), R)):
            fail("trace chain column")
        header, rows = read_csv(analyze(["export", iris, "--what", "samples"]).stdout)
        if header != ["chain", "draw", "step", "temperature", "loss", "kinetic_temperature", "extended_energy"]:
            fail(f"samples header {header}")
        s = np.array([[float(v) for v in r] for r in rows])
        for j, k in enumerate(header[2:], start=2):
            if not np.array_equal(s[:, j], f[f"sample_stats/{k}"][()].reshape(-1)):
                fail(f"samples column {k} differs")
        header, rows = read_csv(analyze(["export", iris, "--what", "ensemble"]).stdout)
        classes = names_of(f, "data/class_names")
        want = (["set", "row", "label", "label_class", "prediction", "prediction_class"]
                + [f"probability_{c}" for c in classes] + ["entropy", "mutual_information"]
                + [f"fraction_{c}" for c in classes] + ["vote_prediction", "vote_prediction_class"])
        if header != want:
            fail(f"ensemble header {header}")
        at = {name: i for i, name in enumerate(header)}
        test = [r for r in rows if r[0] == "test"]
        column = lambda name: np.array([float(r[at[name]]) for r in test])  # noqa: E731
        fraction = np.stack([column(f"fraction_{c}") for c in classes], axis=1)
        if not np.array_equal(fraction, f["ensemble/test/fraction"][()]):
            fail("ensemble fractions differ")
        if list(column("vote_prediction").astype(int)) != list(f["ensemble/test/prediction"][()]):
            fail("ensemble votes' predictions differ")
        if list(column("label").astype(int)) != list(f["data/test/y"][()]):
            fail("ensemble labels differ from /data/test/y")
        # The mean probability, its entropy and the mutual information against numpy.
        p = f["ensemble/test/probability"][()]
        probability = np.stack([column(f"probability_{c}") for c in classes], axis=1)
        entropy = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0), axis=1)
        mi = np.maximum(entropy - f["ensemble/test/member_entropy"][()], 0)
        if not (np.array_equal(probability, p) and list(column("prediction").astype(int)) == list(p.argmax(axis=1))
                and np.allclose(column("entropy"), entropy, rtol=1e-12, atol=1e-15)
                and np.allclose(column("mutual_information"), mi, rtol=1e-9, atol=1e-14)):
            fail("ensemble probability, prediction, entropy or mutual information differ from numpy's")
        if len(rows) != f["data/train/x"].shape[0] + f["data/test/x"].shape[0]:
            fail("ensemble rows")


def _export_sine(tmp):
    """Sine: --params with a stopped trajectory's NaN rows, the regression ensemble table."""
    sine = os.path.join(tmp, "sine.h5")
    # Samples with parameters (sine: 481 parameters), and a stopped trajectory's NaN rows.
    simmer(1, opts(SINE_SMALL, "--run.trajectories", "2", "--output", sine))
    with h5py.File(sine, "r+") as f:
        for k in ("step", "temperature", "loss", "kinetic_temperature", "extended_energy"):
            f[f"sample_stats/{k}"][1, 50:] = np.nan
        f["posterior/params"][1, 50:, :] = np.nan
        params = f["posterior/params"][()]
    with h5py.File(sine, "r") as f:  # (read-only: HDF5 locks a file open for writing)
        out = os.path.join(tmp, "params.csv")
        analyze(["export", sine, "--what", "samples", "--params", "--out", out])
        header, rows = read_csv(open(out).read())
        if header != ["chain", "draw", "param", "value"]:
            fail(f"params header {header}")
        P = params.shape[2]
        if len(rows) != (100 + 50) * P:
            fail(f"params rows {len(rows)}, expected {(100 + 50) * P}")
        v = np.array([float(r[3]) for r in rows])
        if not np.array_equal(v, np.concatenate([params[0].reshape(-1), params[1, :50].reshape(-1)])):
            fail("params values differ from /posterior/params")
        header, rows = read_csv(analyze(["export", sine, "--what", "samples"]).stdout)
        if len(rows) != 150:
            fail("NaN sample rows were not skipped")
        header, rows = read_csv(analyze(["export", sine, "--what", "ensemble"]).stdout)
        if header != ["set", "row", "y_y", "mean_y", "sd_y", "sd_model_y", "q0.025_y", "q0.975_y"]:
            fail(f"regression ensemble header {header}")
        test = np.array([[float(v) for v in r[2:]] for r in rows if r[0] == "test"])
        if not np.array_equal(test[:, 0], f["data/test/y"][()][:, 0]) or \
                not np.array_equal(test[:, 1], f["ensemble/test/mean"][()][:, 0]):
            fail("regression ensemble truth or mean differ")
        # The predictive mixture of the archived components with the noise, against scipy.
        g, noise = f["ensemble/test"], f["ensemble/noise_variance"][0]
        w, m, v = g["trajectory_members"][()], g["trajectory_mean"][()][:, :, 0], g["trajectory_variance"][()][:, :, 0]
        w = w / w.sum()
        model = np.sum(w[:, None] * (v + (m - np.sum(w[:, None] * m, axis=0)) ** 2), axis=0)
        if not (np.allclose(test[:, 3] ** 2, model, rtol=1e-9, atol=1e-14)
                and np.allclose(test[:, 2] ** 2, model + noise, rtol=1e-9, atol=1e-14)):
            fail("regression ensemble sd or sd_model differ from the archived mixture's")
        for i in range(len(test)):
            cdf = lambda y: np.sum(w * stats.norm.cdf((y - m[:, i]) / np.sqrt(v[:, i] + noise)))  # noqa: E731
            for j, level in ((4, 0.025), (5, 0.975)):
                want = optimize.brentq(lambda y: cdf(y) - level, -50, 50, xtol=1e-13)
                if not np.isclose(test[i, j], want, rtol=1e-9, atol=1e-9):
                    fail(f"regression ensemble row {i}: quantile {level} {test[i, j]}, scipy {want}")
    p = analyze(["export", sine, "--what", "nonsense"], expect=2)
    if "--what" not in p.stderr:
        fail("bad --what not named")


def test_export(tmp, iris_run):
    _export_iris(iris_run)
    _export_sine(tmp)
    print("export: trace, samples, params and ensemble tables equal the archive's arrays")
