#!/usr/bin/python3
"""The archive opens in every netCDF tool (archive format 2), and readers still read format 1
(pytest functions, one CTest test each: tests/conftest.py says how to run them by hand).

tests:
  groups   archives of every kind (ab initio and retrofit, a sequential ladder, a parallel ladder
           with replica exchange, Adam alone, a merge; classification and regression; float64 and
           float32): every group opens with xarray's netcdf4 engine in a worker process of its own
           (a crash in netCDF-C fails the test, names the group, and a new worker goes on), with no
           phony_dim and no unnamed axis anywhere; /diagnostics/verdict decodes to str verdicts,
           /config to the INI text, /data's names to the run's columns
  idata    export --what inference-data --log-likelihood of a sequential ladder (regression), a
           parallel ladder (classification) and a plain run: every group opens; posterior params and
           log_likelihood have dims chain, draw (, rung) and param / observation, each rung one
           temperature, diverging decodes to bool; lp and one draw's log-likelihood equal numpy's
  format1  archives of the previous format (tests/data/archives: fixed-length strings, no named
           axes, written before the predictive mixture was archived) are read by summary, verify,
           predict, export (every table), merge and the figure scripts
"""
import json
import os
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ANALYZE, ROOT = st.SIMMER_MPI, st.SIMMER_ANALYZE, st.ROOT
fail = st.fail
VERDICTS = {"stationary", "not mixed", "drifting", "diverged", "no members", "not equilibrated"}

# Opens one group a line ("path<TAB>group") and answers one JSON line: its dimensions and, for
# every text variable, its first decoded value's type and value.
WORKER = r"""
import json, sys
import xarray as xr
for line in sys.stdin:
    path, group = line.rstrip("\n").split("\t")
    with xr.open_dataset(path, group=group, engine="netcdf4") as ds:
        text = {}
        for name, var in ds.variables.items():
            if var.dtype.kind in "OSU" and var.size:
                first = var.values.reshape(-1)[0]
                text[name] = [type(first).__name__, str(first)[:200], [str(v) for v in var.values.reshape(-1)[:50]]]
        print(json.dumps({"dims": {str(k): int(v) for k, v in ds.sizes.items()}, "text": text}), flush=True)
"""


def open_every_group(path):
    """{group: answer} for every group of `path`, each opened by the worker; a group that kills
    the worker is reported (and the rest opened by a new one)."""
    groups = ["/"]
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: groups.append("/" + n) if isinstance(o, h5py.Group) else None)
    answers, crashed = {}, []
    worker = None
    for g in groups:
        if worker is None:
            worker = subprocess.Popen(["/usr/bin/python3", "-c", WORKER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        worker.stdin.write(f"{path}\t{g}\n")
        worker.stdin.flush()
        line = worker.stdout.readline()
        if not line:
            worker.wait()
            crashed.append(f"{g} (exit {worker.returncode}: {worker.stderr.read().strip()[-300:]})")
            worker = None
            continue
        answers[g] = json.loads(line)
    if worker is not None:
        worker.stdin.close()
        worker.wait()
    if crashed:
        fail(f"{os.path.basename(path)}: xarray could not open {len(crashed)} of {len(groups)} groups: {crashed[:5]}")
    return answers


def test_groups(tmp):
    iris = ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"), "--data.path", os.path.join(ROOT, "data/iris.csv"),
            "--adam.epochs", "40", "--simmer.steps", "200", "--ensemble.window", "100", "--ensemble.store_every", "25",
            "--run.trajectories", "4"]
    sine = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50", "--simmer.steps", "200",
            "--simmer.every", "50", "--ensemble.window", "100", "--ensemble.store_every", "25",
            "--run.trajectories", "2"]
    posterior = ["--simmer.temperature_unit", "posterior", "--data.validation_fraction", "0.2"]
    kinds = {
        "retrofit_regression_float32": sine + ["--run.precision", "float32", "--ensemble.track", "0,3"],
        "abinitio_classification": ["--config", os.path.join(ROOT, "jobs/iris_abinitio.ini"),
                                    "--data.path", os.path.join(ROOT, "data/iris.csv"), "--simmer.steps", "200",
                                    "--ensemble.window", "100", "--ensemble.count", "20", "--ensemble.store_every", "5",
                                    "--run.trajectories", "2", "--ensemble.points", os.path.join(ROOT, "jobs/iris_grid.csv")],
        "sequential_ladder_regression": sine + posterior + ["--simmer.ladder", "0.5,1", "--simmer.noise_sd", "0.1"],
        "parallel_ladder_exchange": iris + posterior + ["--simmer.ladder", "1,2", "--simmer.ladder_mode", "parallel",
                                                        "--simmer.exchange_every", "50", "--run.precision", "float32"],
        "adam_alone": iris + ["--simmer.mode", "adam", "--data.validation_fraction", "0.2"],
    }
    paths = {}
    for name, args in kinds.items():
        paths[name] = os.path.join(tmp, name + ".h5")
        st.run(SIMMER, 2, args + ["--output", paths[name]])
    a, b = os.path.join(tmp, "a.h5"), os.path.join(tmp, "b.h5")
    st.run(SIMMER, 2, sine + ["--run.seed", "3", "--output", a])
    st.run(SIMMER, 2, sine + ["--run.seed", "4", "--output", b])
    paths["merged"] = os.path.join(tmp, "merged.h5")
    st.run(ANALYZE, None, ["merge", a, b, "-o", paths["merged"]])
    total = 0
    for name, path in paths.items():
        answers = open_every_group(path)
        total += len(answers)
        for g, answer in answers.items():
            unnamed = [d for d in answer["dims"] if d.startswith("phony_dim") or "_dim" in d]
            if unnamed:
                fail(f"{name}: {g} has unnamed dimensions {unnamed}")
        with h5py.File(path, "r") as f:
            features = st.strings(f["data/feature_names"])
        root = answers["/"]["text"]
        if root.get("config", [""])[0] != "str" or "[simmer]" not in root["config"][1] + "".join(root["config"][2]):
            fail(f"{name}: /config does not decode to the INI text: {root.get('config')}")
        data = answers["/data"]["text"].get("feature_names")
        if data is None or data[0] != "str" or data[2] != features:
            fail(f"{name}: /data/feature_names decodes to {data}, not {features}")
        if "/diagnostics" in answers:
            verdict = answers["/diagnostics"]["text"].get("verdict")
            if verdict is None or verdict[0] != "str" or not set(verdict[2]) <= VERDICTS:
                fail(f"{name}: /diagnostics/verdict decodes to {verdict}")
    print(f"groups: {total} groups of {len(paths)} archives ({', '.join(paths)}) open with xarray's netcdf4 engine, "
          "every axis named; verdicts, /config and feature names decode to str")


def check_inference_data(name, nc, archive, rungs):
    """The InferenceData file `nc` exported from `archive`: dims, sample_stats, rungs, lp and
    (the sequential ladder) one draw's log-likelihood and the prior's energy against numpy."""
    import xarray as xr  # (the structure itself, read with xarray as ArviZ reads it)
    draws = ("chain", "draw") + (("rung",) if rungs else ())
    with xr.open_dataset(nc, group="posterior", engine="netcdf4") as post, \
            xr.open_dataset(nc, group="sample_stats", engine="netcdf4") as stats, \
            xr.open_dataset(nc, group="log_likelihood", engine="netcdf4") as ll, \
            xr.open_dataset(nc, group="observed_data", engine="netcdf4") as obs, h5py.File(archive, "r") as f:
        if post["params"].dims != draws + ("param",) or ll["y"].dims != draws + ("observation",):
            fail(f"{name}: dims {post['params'].dims} and {ll['y'].dims}, expected {draws} + param / observation")
        if stats["diverging"].dtype != bool or set(stats.data_vars) < {"lp", "temperature", "energy",
                                                                      "kinetic_temperature"}:
            fail(f"{name}: sample_stats {dict(stats.data_vars)}")
        t = stats["temperature"].values
        if rungs and not all(np.ptp(t[..., k]) == 0 for k in range(rungs)):
            fail(f"{name}: a rung mixes temperatures along chain or draw: {t}")
        if ll["y"].sizes["observation"] != obs["y"].sizes["observation"] != f["data/train/x"].shape[0]:
            fail(f"{name}: log_likelihood has another number of observations than the training rows")
        # lp = -loss/T - the prior's energy; the log-likelihood of one draw recomputed in numpy.
        loss = stats["loss"].values
        if name == "plain" and not np.allclose(stats["lp"].values, -loss / t, rtol=1e-12):
            fail(f"{name}: lp is not -loss/T without a prior")
        if name == "sequential":
            check_sequential(name, f, post, stats, ll, loss, t)


def check_sequential(name, f, post, stats, ll, loss, t):
    """The sequential ladder (regression, s = 0.1, Gaussian prior): one draw's log-likelihood,
    lp with the prior's energy, rung 1 as each chain's second block of draws."""
    x = st.scaled(f, f["data/train/x"][()])
    lo, hi = f["data/scaling/y_min"][()], f["data/scaling/y_max"][()]
    params = post["params"].values[1, 0, 1]
    pred = st.forward(params, st.read_layout(f), x) * (hi - lo) / 2 + (hi + lo) / 2
    want = np.sum(-0.5 * (np.log(2 * np.pi * 0.01) + (f["data/train/y"][()] - pred) ** 2 / 0.01), axis=1)
    if not np.allclose(ll["y"].values[1, 0, 1], want, rtol=1e-9, atol=1e-9):
        fail(f"{name}: log_likelihood differs from numpy's Gaussian with s = 0.1")
    # The prior N(0, 1/fan_in) on kernels, N(0, 1) on biases (prior_sigma 1, fan_in scaling).
    names, offsets, shapes, ranks = st.read_layout(f)
    precision = np.concatenate([np.full(int(np.prod(sh[:rk])), float(sh[0]) if rk == 2 else 1.0)
                                for sh, rk in zip(shapes, ranks)])
    prior = 0.5 * np.einsum("cdkp,p->cdk", post["params"].values ** 2, precision)
    if not np.allclose(stats["lp"].values, -loss / t - prior, rtol=1e-10):
        fail(f"{name}: lp is not -loss/T minus the Gaussian prior's energy")
    chain1 = f["posterior/params"][1]
    per_stage = chain1.shape[0] // 2
    if not np.array_equal(post["params"].values[1, :, 1], chain1[per_stage:]):
        fail(f"{name}: rung 1 is not each chain's second block of draws")


def test_idata(tmp):
    """export --what inference-data: ArviZ's groups and names, a rung dimension for ladders."""
    sine = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50", "--simmer.steps", "200",
            "--simmer.every", "50", "--ensemble.window", "100", "--ensemble.store_every", "25", "--run.trajectories", "2",
            "--simmer.temperature_unit", "posterior", "--data.validation_fraction", "0.2", "--simmer.noise_sd", "0.1",
            "--simmer.prior", "gaussian", "--simmer.prior_scaling", "fan_in", "--simmer.ladder", "0.5,1"]
    iris = ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"), "--data.path", os.path.join(ROOT, "data/iris.csv"),
            "--adam.epochs", "40", "--simmer.steps", "200", "--ensemble.window", "100", "--ensemble.store_every", "25",
            "--run.trajectories", "4", "--simmer.temperature_unit", "posterior", "--data.validation_fraction", "0.2",
            "--simmer.ladder", "1,2", "--simmer.ladder_mode", "parallel", "--simmer.exchange_every", "50"]
    plain = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50", "--simmer.steps", "200",
             "--simmer.every", "50", "--ensemble.window", "100", "--ensemble.store_every", "25", "--run.trajectories", "2"]
    for name, args, rungs in (("sequential", sine, 2), ("parallel", iris, 2), ("plain", plain, 0)):
        archive, nc = os.path.join(tmp, name + ".h5"), os.path.join(tmp, name + ".nc")
        st.run(SIMMER, 2, args + ["--output", archive])
        st.run(ANALYZE, None, ["export", archive, "--what", "inference-data", "--log-likelihood", "--out", nc])
        answers = open_every_group(nc)
        for group, names in (("posterior", ["params"]), ("log_likelihood", ["y"]), ("observed_data", ["y"]),
                             ("constant_data", ["x"]),
                             ("sample_stats", ["lp", "diverging", "temperature", "energy", "kinetic_temperature"])):
            if "/" + group not in answers:
                fail(f"{name}: the InferenceData file has no group {group}")
        check_inference_data(name, nc, archive, rungs)
    print("idata: sequential and parallel ladders and a plain run export as InferenceData: posterior and "
          "log_likelihood with dims chain, draw(, rung) and param / observation, no rung mixing temperatures, "
          "diverging bool, lp and the log-likelihood equal numpy's")


def test_format1(tmp):
    archives = os.path.join(ROOT, "tests", "data", "archives")
    sine, sine2, iris = (os.path.join(archives, n) for n in
                         ("format1_sine.h5", "format1_sine_seed2.h5", "format1_iris_ladder.h5"))
    for path in (sine, sine2, iris):
        with h5py.File(path, "r") as f:
            if "format_version" in f.attrs or f["data/feature_names"].ndim != 1:
                fail(f"{path} is not an archive of format 1")
        text = st.run(ANALYZE, None, ["summary", path]).stdout
        if "status 'complete'" not in text or "members' 50/90/95% coverage" not in text and "iris" not in path:
            fail(f"summary of {path}:\n{text}")
        if "all checksums good" not in st.run(ANALYZE, None, ["verify", path]).stdout:
            fail(f"verify of {path}")
        for what in ("trace", "samples", "ensemble"):
            if len(st.run(ANALYZE, None, ["export", path, "--what", what]).stdout.splitlines()) < 3:
                fail(f"export --what {what} of {path} is empty")
    points = os.path.join(tmp, "x.csv")
    with open(points, "w") as fh:
        fh.write("x\n0.1\n0.7\n")
    p = st.run(ANALYZE, 2, ["predict", "--digits", "17", sine, "--points", points])
    if "estimated here" not in p.stderr or len(p.stdout.splitlines()) != 3:
        fail(f"predict on a format-1 regression archive (no recorded noise):\n{p.stdout}\n{p.stderr}")
    with open(points, "w") as fh:
        fh.write("sepal_width,petal_width\n3.0,0.2\n")
    if "probability_Iris-setosa" not in st.run(ANALYZE, None, ["predict", "--digits", "17", iris, "--points", points]).stdout:
        fail("predict on a format-1 classification archive")
    merged = os.path.join(tmp, "merged.h5")
    st.run(ANALYZE, None, ["merge", sine, sine2, "-o", merged])
    answers = open_every_group(merged)  # a merge writes format 2, whatever its inputs
    if any(d.startswith("phony_dim") for a in answers.values() for d in a["dims"]):
        fail("a merge of format-1 archives has unnamed axes")
    env = dict(st.ENV, MPLCONFIGDIR=os.path.join(tmp, "mpl"))
    for script, args in (("loss_curves.py", [sine]), ("regression_fit.py", [sine, "--points-set", "test",
                                                                             "--no-distributions"]),
                         ("drift.py", [sine, iris]), ("bars.py", [sine, iris])):
        p = subprocess.run([os.path.join(ROOT, "analysis", script)] + args + ["-o", os.path.join(tmp, script)],
                           env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            fail(f"analysis/{script} on format-1 archives: {p.stderr.strip()}")
    print("format1: summary, verify, predict, export, merge and the figures read the previous format")

