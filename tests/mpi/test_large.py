#!/usr/bin/python3
"""The large-model cases of simmer_mpi, reduced to seconds (pytest functions, one CTest test each:
tests/conftest.py says how to run them by hand).

tests: lenet     LeNet-5 on small IDX files the test writes (gzip images, plain labels), 2 ranks:
                 the archive's posterior is float32 and thinned, every member voted, the layout
                 is LeNet-5's (61706 parameters), the run printed its estimate
       higgs     a HIGGS-shaped run (28 features, ELU, BCE from logits) on a HIGGS-format CSV
                 the test writes, 2 ranks; and the synthetic generator's run
       budget    the estimate printed before the run; a run refused (exit 2, no archive) when
                 the file system lacks the room; float32 halves /posterior/params
       badidx    a truncated IDX file and a missing one stop the run with a message naming it
"""
import os
import re
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402  (tests/simmer_test.py: ENV, fail, archive comparison, ...)

SIMMER, ROOT = st.SIMMER_MPI, st.ROOT
ENV = st.ENV
fail, write_idx = st.fail, st.write_idx


def run(ranks, args, expect_ok=True, env=None):
    return st.run(SIMMER, ranks, args, expect=0 if expect_ok else None, timeout=900, env=env)




LENET_ARGS = ["--config", os.path.join(ROOT, "jobs/mnist_retrofit.ini"),
              "--data.train", "200", "--data.test", "50", "--adam.epochs", "20",
              "--simmer.steps", "60", "--simmer.every", "20", "--ensemble.window", "40",
              "--ensemble.store_every", "4", "--run.gather_interval", "25",
              "--run.checkpoint_interval", "30", "--run.trace_every", "5",
              "--simmer.stability_check", "warn"]


def test_lenet(tmp):
    d = os.path.join(tmp, "idx")
    os.mkdir(d)
    rng = np.random.default_rng(5)
    write_idx(d, "train", 300, rng)
    write_idx(d, "t10k", 80, rng, gz_images=False)
    out = os.path.join(tmp, "lenet.h5")
    p = run(2, LENET_ARGS + ["--data.path", d, "--output", out])
    if "estimate: archive" not in p.stdout:
        fail("no resource estimate before the run:\n" + p.stdout)
    with h5py.File(out, "r") as f:
        params = f["posterior/params"]
        if params.dtype != np.float32:
            fail(f"/posterior/params is {params.dtype}, expected float32")
        # 40 members per trajectory, every 4th stored: 10 draws; LeNet-5 on 28x28x1, 10 classes.
        if params.shape != (2, 10, 61706):
            fail(f"/posterior/params shape {params.shape}, expected (2, 10, 61706)")
        if not np.all(np.isfinite(params[()])):
            fail("non-finite stored parameters")
        votes = f["ensemble/test/votes"][()]
        if votes.shape != (50, 10) or not np.all(votes.sum(axis=1) == 2 * 40):
            fail(f"test votes {votes.shape}, row sums {np.unique(votes.sum(axis=1))}: every one of "
                 "the 2 x 40 members must vote on every test image")
        m = f["metrics"].attrs
        print(f"  lenet: posterior {params.shape} {params.dtype}, votes ok; test accuracy Adam "
              f"{m.get('baseline_test_accuracy_mean')}, ensemble {m.get('ensemble_test_accuracy')}")
        # The images are separable (a bright square whose place is the class): something must be
        # learnt (chance is 0.1; 1.0 measured).
        if not (m["baseline_test_accuracy_mean"] >= 0.8 and m["ensemble_test_accuracy"] >= 0.8):
            fail(f"lenet: test accuracy Adam {m['baseline_test_accuracy_mean']}, ensemble "
                 f"{m['ensemble_test_accuracy']}: below 0.8 on separable images")


def write_higgs_csv(path, n, rng):
    x = rng.normal(size=(n, 28))
    logit = 1.5 * x[:, 0] - x[:, 3] + 0.5 * x[:, 25] * x[:, 26]
    y = (logit + 0.5 * rng.normal(size=n) > 0).astype(float)
    with open(path, "w") as f:
        for yi, xi in zip(y, x):
            f.write(",".join(f"{v:.18e}" for v in [yi, *xi]) + "\n")


HIGGS_ARGS = ["--config", os.path.join(ROOT, "jobs/higgs_retrofit.ini"),
              "--model.architecture", "28-64-64-64-64-1",
              "--data.train", "300", "--data.test", "100", "--adam.epochs", "30",
              "--simmer.steps", "80", "--simmer.every", "20", "--ensemble.window", "40",
              "--ensemble.store_every", "5", "--run.gather_interval", "30",
              "--run.trace_every", "5", "--simmer.stability_check", "warn"]


def test_higgs(tmp):
    csv = os.path.join(tmp, "HIGGS.csv")
    write_higgs_csv(csv, 500, np.random.default_rng(3))
    for name, extra in (("csv", ["--data.source", "higgs", "--data.path", csv, "--data.rows", "450"]),
                        ("synthetic", ["--data.rows", "0"])):
        out = os.path.join(tmp, f"higgs_{name}.h5")
        run(2, HIGGS_ARGS + extra + ["--output", out])
        with h5py.File(out, "r") as f:
            p = f["posterior/params"]
            n_params = 29 * 64 + 3 * 65 * 64 + 65
            if p.shape != (2, 8, n_params) or p.dtype != np.float32:
                fail(f"{name}: /posterior/params {p.shape} {p.dtype}, expected (2, 8, {n_params}) float32")
            votes = f["ensemble/test/votes"][()]
            if votes.shape != (100, 2) or not np.all(votes.sum(axis=1) == 80):
                fail(f"{name}: test votes {votes.shape} do not count 2 x 40 members per row")
            x = f["data/train/x"][()]
            if x.shape != (300, 28):
                fail(f"{name}: /data/train/x {x.shape}, expected (300, 28)")
            loss = f["trace/train_loss"][()]
            if not np.all(np.isfinite(loss[~np.isnan(loss)])) or np.isnan(loss).all():
                fail(f"{name}: train loss trace is empty or not finite")
            print(f"  higgs {name}: posterior {p.shape} {p.dtype}, votes ok, "
                  f"{f['metrics'].attrs.get('ensemble_test_accuracy')} ensemble test accuracy")
            # The CSV's labels follow a noisy logistic rule of three features: it must be learnt
            # (0.76 measured; about half the rows are each class). The synthetic set's 300 rows
            # are too few for this network to beat its 53 % majority reliably: not checked here.
            if name == "csv" and not f["metrics"].attrs["ensemble_test_accuracy"] >= 0.65:
                fail(f"higgs csv: ensemble test accuracy {f['metrics'].attrs['ensemble_test_accuracy']} < 0.65")


def test_budget(tmp):
    base = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50",
            "--simmer.steps", "400", "--simmer.every", "100", "--ensemble.window", "300",
            "--run.trajectories", "2"]
    sizes = {}
    for dtype in ("float64", "float32"):
        out = os.path.join(tmp, f"sine_{dtype}.h5")
        p = run(2, base + ["--ensemble.store_dtype", dtype, "--output", out])
        m = re.search(r"estimate: archive ([0-9.]+ [kMG]?B) \(/posterior/params ([0-9.]+ [kMG]?B)", p.stdout)
        if not m:
            fail("no estimate line:\n" + p.stdout)
        estimate = float(m.group(2).split()[0]) * {"kB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2).split()[1]]
        with h5py.File(out, "r") as f:
            sizes[dtype] = f["posterior/params"].id.get_storage_size()
            if abs(sizes[dtype] - estimate) > 0.05 * estimate:
                fail(f"{dtype}: /posterior/params takes {sizes[dtype]} B on disk, estimated {estimate:.0f} B")
            total = os.path.getsize(out)
            archive = float(m.group(1).split()[0]) * {"kB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(1).split()[1]]
            if not 0.5 * archive <= total <= 1.5 * archive:
                fail(f"{dtype}: the archive has {total} B, estimated {archive:.0f} B")
            if f["posterior/params"].shape != (2, 300, 481):
                fail(f"{dtype}: /posterior/params {f['posterior/params'].shape}")
        print(f"  {dtype}: estimate '{m.group(0)}', /posterior/params {sizes[dtype]} bytes on disk")
    if not sizes["float32"] * 2 == sizes["float64"]:
        fail(f"float32 storage {sizes['float32']} B is not half of float64's {sizes['float64']} B")
    # The estimate of /posterior/params is exact: 2 x 300 x 481 x 8 bytes = 2.31 MB.
    out = os.path.join(tmp, "refused.h5")
    p = run(2, base + ["--output", out], expect_ok=False, env={"SIMMER_TEST_FREE_BYTES": "100000"})
    if p.returncode != 2:
        fail(f"a run without room exited {p.returncode}, expected 2\n{p.stdout}\n{p.stderr}")
    if "run.output" not in p.stderr or "free" not in p.stderr or "store_every" not in p.stderr:
        fail("the refusal does not name run.output, the free space and what to change:\n" + p.stderr)
    if os.path.exists(out):
        fail("a refused run left an archive")
    print("  refused without room:", [l for l in p.stderr.splitlines() if "run.output" in l][0][:160])


def test_badidx(tmp):
    d = os.path.join(tmp, "idx")
    os.mkdir(d)
    rng = np.random.default_rng(1)
    write_idx(d, "train", 300, rng, gz_images=False)
    write_idx(d, "t10k", 80, rng)
    path = os.path.join(d, "train-images-idx3-ubyte")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])
    p = run(2, LENET_ARGS + ["--data.path", d, "--output", os.path.join(tmp, "bad.h5")], expect_ok=False)
    if p.returncode != 2 or path not in p.stderr:
        fail(f"a truncated IDX file: exit {p.returncode}, message does not name {path}:\n{p.stderr}")
    print("  truncated:", p.stderr.strip().splitlines()[0][:200])
    os.remove(os.path.join(d, "t10k-labels-idx1-ubyte"))
    write_idx(d, "train", 300, rng, gz_images=False)
    p = run(2, LENET_ARGS + ["--data.path", d, "--output", os.path.join(tmp, "bad.h5")], expect_ok=False)
    if p.returncode != 2 or "t10k-labels-idx1-ubyte" not in p.stderr or "data.path" not in p.stderr:
        fail(f"a missing IDX file: exit {p.returncode}, message does not name it:\n{p.stderr}")
    print("  missing:", p.stderr.strip().splitlines()[0][:200])
