#!/usr/bin/python3
"""End-to-end checks of simmer_mpi and its archive (pytest functions, one CTest test each:
tests/conftest.py says how to run them by hand; Debian's /usr/bin/python3 has h5py, numpy and
xarray). collective also needs SIMMER_MPIIO_SHIM, the path of the PMPI shim's library
(simmer_mpiio_log, tests/mpi/mpiio_log.c), which its CTest registration sets.

tests: identical   -n 1, 2 and 4 give bit-identical archives and ensembles (4 trajectories)
       votes       rank 0's votes equal a recomputation from the stored networks; sine means too
       collective  every raw transfer of the archive was collective: as the program counts them
                   (HDF5's actual I/O mode, in io_transfers / io_collective_transfers) and as a
                   PMPI shim (tests/mpi/mpiio_log.c, LD_PRELOAD) sees them: no independent
                   MPI-IO write touches a byte of any dataset's raw data in the file
       xarray      posterior and sample_stats open in xarray with named dims; h5py reads all
       badconfig   each invalid value stops all ranks with one message; no archive is left
       sharded     run.ranks_per_trajectory (sharded gradients, run.gradient_chunks 4): -n 1 k 1,
                   -n 2 k 2, -n 4 k 2 and -n 4 k 4 give bit-identical archives; a -n 2 k 2 run
                   stopped by SIGUSR1 and resumed at -n 1 k 1 too
       float32     run.precision = float32: -n 1, 2, 4 bit-identical, stopped and resumed bit-identical,
                   precision recorded, /posterior/params float32 unless ensemble.store_dtype says
                   float64; a short Iris ab initio run's ensemble test accuracy and mean member
                   train loss agree with the float64 run's (within one test point and 2 %)
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402  (tests/simmer_test.py: ENV, fail, archive comparison, ...)

SIMMER, ROOT = st.SIMMER_MPI, st.ROOT
ENV = st.ENV
# Small Iris retrofit run: every member stored, a stride so the ensemble is deterministic.
IRIS_SMALL = st.iris_small(4)


fail, forward, read_layout, scaled = st.fail, st.forward, st.read_layout, st.scaled
compare = st.compare_archives


def run(ranks, args, expect_ok=True):
    return st.run(SIMMER, ranks, args, expect=0 if expect_ok else None)


def stopped_and_resumed(base, out, stop_extra, resume_extra, what):
    """`base` at 1500 steps, stopped by SIGUSR1 at step 300 (between checkpoints) and resumed
    (simmer_test.stopped_and_resumed)."""
    args = st.opts(base, "--simmer.steps", "1500")
    st.stopped_and_resumed(SIMMER, args, out, stop_extra, resume_extra, what)


# IRIS_SMALL's archive on 2 ranks (read only), shared by votes and xarray.
iris_small = st.shared_archive(lambda path: run(2, IRIS_SMALL + ["--output", path]), "iris.h5")


def test_identical(tmp):
    paths = []
    for n in (1, 2, 4):
        out = os.path.join(tmp, f"iris_n{n}.h5")
        run(n, IRIS_SMALL + ["--output", out])
        paths.append(out)
    compare(paths[0], paths[1])
    compare(paths[0], paths[2])
    with h5py.File(paths[2], "r") as f:
        if f.attrs["mpi_ranks"] != 4:
            fail("mpi_ranks attribute is not 4")
    print("identical: archives of -n 1, 2, 4 agree bit for bit (provenance aside)")


def test_votes(tmp, iris_small):
    out = iris_small
    with h5py.File(out, "r") as f:
        layout = read_layout(f)
        params = f["posterior/params"][()]
        for split in ("train", "test"):
            x = scaled(f, f[f"data/{split}/x"][()])
            votes = np.zeros_like(f[f"ensemble/{split}/votes"][()])
            for c in range(params.shape[0]):
                for d in range(params.shape[1]):
                    winner = np.argmax(forward(params[c, d], layout, x, "tanh"), axis=1)
                    votes[np.arange(len(x)), winner] += 1
            if not np.array_equal(votes, f[f"ensemble/{split}/votes"][()]):
                fail(f"{split}: votes recomputed from /posterior/params differ from rank 0's")
            maj = np.argmax(votes, axis=1)
            if not np.array_equal(maj, f[f"ensemble/{split}/prediction"][()]):
                fail(f"{split}: majority differs")
    out = os.path.join(tmp, "sine.h5")
    run(2, ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--adam.epochs", "50",
            "--simmer.steps", "300", "--simmer.every", "50", "--ensemble.window", "100",
            "--ensemble.store_every", "1", "--run.trajectories", "3", "--run.gather_interval", "70",
            "--output", out])
    with h5py.File(out, "r") as f:
        layout = read_layout(f)
        params = f["posterior/params"][()]
        x = scaled(f, f["data/test/x"][()])
        lo, hi = f["data/scaling/y_min"][()], f["data/scaling/y_max"][()]
        preds = np.array([forward(params[c, d], layout, x, "tanh") * (hi - lo) / 2 + (hi + lo) / 2
                          for c in range(params.shape[0]) for d in range(params.shape[1])])
        mean, var = preds.mean(axis=0), preds.var(axis=0, ddof=1)
        if not np.allclose(mean, f["ensemble/test/mean"][()], rtol=1e-9, atol=1e-12):
            fail("sine: ensemble mean differs from the stored networks' mean")
        if not np.allclose(var, f["ensemble/test/variance"][()], rtol=1e-6, atol=1e-14):
            fail("sine: ensemble variance differs from the stored networks' variance")
    print("votes: rank 0's votes and means equal a recomputation from the stored networks")


def raw_extents(path):
    """Where the raw data of the archive `path` lies: (begin, end, name) of every allocated chunk
    and every contiguous dataset's storage."""
    raw = []

    def extents(name, obj):
        if not isinstance(obj, h5py.Dataset) or obj.id.get_storage_size() == 0:
            return
        if obj.chunks is None:
            offset = obj.id.get_offset()
            if offset is not None:  # (compact datasets live in the object header)
                raw.append((offset, offset + obj.id.get_storage_size(), name))
            return
        for i in range(obj.id.get_num_chunks()):
            info = obj.id.get_chunk_info(i)
            raw.append((info.byte_offset, info.byte_offset + info.size, name))
    with h5py.File(path, "r") as f:
        f.visititems(extents)
    return raw


def shim_writes(log, ranks, shim):
    """The shim's log: every write of every rank, as (begin, end, collective, rank)."""
    writes = []
    for rank in range(ranks):
        try:
            lines = open(f"{log}.{rank}").read().splitlines()
        except FileNotFoundError:
            fail(f"rank {rank} left no MPI-IO log: the shim {shim} was not loaded")
        if not lines[0].startswith("# begin end collective") or " 0 writes not logged" not in lines[0]:
            fail(f"rank {rank}'s MPI-IO log is incomplete: {lines[0]}")
        writes += [(int(b), int(e), c == "1", rank) for b, e, c in (ln.split() for ln in lines[1:])]
    return writes


def test_collective(tmp, sanitized):
    out = os.path.join(tmp, "iris.h5")
    log = os.path.join(tmp, "mpiio")
    shim = os.environ.get("SIMMER_MPIIO_SHIM")
    if not shim:
        fail("SIMMER_MPIIO_SHIM is not set: the path of the simmer_mpiio_log library (tests/CMakeLists.txt)")
    env = {"LD_PRELOAD": shim, "SIMMER_MPIIO_LOG": log}
    if sanitized:  # the shim is preloaded ahead of ASan's runtime
        env["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    st.run(SIMMER, 4, IRIS_SMALL + ["--output", out], env=env)
    with h5py.File(out, "r") as f:
        total, coll = int(f.attrs["io_transfers"]), int(f.attrs["io_collective_transfers"])
    raw = raw_extents(out)
    if total == 0 or coll != total:
        fail(f"only {coll} of {total} raw transfers were collective (the program's count)")
    writes = shim_writes(log, 4, env["LD_PRELOAD"])
    starts, ends = np.array([r[0] for r in raw]), np.array([r[1] for r in raw])

    def touches(begin, end):
        """The raw extents that the bytes [begin, end) overlap."""
        return [raw[i] for i in np.flatnonzero((starts < end) & (ends > begin))]

    independent = [(w, touches(w[0], w[1])) for w in writes if not w[2]]
    bad = [(w, t) for w, t in independent if t]
    if bad:
        (b, e, _, rank), t = bad[0]
        fail(f"{len(bad)} independent MPI-IO writes touch raw data, e.g. rank {rank}'s bytes [{b}, {e}) "
             f"overlap /{t[0][2]}'s [{t[0][0]}, {t[0][1]})")
    collective_raw = sum(1 for w in writes if w[2] and touches(w[0], w[1]))
    if collective_raw == 0:
        fail(f"the shim saw no collective write of raw data ({len(writes)} writes logged, {len(raw)} raw "
             "extents): it cannot have seen the archive's transfers")
    print(f"collective: {coll} of {total} transfers collective by the program's count; the MPI-IO log of "
          f"4 ranks: {len(writes)} writes, {collective_raw} collective ones carrying raw data, "
          f"{len(independent)} independent ones, none touching any of the {len(raw)} raw-data extents")


def test_xarray(iris_small):
    import xarray as xr
    out = iris_small
    post = xr.open_dataset(out, group="posterior", engine="netcdf4")
    if post["params"].dims != ("chain", "draw", "param"):
        fail(f"posterior dims are {post['params'].dims}")
    if post["params"].shape != (4, 100, 8053):
        fail(f"posterior shape is {post['params'].shape}")
    stats = xr.open_dataset(out, group="sample_stats", engine="netcdf4")
    for v in ("step", "temperature", "loss", "kinetic_temperature", "extended_energy"):
        if stats[v].dims != ("chain", "draw"):
            fail(f"sample_stats/{v} dims are {stats[v].dims}")
    if not np.isfinite(stats["loss"].values).all():
        fail("non-finite sample losses")
    with h5py.File(out, "r") as f:
        cfg = st.strings(f["config"])[0]
        if "[simmer]" not in cfg:
            fail("/config has no [simmer] section")
        for g in ("data/train/x", "model/tensor_offset", "baseline/params", "initial/velocity",
                  "trace/test_loss", "ensemble/test/votes"):
            if g not in f:
                fail(f"/{g} missing")
    print("xarray: posterior and sample_stats open with named dimensions")


# badconfig: (extra arguments, what the one error message must name).
BAD_CONFIGS = [
    (["--simmer.time_step", "-1"], "simmer.time_step"),
    (["--simmer.steps", "0"], "simmer.steps"),
    (["--ensemble.window", "5000"], "ensemble.window"),
    (["--simmer.T_target", "0.01", "--simmer.T_initial", "0.02"], "simmer.T_target"),
    (["--model.activation", "swish"], "swish"),
    (["--model.loss", "hinge"], "hinge"),
    (["--model.init", "he"], "he"),
    (["--simmer.mode", "hot"], "hot"),
    (["--model.architecture", "2-20-1"], "model.architecture"),
    (["--data.source", "csv", "--data.path", "/nonexistent/x.csv", "--data.features", "a",
      "--data.target", "b"], "/nonexistent/x.csv"),
    (["--run.output", "/nonexistent-dir/sub/out.h5"], "run.output"),  # (one missing level is made)
    (["--simmer.nosuchkey", "1"], "simmer.nosuchkey"),
    # A temperature ladder chooses on validation data; its rungs are temperatures > 0, ascending.
    (["--simmer.ladder", "0.01,0.1"], "data.validation_fraction"),
    (["--simmer.ladder", "0,0.1", "--data.validation_fraction", "0.2"], "simmer.ladder"),
    (["--simmer.ladder", "0.1,0.01", "--data.validation_fraction", "0.2"], "ascending"),
    (["--data.validation_fraction", "0.99"], "data.validation_fraction"),
]


def test_badconfig(tmp):
    base = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"), "--simmer.steps", "100",
            "--ensemble.window", "50", "--adam.epochs", "10"]
    cases = BAD_CONFIGS
    for extra, needle in cases:
        out = os.path.join(tmp, "bad.h5")
        args = base + ["--output", out] + extra
        if "--run.output" in extra:
            args = base + extra
        p = run(2, args, expect_ok=False)
        text = p.stdout + p.stderr
        if p.returncode == 0:
            fail(f"{extra}: exited 0")
        if needle not in text:
            fail(f"{extra}: message does not name '{needle}':\n{text}")
        if text.count("simmer_mpi: error:") != 1:
            fail(f"{extra}: the error was printed {text.count('simmer_mpi: error:')} times:\n{text}")
        if os.path.exists(out):
            fail(f"{extra}: an archive was left behind")
    # An existing output is never overwritten without --overwrite.
    out = os.path.join(tmp, "exists.h5")
    with open(out, "w") as fh:
        fh.write("keep me")
    p = run(2, base + ["--output", out], expect_ok=False)
    if p.returncode == 0 or "--overwrite" not in p.stdout + p.stderr:
        fail("existing output: no refusal mentioning --overwrite")
    if open(out).read() != "keep me":
        fail("existing output was modified")
    print(f"badconfig: {len(cases) + 1} invalid invocations refused with one message each")


def test_sharded(tmp, sanitized):
    sharded = IRIS_SMALL + ["--run.gradient_chunks", "4"]
    ref = os.path.join(tmp, "k1.h5")
    run(1, sharded + ["--output", ref])
    # Instrumented, four oversubscribed ranks exchanging gradients every step take minutes:
    # the sanitizer pass checks -n 2 k 2 alone (the tree sums are checked for k up to 8 by
    # the unit tests there too).
    for n, k in ((2, 2),) if sanitized else ((2, 2), (4, 2), (4, 4)):
        out = os.path.join(tmp, f"n{n}k{k}.h5")
        run(n, sharded + ["--run.ranks_per_trajectory", str(k), "--output", out])
        compare(ref, out)
    if sanitized:
        print("sharded: -n 2 k = 2 gives the -n 1 k = 1 archive (sanitized build: the rest is left out)")
        return
    # Stopped with k = 2, resumed with k = 1 on one rank.
    stopped_and_resumed(sharded, os.path.join(tmp, "resumed.h5"), ["--run.ranks_per_trajectory", "2"],
                        ["--run.ranks_per_trajectory", "1"], "the k = 2 run")
    print("sharded: k = 1, 2, 4 at -n 1, 2, 4 give identical archives; a k = 2 run resumed with k = 1 too")


def test_float32(tmp):
    f32 = IRIS_SMALL + ["--run.precision", "float32"]
    paths = st.archives_at(run, f32, tmp, "f32")
    for other in paths[1:]:
        compare(paths[0], other)
    with h5py.File(paths[0], "r") as f:
        precision = f.attrs["precision"]
        if (precision.decode() if isinstance(precision, bytes) else precision) != "float32":
            fail(f"precision attribute is {precision!r}")
        if f["posterior/params"].dtype != np.float32:
            fail(f"/posterior/params is {f['posterior/params'].dtype} in a float32 run")
    wide = os.path.join(tmp, "f32_wide.h5")
    run(2, f32 + ["--ensemble.store_dtype", "float64", "--output", wide])
    with h5py.File(wide, "r") as f, h5py.File(paths[0], "r") as g:
        if f["posterior/params"].dtype != np.float64:
            fail("ensemble.store_dtype = float64 did not store float64")
        if not np.array_equal(f["posterior/params"][()].astype(np.float32), g["posterior/params"][()]):
            fail("the float64 copy of a float32 run's members differs from the float32 one")
    # Stopped by SIGUSR1 between checkpoints on 2 ranks, resumed on 1: the same bits.
    stopped_and_resumed(f32, os.path.join(tmp, "f32_resumed.h5"), [], [], "the float32 run")
    if st.SANITIZED:  # the rest is a measurement; the float32 code above ran instrumented
        print("float32: identical across rank counts and a resume; precision recorded (sanitized build: "
              "the comparison with float64, a measurement, runs uninstrumented)")
        return
    # float32 against float64 on a short Iris ab initio run (8 trajectories, 3000 steps).
    short = ["--config", os.path.join(ROOT, "jobs/iris_abinitio.ini"),
             "--data.path", os.path.join(ROOT, "data/iris.csv"), "--simmer.steps", "3000",
             "--ensemble.window", "1500", "--ensemble.count", "300", "--ensemble.store_every", "1",
             "--run.trajectories", "8", "--run.trace_every", "100"]
    scores = {}
    for prec in ("float64", "float32"):
        out = os.path.join(tmp, f"abinitio_{prec}.h5")
        run(2, short + ["--run.precision", prec, "--output", out])
        with h5py.File(out, "r") as f:
            pred, truth = f["ensemble/test/prediction"][()], f["data/test/y"][()]  # class labels
            scores[prec] = (float(np.mean(pred == truth)), float(np.mean(f["sample_stats/loss"][()])))
    (acc64, loss64), (acc32, loss32) = scores["float64"], scores["float32"]
    print(f"float32 vs float64 (Iris ab initio, 8 x 3000 steps): test accuracy {acc32:.4f} vs {acc64:.4f}, "
          f"mean member train loss {loss32:.6f} vs {loss64:.6f}")
    if abs(acc32 - acc64) > 1.0 / 38 + 1e-9:
        fail("float32 and float64 ensemble test accuracies differ by more than one of the 38 test points")
    if abs(loss32 - loss64) > 0.02 * abs(loss64):
        fail("float32 and float64 mean member train losses differ by more than 2 %")
    print("float32: identical across rank counts and a resume; precision recorded; agrees with float64")
