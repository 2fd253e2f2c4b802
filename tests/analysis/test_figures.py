#!/usr/bin/python3
"""The figure scripts of analysis/ on small archives (a pytest function, one CTest test:
tests/conftest.py says how to run it by hand; Debian's /usr/bin/python3, which has h5py, numpy and
matplotlib).

tests: all  makes a small sine retrofit archive (the 201-point grid analysis/sine_grid.csv as
            ensemble.points, test rows 0 and 5 tracked) and a small Iris ab initio archive
            (jobs/iris_grid.csv as ensemble.points) with simmer_mpi, runs every figure script on
            them (and bars.py on a study table), and checks each PNG (> 10 kB) and PDF exists and
            starts like one; reliability.py's classification ECE against /metrics; the fit and the
            decision map drawn from copies without the run's grid (the scripts evaluate the
            stored networks on their own grid through simmer_analyze predict). Then the error cases: a figure on an archive lacking what it needs
            must exit non-zero with one line naming the file and write nothing. Every check runs;
            the test fails at the end listing all that failed.
"""
import os
import shutil
import subprocess
import sys

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402  (tests/simmer_test.py: ENV, fail, archive comparison, ...)

# Absolute: the programs run with the temporary directory as their working directory.
SIMMER = os.path.abspath(st.SIMMER_MPI) if st.SIMMER_MPI else ""
ROOT = os.path.abspath(st.ROOT) if st.ROOT else ""
ANALYSIS = os.path.join(ROOT, "analysis")
ENV = dict(st.ENV)  # (MPLCONFIGDIR added by the test; this file's fail() collects failures instead of stopping)
FAILURES = []


def fail(msg):
    print("FAIL:", msg)
    FAILURES.append(msg)


def simmer(args, cwd):
    st.run(SIMMER, 2, args, timeout=300, cwd=cwd)


def figure(script, args, cwd):
    cmd = [os.path.join(ANALYSIS, script)] + args
    return subprocess.run(cmd, env=ENV, cwd=cwd, capture_output=True, text=True, timeout=300)


def check_outputs(prefix, what):
    png, pdf = prefix + ".png", prefix + ".pdf"
    for path, magic, least in ((png, b"\x89PNG", 10_000), (pdf, b"%PDF", 1_000)):
        if not os.path.exists(path):
            fail(f"{what}: {path} was not written")
            continue
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(4)
        if head != magic:
            fail(f"{what}: {path} does not start with {magic!r}")
        if size <= least:
            fail(f"{what}: {path} has {size} bytes (expected > {least})")
        else:
            print(f"ok   {what}: {os.path.basename(path)} {size} bytes")
    if os.path.exists(png):
        # Not only a file: a figure with something drawn in it (issue 19: the sizes alone passed an
        # empty figure). Measured: two empty axes with titles and labels ink 1.4 % of the pixels,
        # none in colour; the figures here ink 7-61 %, 1.7-57 % in colour.
        import matplotlib.image
        import numpy as np
        img = matplotlib.image.imread(png)[..., :3]
        inked = float(np.mean(np.any(img < 0.95, axis=-1)))
        # One number per colour (np.unique over rows of three took 2 s a figure).
        rgb = (img * 255).astype(np.uint8).astype(np.uint32)
        colours = len(np.unique((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]))
        coloured = float(np.mean(np.ptp(img, axis=-1) > 0.1))  # not grey: the data, not the axes
        print(f"     {os.path.basename(png)}: {img.shape[1]}x{img.shape[0]} px, {100 * inked:.1f} % inked, "
              f"{100 * coloured:.1f} % coloured, {colours} colours")
        if min(img.shape[:2]) < 300 or inked < 0.04 or coloured < 0.005:
            fail(f"{what}: {png} looks empty ({img.shape[1]}x{img.shape[0]} px, {100 * inked:.1f} % inked, "
                 f"{100 * coloured:.2f} % coloured, {colours} colours)")


def expect_figure(script, args, prefix, cwd):
    p = figure(script, args + ["-o", prefix], cwd)
    what = f"{script} {' '.join(args)}"
    if p.returncode != 0:
        fail(f"{what} exited {p.returncode}: {p.stderr.strip()}")
        return
    check_outputs(prefix, what)


def expect_error(script, args, path, needle, cwd):
    prefix = os.path.join(cwd, "should_not_exist")
    p = figure(script, args + ["-o", prefix], cwd)
    what = f"{script} {' '.join(args)}"
    message = p.stderr.strip()
    if p.returncode == 0:
        fail(f"{what}: exited 0 on an archive lacking {needle}")
    if path not in message or needle not in message:
        fail(f"{what}: the message does not name {path} and {needle}: {message!r}")
    if "Traceback" in message or len(message.splitlines()) != 1:
        fail(f"{what}: expected one line of error, got: {message!r}")
    for ext in (".png", ".pdf"):
        if os.path.exists(prefix + ext):
            fail(f"{what}: wrote {prefix + ext} although it failed")
    if p.returncode != 0 and path in message and needle in message:
        print(f"ok   {what}: exit {p.returncode}: {message}")


def make_archives(tmp):
    """The small sine retrofit and Iris ab initio archives the figures are drawn from."""
    sine = os.path.join(tmp, "sine.h5")
    iris = os.path.join(tmp, "iris.h5")
    simmer(["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini"),
            "--ensemble.points", os.path.join(ANALYSIS, "sine_grid.csv"), "--ensemble.track", "0,5",
            "--adam.epochs", "300", "--simmer.steps", "1500", "--simmer.every", "150",
            "--ensemble.window", "500", "--ensemble.store_every", "50",
            "--run.trajectories", "2", "--run.gather_interval", "500", "--output", sine], tmp)
    simmer(["--config", os.path.join(ROOT, "jobs/iris_abinitio.ini"),
            "--data.path", os.path.join(ROOT, "data/iris.csv"),
            "--ensemble.points", os.path.join(ROOT, "jobs/iris_grid.csv"),
            "--simmer.steps", "600", "--ensemble.window", "400", "--ensemble.count", "50",
            "--ensemble.store_every", "50", "--run.trajectories", "2",
            "--run.gather_interval", "300", "--output", iris], tmp)
    return sine, iris


def figures_drawn(tmp, sine, iris):
    """Every script's --help, every figure (PNG and PDF, something drawn), reliability.py's
    printed coverage against /metrics, bars.py on a study table."""
    out = os.path.join(tmp, "out")
    for script in ("loss_curves.py", "regression_fit.py", "decision_map.py", "bars.py", "drift.py",
                   "reliability.py"):
        p = figure(script, ["--help"], tmp)
        if p.returncode != 0 or "usage:" not in p.stdout:
            fail(f"{script} --help exited {p.returncode}: {p.stderr.strip()}")
    expect_figure("loss_curves.py", [sine], os.path.join(out, "sine_loss"), tmp)
    expect_figure("loss_curves.py", [iris, "--palette", "--dpi", "110"], os.path.join(out, "iris_loss"), tmp)
    expect_figure("regression_fit.py", [sine], os.path.join(out, "sine_fit"), tmp)
    expect_figure("regression_fit.py", [sine, "--at", "0.3", "-0.2"], os.path.join(out, "sine_fit_at"), tmp)
    expect_figure("decision_map.py", [iris], os.path.join(out, "iris_map"), tmp)
    expect_figure("decision_map.py", [iris, "--at", "3,1", "3.5,0.6"], os.path.join(out, "iris_map_at"), tmp)
    expect_figure("bars.py", [sine, iris], os.path.join(out, "bars"), tmp)
    expect_figure("drift.py", [sine, iris], os.path.join(out, "drift"), tmp)
    expect_figure("reliability.py", [sine, sine], os.path.join(out, "reliability"), tmp)
    # Its printed coverage (recomputed from the archived mixture) at 50, 90 and 95 % is /metrics'.
    p = figure("reliability.py", [sine, "--set", "test", "-o", os.path.join(out, "reliability_one")], tmp)
    row = [line for line in p.stdout.splitlines() if line.startswith("run's ens")]
    with h5py.File(sine, "r") as f:
        want = [float(f["metrics"].attrs[f"ensemble_test_coverage_{q}"]) for q in (50, 90, 95)]
    got = [float(v) for v in row[0].split()[2:]] if row else []
    if len(got) != 10 or any(abs(got[i] - w) > 6e-4 for i, w in zip((4, 8, 9), want)):
        fail(f"reliability.py's coverage {got} differs from /metrics' {want} at 50/90/95 %")
    # Classification: confidence against accuracy; its printed ECE is /metrics'.
    p = figure("reliability.py", [iris, "-o", os.path.join(out, "iris_reliability")], tmp)
    check_outputs(os.path.join(out, "iris_reliability"), "reliability.py (classification)")
    row = [line for line in p.stdout.splitlines() if line.startswith("run's ensemble: ECE")]
    with h5py.File(iris, "r") as f:
        want = float(f["metrics"].attrs["ensemble_test_ece"])
    if not row or abs(float(row[0].split()[-1]) - want) > 1e-6:
        fail(f"reliability.py's ECE {row} differs from /metrics' {want}")
    # From a finished run without --ensemble.points: the scripts evaluate the stored networks on
    # a grid of their own (simmer_analyze predict) instead of asking for a rerun.
    no_grid = without(tmp, sine, "sine_no_grid.h5", "ensemble/points", "data/points")
    expect_figure("regression_fit.py", [no_grid], os.path.join(out, "sine_fit_grid"), tmp)
    iris_no_grid = without(tmp, iris, "iris_no_grid.h5", "ensemble/points", "data/points")
    expect_figure("decision_map.py", [iris_no_grid], os.path.join(out, "iris_map_grid"), tmp)
    table = os.path.join(tmp, "summary.csv")
    with open(table, "w") as f:
        f.write("case,metric,adam_mean,adam_sd,ensemble_mean,ensemble_sd,n_seeds,beat\n"
                "sine,r2,0.91,0.03,0.90,0.02,4,1\n"
                "autompg_s,r2,0.61,0.02,-228,150,4,0\n"
                "iris_retrofit,accuracy,0.94,0.02,0.95,0.02,4,2\n"
                "iris_abinitio,accuracy,0.935,0.024,0.921,0.01,4,1\n"
                "higgs,accuracy,nan,nan,nan,nan,0,0\n")
    expect_figure("bars.py", ["--table", table], os.path.join(out, "bars_table"), tmp)


def without(tmp, archive, name, *objects):
    """A copy of `archive` named `name` without `objects` (groups or datasets)."""
    path = os.path.join(tmp, name)
    shutil.copy(archive, path)
    with h5py.File(path, "a") as f:
        for obj in objects:
            del f[obj]
    return path


def errors_named(tmp, sine, iris):
    """Archives lacking what a figure needs: one line naming the file, nothing written."""
    expect_error("regression_fit.py", [iris], iris, "classification", tmp)
    expect_error("decision_map.py", [sine], sine, "regression", tmp)
    no_mixture = without(tmp, sine, "sine_no_mixture.h5", "ensemble/test/trajectory_mean")
    expect_error("reliability.py", [no_mixture], no_mixture, "/ensemble/test/trajectory_mean", tmp)
    expect_error("bars.py", [os.path.join(tmp, "missing.h5")], os.path.join(tmp, "missing.h5"),
                 "no such file", tmp)
    no_diagnostics = without(tmp, sine, "sine_no_diagnostics.h5", "diagnostics")
    expect_error("drift.py", [no_diagnostics], no_diagnostics, "/diagnostics/block_test_metric", tmp)


def test_all(tmp):
    try:
        import matplotlib  # noqa: F401  (the figure scripts need it)
    except ImportError as e:
        st.fail(f"matplotlib is missing for {sys.executable} ({e}); cmake/install-deps.sh installs "
                "python3-matplotlib")
    FAILURES.clear()
    ENV["MPLCONFIGDIR"] = os.path.join(tmp, "mpl")
    sine, iris = make_archives(tmp)
    figures_drawn(tmp, sine, iris)
    errors_named(tmp, sine, iris)
    if FAILURES:
        st.fail(f"{len(FAILURES)} check(s) failed:\n  " + "\n  ".join(FAILURES))
    print("all figure checks passed")
