#!/usr/bin/python3
"""The archive opens in every netCDF tool (archive format 2), and readers still read format 1.

usage: test_netcdf.py SIMMER_MPI SIMMER_ANALYZE PROJECT_ROOT CASE

CASE:
  groups   archives of every kind (ab initio and retrofit, a sequential ladder, a parallel ladder
           with replica exchange, Adam alone, a merge; classification and regression; float64 and
           float32): every group opens with xarray's netcdf4 engine in a worker process of its own
           (a crash in netCDF-C fails the test, names the group, and a new worker goes on), with no
           phony_dim and no unnamed axis anywhere; /diagnostics/verdict decodes to str verdicts,
           /config to the INI text, /data's names to the run's columns
  format1  archives of the previous format (tests/data/archives: fixed-length strings, no named
           axes, written before the predictive mixture was archived) are read by summary, verify,
           predict, export (every table), merge and the figure scripts
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402

SIMMER, ANALYZE, ROOT, CASE = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
fail = st.fail
VERDICTS = {"stationary", "not mixed", "drifting", "diverged", "no members"}

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


def groups_case(tmp):
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


def format1_case(tmp):
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
    p = st.run(ANALYZE, 2, ["predict", sine, "--points", points])
    if "estimated here" not in p.stderr or len(p.stdout.splitlines()) != 3:
        fail(f"predict on a format-1 regression archive (no recorded noise):\n{p.stdout}\n{p.stderr}")
    with open(points, "w") as fh:
        fh.write("sepal_width,petal_width\n3.0,0.2\n")
    if "probability_Iris-setosa" not in st.run(ANALYZE, None, ["predict", iris, "--points", points]).stdout:
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


with tempfile.TemporaryDirectory() as tmp:
    {"groups": groups_case, "format1": format1_case}[CASE](tmp)
