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
           parallel float32 ladder (classification) and a plain run: every group opens and keeps
           ArviZ's schema rules as written (check_schema); one posterior variable per /model tensor
           in the stored precision; each rung one temperature, its rung_temperature coordinate;
           --rung K equals the full export's rung K; lp and one draw's log-likelihood equal numpy's;
           export --what metrics against /metrics
  compare  simmer_analyze compare of a regression and a classification ladder: every rung's
           PSIS-LOO and WAIC (elpd, se, p, largest k-hat, rows above ArviZ's threshold) equal
           numpy's (tests/analysis/loo_reference.py, transcribed from ArviZ) to 1e-8
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
    c = os.path.join(tmp, "c.h5")  # a merge of ladder runs: pooled rungs, exchange log, /selection
    st.run(SIMMER, 2, kinds["parallel_ladder_exchange"] + ["--run.seed", "5", "--output", c])
    paths["merged_ladder"] = os.path.join(tmp, "merged_ladder.h5")
    st.run(ANALYZE, None, ["merge", paths["parallel_ladder_exchange"], c, "-o", paths["merged_ladder"]])
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


# ArviZ's InferenceData schema specification (arviz-devs/arviz schema.md), its rules as written,
# checked with xarray (ArviZ itself is not installable here):
SAMPLE_GROUPS = ("posterior", "sample_stats", "log_likelihood", "posterior_predictive", "predictions")  # "the first two dimensions ... (chain, draw)"
GROUP_ATTRIBUTES = ("created_at", "inference_library", "inference_library_version")  # "each group contains"
SAMPLE_STATS_BOOL = ("diverging",)  # "diverging: HMC-NUTS only, boolean variable"
HMC_ONLY = ("energy",)  # "energy: HMC-NUTS only": the thermostat's H_ext is no Hamiltonian per draw


def check_schema(name, nc):
    """Every group of `nc` against the rules above: group attributes (created_at in UTC), (chain,
    draw) first with integer coordinates in the sample groups, every dimension with coordinate
    values, no variable named like a dimension, diverging bool and no HMC-only names."""
    import xarray as xr
    with h5py.File(nc, "r") as f:
        groups = [g for g in f.keys() if isinstance(f[g], h5py.Group)]
    for g in groups:
        with xr.open_dataset(nc, group=g, engine="netcdf4") as ds:
            missing = [a for a in GROUP_ATTRIBUTES if a not in ds.attrs]
            if missing or not str(ds.attrs["created_at"]).endswith("Z"):
                fail(f"{name}: group {g} lacks {missing} or its created_at {ds.attrs.get('created_at')} is not UTC")
            clash = set(ds.data_vars) & set(ds.dims)
            if clash:
                fail(f"{name}: group {g} has variables named like dimensions: {clash}")
            if set(ds.dims) - set(ds.coords):
                fail(f"{name}: group {g} has dimensions without coordinate values: {set(ds.dims) - set(ds.coords)}")
            if g in SAMPLE_GROUPS:
                for v, da in ds.data_vars.items():
                    if da.dims[:2] != ("chain", "draw") and da.dims != ("rung",):
                        fail(f"{name}: {g}/{v} has dims {da.dims}, not (chain, draw) first")
                for c in ("chain", "draw"):
                    if ds[c].dtype != np.int64:
                        fail(f"{name}: {g}'s {c} coordinate is {ds[c].dtype}, not int64")
            if g == "sample_stats":
                if any(v in ds.data_vars for v in HMC_ONLY):
                    fail(f"{name}: sample_stats has {HMC_ONLY}, which ArviZ reads as an HMC Hamiltonian")
                if any(ds[v].dtype != bool for v in SAMPLE_STATS_BOOL):
                    fail(f"{name}: diverging decodes to {ds['diverging'].dtype}, not bool")


def flat_params(post, f):
    """The posterior's per-tensor variables put back into /model's flat order: [..., param]."""
    names, offsets, shapes, ranks = st.read_layout(f)
    parts = []
    for n, o in sorted(zip(names, offsets), key=lambda t: t[1]):
        v = post[n.replace("/", "_")].values
        lead = v.shape[:len(v.shape) - sum(1 for d in post[n.replace("/", "_")].dims if "_dim_" in d)]
        parts.append(v.reshape(lead + (-1,)))
    return np.concatenate(parts, axis=-1)


def check_inference_data(name, nc, archive, rungs, float32=False):
    """The InferenceData file `nc` exported from `archive`: the schema, one variable per tensor in
    the stored precision, sample_stats, rungs with their temperatures, lp and (the sequential
    ladder) one draw's log-likelihood and the prior's energy against numpy."""
    import xarray as xr  # (the structure itself, read with xarray as ArviZ reads it)
    check_schema(name, nc)
    draws = ("chain", "draw") + (("rung",) if rungs else ())
    with xr.open_dataset(nc, group="posterior", engine="netcdf4") as post, \
            xr.open_dataset(nc, group="sample_stats", engine="netcdf4") as stats, \
            xr.open_dataset(nc, group="log_likelihood", engine="netcdf4") as ll, \
            xr.open_dataset(nc, group="observed_data", engine="netcdf4") as obs, h5py.File(archive, "r") as f:
        names, offsets, shapes, ranks = st.read_layout(f)
        for n, sh, rk in zip(names, shapes, ranks):
            v = n.replace("/", "_")
            want = draws + tuple(f"{v}_dim_{i}" for i in range(rk))
            if v not in post or post[v].dims != want or post[v].shape[len(draws):] != tuple(sh[:rk]):
                fail(f"{name}: posterior lacks {v} {want} {tuple(sh[:rk])}: {dict(post.data_vars)}")
            if post[v].dtype != (np.float32 if float32 else np.float64):
                fail(f"{name}: posterior {v} is {post[v].dtype}, the run stored {'float32' if float32 else 'float64'}")
        stored = f["posterior/params"][()]
        if not rungs and not np.array_equal(flat_params(post, f), stored.astype(np.float64)):
            fail(f"{name}: the tensors put back together are not /posterior/params")
        if ll["y"].dims != draws + ("observation",):
            fail(f"{name}: log_likelihood dims {ll['y'].dims}, expected {draws} + observation")
        # Names as coordinates: features (constant_data), targets (a regression's y), classes (CF
        # flag_values / flag_meanings of a classification's integer y), as /data names them.
        def strings(path):
            return ["".join(c.decode() for c in row).rstrip("\0") for row in f[path][()]]
        with xr.open_dataset(nc, group="constant_data", engine="netcdf4") as const:
            if [str(v) for v in const["feature"].values] != strings("data/feature_names"):
                fail(f"{name}: constant_data's feature coordinate {const['feature'].values}, /data says "
                     f"{strings('data/feature_names')}")
        if obs["y"].dtype == np.int64:
            meanings = obs["y"].attrs.get("flag_meanings", "").split(" ")
            if meanings != [c.replace(" ", "_") for c in strings("data/class_names")] or \
                    list(obs["y"].attrs.get("flag_values", [])) != list(range(len(meanings))):
                fail(f"{name}: observed_data/y's classes {obs['y'].attrs}, /data says {strings('data/class_names')}")
        elif [str(v) for v in obs["target"].values] != strings("data/target_names"):
            fail(f"{name}: observed_data's target coordinate {obs['target'].values}, /data says "
                 f"{strings('data/target_names')}")
        want_stats = {"lp", "step_size", "diverging", "temperature", "extended_energy", "kinetic_temperature",
                      "loss", "step"}
        if set(stats.data_vars) - {"rung_temperature"} != want_stats:
            fail(f"{name}: sample_stats {sorted(stats.data_vars)}, expected {sorted(want_stats)}")
        if stats["step"].dtype != np.int64 or not np.all(stats["step_size"].values > 0):
            fail(f"{name}: step is {stats['step'].dtype}, step_size {stats['step_size'].values.ravel()[:4]}")
        t = stats["temperature"].values
        if rungs:
            rung_t = [f[f"ladder/rung_{k}"].attrs["temperature"] for k in range(rungs)]
            if not np.array_equal(post["rung_temperature"].values, rung_t) or \
                    not all(np.all(t[..., k] == rung_t[k]) for k in range(rungs)):
                fail(f"{name}: rung_temperature {post['rung_temperature'].values} or the draws' T are not the "
                     f"rungs' {rung_t}")
        if ll["y"].sizes["observation"] != obs["y"].sizes["observation"] != f["data/train/x"].shape[0]:
            fail(f"{name}: log_likelihood has another number of observations than the training rows")
        # lp = -loss/T - the prior's energy; the log-likelihood of one draw recomputed in numpy.
        loss = stats["loss"].values
        if name == "plain" and not np.allclose(stats["lp"].values, -loss / t, rtol=1e-12):
            fail(f"{name}: lp is not -loss/T without a prior")
        if name == "sequential":
            check_sequential(name, f, flat_params(post, f), stats, ll, loss, t)


def check_sequential(name, f, params, stats, ll, loss, t):
    """The sequential ladder (regression, s = 0.1, Gaussian prior): one draw's log-likelihood,
    lp with the prior's energy, rung 1 as each chain's second block of draws."""
    x = st.scaled(f, f["data/train/x"][()])
    lo, hi = f["data/scaling/y_min"][()], f["data/scaling/y_max"][()]
    pred = st.forward(params[1, 0, 1], st.read_layout(f), x) * (hi - lo) / 2 + (hi + lo) / 2
    want = np.sum(-0.5 * (np.log(2 * np.pi * 0.01) + (f["data/train/y"][()] - pred) ** 2 / 0.01), axis=1)
    if not np.allclose(ll["y"].values[1, 0, 1], want, rtol=1e-9, atol=1e-9):
        fail(f"{name}: log_likelihood differs from numpy's Gaussian with s = 0.1")
    # The prior N(0, 1/fan_in) on kernels, N(0, 1) on biases (prior_sigma 1, fan_in scaling).
    names, offsets, shapes, ranks = st.read_layout(f)
    precision = np.concatenate([np.full(int(np.prod(sh[:rk])), float(sh[0]) if rk == 2 else 1.0)
                                for sh, rk in zip(shapes, ranks)])
    prior = 0.5 * np.einsum("cdkp,p->cdk", params ** 2, precision)
    if not np.allclose(stats["lp"].values, -loss / t - prior, rtol=1e-10):
        fail(f"{name}: lp is not -loss/T minus the Gaussian prior's energy")
    chain1 = f["posterior/params"][1]
    per_stage = chain1.shape[0] // 2
    if not np.array_equal(params[1, :, 1], chain1[per_stage:]):
        fail(f"{name}: rung 1 is not each chain's second block of draws")


def check_predictive(name, nc, archive, rungs):
    """posterior_predictive and predictions: one outcome per draw and training / test row, shaped
    like observed_data; classes are valid class indices that follow the softmax (a class the draw's
    probability makes near-certain is drawn almost always); regression values scatter around the
    draws' predictions with the noise sd (s = 0.1 in the sequential job)."""
    import xarray as xr
    draws = ("chain", "draw") + (("rung",) if rungs else ())
    with xr.open_dataset(nc, group="posterior_predictive", engine="netcdf4") as pp, \
            xr.open_dataset(nc, group="predictions", engine="netcdf4") as pr, \
            xr.open_dataset(nc, group="observed_data", engine="netcdf4") as obs, \
            xr.open_dataset(nc, group="constant_data_predictions", engine="netcdf4") as cdp, \
            h5py.File(archive, "r") as f:
        tail = obs["y"].dims
        if pp["y"].dims != draws + tail or pr["y"].dims != draws + tail:
            fail(f"{name}: posterior_predictive {pp['y'].dims}, predictions {pr['y'].dims}, expected {draws} + {tail}")
        if pr["y"].sizes["observation"] != f["data/test/x"].shape[0] or \
                not np.array_equal(cdp["x"].values, f["data/test/x"][()]):
            fail(f"{name}: predictions are not over the test rows")
        y = pp["y"].values
        if obs["y"].dtype == np.int64:
            classes = f["ensemble/test/probability"].shape[1]
            if y.dtype != np.int64 or y.min() < 0 or y.max() >= classes:
                fail(f"{name}: posterior_predictive classes out of range 0..{classes - 1}")
            # Iris: most training rows are predicted with confidence, so most draws repeat the truth.
            agree = np.mean(y == obs["y"].values)
            if not agree > 0.8:
                fail(f"{name}: sampled classes agree with the truth on {agree:.2f} of draws x rows")
        elif name == "sequential":
            # The spread of the sampled values around the draws' mean is about the noise sd 0.1
            # (the networks' own spread across draws is far smaller at these short runs).
            sd = float(np.std(y - y.mean(axis=(0, 1), keepdims=True)))
            if not 0.08 < sd < 0.2:
                fail(f"{name}: posterior_predictive scatter {sd:.3f}, the noise sd is 0.1")


def check_one_rung(name, nc_all, nc_one, rung):
    """export --rung K: a plain (chain, draw) posterior equal to the full export's rung K."""
    import xarray as xr
    check_schema(name + f" --rung {rung}", nc_one)
    for g in ("posterior", "sample_stats", "log_likelihood"):
        with xr.open_dataset(nc_all, group=g, engine="netcdf4") as a, \
                xr.open_dataset(nc_one, group=g, engine="netcdf4") as b:
            for v in b.data_vars:
                if "rung" in b[v].dims or not np.array_equal(a[v].isel(rung=rung).values, b[v].values):
                    fail(f"{name}: --rung {rung}'s {g}/{v} is not the full export's rung {rung}")
            if g == "posterior" and b.attrs.get("rung") != rung:
                fail(f"{name}: --rung {rung}'s posterior does not say which rung it is: {dict(b.attrs)}")


def idata_jobs():
    """Three small runs: a sequential regression ladder, a parallel float32 classification ladder
    with exchange, and a plain run."""
    sine = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50", "--simmer.steps", "200",
            "--simmer.every", "50", "--ensemble.window", "100", "--ensemble.store_every", "25", "--run.trajectories", "2",
            "--simmer.temperature_unit", "posterior", "--data.validation_fraction", "0.2", "--simmer.noise_sd", "0.1",
            "--simmer.prior", "gaussian", "--simmer.prior_scaling", "fan_in", "--simmer.ladder", "0.5,1"]
    iris = ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"), "--data.path", os.path.join(ROOT, "data/iris.csv"),
            "--adam.epochs", "40", "--simmer.steps", "200", "--ensemble.window", "100", "--ensemble.store_every", "25",
            "--run.trajectories", "4", "--simmer.temperature_unit", "posterior", "--data.validation_fraction", "0.2",
            "--simmer.ladder", "1,2", "--simmer.ladder_mode", "parallel", "--simmer.exchange_every", "50",
            "--run.precision", "float32"]
    plain = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50", "--simmer.steps", "200",
             "--simmer.every", "50", "--ensemble.window", "100", "--ensemble.store_every", "25", "--run.trajectories", "2"]
    return sine, iris, plain


def test_idata(tmp):
    """export --what inference-data: ArviZ's schema, per-tensor variables, rungs with their
    temperatures, one rung alone; export --what metrics."""
    sine, iris, plain = idata_jobs()
    for name, args, rungs in (("sequential", sine, 2), ("parallel", iris, 2), ("plain", plain, 0)):
        archive, nc = os.path.join(tmp, name + ".h5"), os.path.join(tmp, name + ".nc")
        st.run(SIMMER, 2, args + ["--output", archive])
        st.run(ANALYZE, None, ["export", archive, "--what", "inference-data", "--log-likelihood", "--predictive",
                               "--out", nc])
        answers = open_every_group(nc)
        for group in ("posterior", "log_likelihood", "observed_data", "constant_data", "sample_stats",
                      "posterior_predictive", "predictions", "constant_data_predictions"):
            if "/" + group not in answers:
                fail(f"{name}: the InferenceData file has no group {group}")
        check_inference_data(name, nc, archive, rungs, float32=name == "parallel")
        check_predictive(name, nc, archive, rungs)
        if rungs:  # the stacking weights, for weighing the rungs' draws as the stacked candidates do
            import xarray as xr
            with xr.open_dataset(nc, group="posterior", engine="netcdf4") as post, h5py.File(archive, "r") as f:
                names = st.strings(f["selection/candidate"])
                for n, w in zip(names[:-1], f["selection/stacking_weight"][()][:-1]):
                    if post.attrs.get(f"stacking_weight_{n}") != w:
                        fail(f"{name}: the posterior's stacking_weight_{n} is {post.attrs.get(f'stacking_weight_{n}')}, "
                             f"/selection says {w}")
        again = os.path.join(tmp, name + "_again.nc")
        st.run(ANALYZE, None, ["export", archive, "--what", "inference-data", "--predictive", "--out", again])
        import xarray as xr
        with xr.open_dataset(nc, group="predictions", engine="netcdf4") as a, \
                xr.open_dataset(again, group="predictions", engine="netcdf4") as b:
            if not np.array_equal(a["y"].values, b["y"].values):
                fail(f"{name}: two exports sample different predictions")
        if rungs:
            one = os.path.join(tmp, name + "_rung1.nc")
            st.run(ANALYZE, None, ["export", archive, "--what", "inference-data", "--log-likelihood", "--rung", "1",
                                   "--out", one])
            check_one_rung(name, nc, one, 1)
    # --what metrics: one row per number, candidate/split/metric/value, the same values as /metrics.
    table = os.path.join(tmp, "metrics.csv")
    st.run(ANALYZE, None, ["export", os.path.join(tmp, "parallel.h5"), "--what", "metrics", "--out", table])
    import csv
    with open(table) as fh, h5py.File(os.path.join(tmp, "parallel.h5"), "r") as f:
        rows = list(csv.DictReader(fh))
        got = {(r["candidate"], r["split"], r["metric"]): float(r["value"]) for r in rows}
        for key, want in (
                (("ensemble", "test", "accuracy"), f["metrics"].attrs["ensemble_test_accuracy"]),
                (("deep_ensemble", "validation", "nll"), f["metrics"].attrs["deep_ensemble_validation_nll"]),
                (("baseline", "test", "nll_mean"), f["metrics"].attrs["baseline_test_nll_mean"]),
                (("rung_1", "test", "nll"), f["ladder/rung_1"].attrs["ensemble_test_nll"]),
                (("stacked", "validation", "accuracy"), f["stacked"].attrs["ensemble_validation_accuracy"]),
                (("stacked", "test", "nll"), f["stacked"].attrs["ensemble_test_nll"]),
                (("run", "", "trajectories_stationary"), f["metrics"].attrs["trajectories_stationary"])):
            if key not in got or got[key] != float(want):
                fail(f"export --what metrics: {key} is {got.get(key)}, /metrics says {want}")
        if len(rows) != len(got):
            fail("export --what metrics repeats a (candidate, split, metric)")
    print("idata: sequential and parallel (float32) ladders and a plain run export as InferenceData that keeps "
          "ArviZ's schema rules; one variable per tensor in the stored precision; rung_temperature; --rung; "
          f"export --what metrics: {len(rows)} rows")


def test_compare(tmp):
    """simmer_analyze compare: each rung's PSIS-LOO and WAIC equal a hand computation
    (tests/analysis/loo_reference.py, numpy transcribed from ArviZ) on the same draws'
    log-likelihood, exported by export --log-likelihood --rung K, to 1e-8; the weight column is
    az.compare's stacking weights (ArviZ's SLSQP, transcribed) to 1e-3."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import csv
    import xarray as xr
    import loo_reference as ref
    sine, iris, _ = idata_jobs()
    for name, args in (("sequential", sine), ("parallel", iris)):
        archive, table = os.path.join(tmp, name + ".h5"), os.path.join(tmp, name + "_compare.csv")
        # Every step of the window stored: 200 draws per rung, enough for the Pareto fit.
        st.run(SIMMER, 2, st.opts(args, "--ensemble.store_every", "1") + ["--output", archive])
        printed = subprocess.run([ANALYZE, "compare", archive, "--out", table], env=st.ENV, capture_output=True,
                                 text=True)
        if printed.returncode != 0 or "elpd_loo" not in printed.stdout or "rung_1" not in printed.stdout:
            fail(f"{name}: compare failed or printed no table:\n{printed.stdout}\n{printed.stderr}")
        with open(table) as fh:
            rows = {r["candidate"]: r for r in csv.DictReader(fh)}
        pointwise = []
        for k in (0, 1):
            nc = os.path.join(tmp, f"{name}_rung{k}.nc")
            st.run(ANALYZE, None, ["export", archive, "--what", "inference-data", "--log-likelihood", "--rung", str(k),
                                   "--out", nc])
            with xr.open_dataset(nc, group="log_likelihood", engine="netcdf4") as ds:
                ll = ds["y"].values.reshape(-1, ds["y"].shape[-1])
            loo_e, loo_se, p_loo, loo_i, khat = ref.loo(ll)
            pointwise.append(loo_i)
            waic_e, waic_se, p_waic, _ = ref.waic(ll)
            got = rows[f"rung_{k}"]
            for column, want in (("elpd_loo", loo_e), ("se_loo", loo_se), ("p_loo", p_loo), ("elpd_waic", waic_e),
                                 ("se_waic", waic_se), ("p_waic", p_waic), ("max_k", np.max(khat))):
                if not np.isclose(float(got[column]), want, rtol=1e-8, atol=1e-8):
                    fail(f"{name} rung_{k}: compare's {column} {got[column]}, numpy's {want!r}")
            good_k = min(1 - 1 / np.log10(ll.shape[0]), 0.7)
            if int(got["k_above"]) != int(np.sum(khat > good_k)):
                fail(f"{name} rung_{k}: {got['k_above']} rows above k-hat {good_k:.2f}, numpy counts "
                     f"{int(np.sum(khat > good_k))}")
        # The weight column: az.compare's stacking weights. SLSQP stops near the maximum, simmer's EM
        # at a gap of 1e-10, so: the same weights to 1e-3, and simmer's score no worse than ArviZ's.
        want = ref.stacking_weights(pointwise)
        got = np.array([float(rows[f"rung_{k}"]["weight"]) for k in (0, 1)])
        score = [np.sum(ref.logsumexp(np.log(np.maximum(w, 1e-300))[:, None] + np.array(pointwise), axis=0))
                 for w in (got, want)]
        if not np.allclose(got, want, atol=1e-3) or score[0] < score[1] - 1e-8:
            fail(f"{name}: compare's stacking weights {got} (score {score[0]!r}), ArviZ's {want} (score {score[1]!r})")
        print(f"compare ({name}): " + ", ".join(f"{c} elpd_loo {float(r['elpd_loo']):.3f} ± {float(r['se_loo']):.3f}"
                                              f", weight {float(r['weight']):.3f}" for c, r in rows.items()))


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

