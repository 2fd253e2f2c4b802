#!/usr/bin/python3
"""Drift and stationarity (issue 10): the verdicts, the sampling options and the uncertainty
scores of simmer_mpi, checked end to end (pytest functions, one CTest test each:
tests/conftest.py says how to run them by hand; Debian's /usr/bin/python3: h5py, numpy, scipy).

tests: drift        the sine retrofit at the paper's length, seeds 5 and 18: the run and
                    simmer_analyze summary call them drifting, and seed 18's last block predicts
                    worse than its first (how far it falls is chaotic: the compiler's flags and the
                    CPU decide whether its ensemble collapses); the same seeds with a Gaussian prior (sigma 1) are not called
                    drifting and their rms stays within 3 sigma
       options      thermal and zero start velocities, Martyna masses, Langevin, temperatures in
                    posterior units: each does what its documentation says
       identical    prior + Langevin + thermal start + simmer.time_step = auto: -n 1 and 3 give
                    bit-identical archives; stopped by SIGUSR1 in the warm-up and resumed on another
                    rank count, still identical; every trajectory's chosen step and T_conf archived
       masses       parameter masses (issue 21), adapted after a 1 000-step warm-up and Adam's:
                    the same bits on 1 and 3 ranks, their /diagnostics/mass_min, _median and
                    _max finite, positive and ordered; the adapted run stopped in the warm-up and
                    resumed on 1 rank is still identical and keeps its masses
       uncertainty  NLL, Brier, ECE, Gaussian NLL and interval coverage equal a numpy
                    recomputation from every stored network
       auto_step_near_the_limit  simmer.time_step = auto at 0.95 of the limit runs on 1 and 2 ranks:
                    each trajectory's step judged against its own start's curvature
       heat         a trajectory slow to heat (a single thermostat after a long T = 0 stage) is
                    warned about and keeps sampling: no divergence, all members
       posterior_job  jobs/sine_posterior.ini, shortened to 200 000 steps: its window makes a
                    majority of the trajectories stationary with every T_conf/T within 10 % of 1,
                    where the same job at the recipe's 3 000-step window does not (uninstrumented
                    only: .ci/run leaves it out of the sanitizer pass)
"""
import os
import re
import subprocess
import sys

import h5py
import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import simmer_test as st  # noqa: E402
from simmer_test import ENV, compare_archives, fail, forward, opts, read_layout, run, scaled  # noqa: E402

SIMMER, ANALYZE, ROOT = st.SIMMER_MPI, st.SIMMER_ANALYZE, st.ROOT
SINE = ["--config", os.path.join(ROOT, "jobs/sine_retrofit.ini")]
IRIS_SMALL = ["--config", os.path.join(ROOT, "jobs/iris_retrofit.ini"),
              "--data.path", os.path.join(ROOT, "data/iris.csv"),
              "--adam.epochs", "60", "--simmer.steps", "600", "--simmer.every", "50",
              "--ensemble.window", "300", "--ensemble.fraction", "0", "--ensemble.count", "0",
              "--ensemble.stride", "2", "--ensemble.store_every", "1", "--ensemble.blocks", "3",
              "--run.trajectories", "4", "--run.gather_interval", "150", "--run.trace_every", "10",
              "--simmer.lanczos_steps", "10", "--simmer.lanczos_probes", "1"]


def summary(path):
    p = subprocess.run([ANALYZE, "summary", path], env=ENV, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"summary of {path} exited {p.returncode}\n{p.stderr}")
    return p.stdout


def same_on_ranks(args, rank_counts, stem):
    """Runs `args` on each rank count into <stem><ranks>.h5; every archive must equal the first.
    Returns the first archive's path. The features' tests take 1 and 3 ranks for 4 trajectories:
    all on one rank against several ranks holding them unevenly (a rank holds two); mpi: identical
    runs the run layer itself on 1, 2 and 4."""
    paths = [f"{stem}{ranks}.h5" for ranks in rank_counts]
    for ranks, path in zip(rank_counts, paths):
        run(SIMMER, ranks, args + ["--output", path])
    for path in paths[1:]:
        compare_archives(paths[0], path)
    return paths[0]


def test_drift(tmp):
    # Seed 5 (issue 10's example): drifting. Seed 18 is the seed of 1..20 whose ensemble
    # collapses with this version's random streams (R² 0.29; with the streams before the
    # named ones it was seed 5): its block R² falls and one test point dominates the error.
    verdicts = {}
    for seed in (5, 18):
        plain = os.path.join(tmp, f"sine{seed}.h5")
        p = run(SIMMER, 1, SINE + ["--run.seed", str(seed), "--data.split_seed", str(seed), "--output", plain])
        if "stationarity: 1 drifting" not in p.stdout:
            fail(f"the end-of-run table does not call sine seed {seed} drifting:\n{p.stdout}")
        with h5py.File(plain, "r") as f:
            d = f["diagnostics"]
            verdicts[seed] = (st.strings(d["verdict"]), d["block_test_metric"][0], d["window_ballistic_ratio"][0],
                              f["metrics"].attrs["ensemble_test_worst_point_share"],
                              f["metrics"].attrs["ensemble_test_r2"])
        if verdicts[seed][0] != ["drifting"] or not verdicts[seed][2] > 0.9:
            fail(f"seed {seed}: /diagnostics/verdict {verdicts[seed][0]}, ballistic ratio {verdicts[seed][2]}")
        text = summary(plain)
        if "verdicts: 1 drifting" not in text:
            fail(f"summary of seed {seed} does not say drifting:\n{text}")
    _, blocks, ratio, share, r2 = verdicts[18]
    # Where a drifting trajectory ends up is chaotic: other floating-point contraction (the
    # sanitizer build's flags, or -march=native on another CPU: same source) takes seed 18
    # elsewhere (R² 0.97 in the sanitized build; 0.92, its worst point 0.30 of the error, on the
    # EPYC of 2026-11-29, where it had collapsed to R² < 0.8 with one point > 0.5 before). What
    # holds in every build is the drift itself: the window's last block predicts worse than its first.
    if not blocks[-1] < blocks[0]:
        fail(f"seed 18 drifts without losing accuracy over its window: block R² {blocks}")
    print(f"drift: seed 18's block R² {blocks[0]:.3f} -> {blocks[-1]:.3f}; ensemble R² {r2:.3f}, worst point "
          f"{share:.2f} of the error (chaotic: depends on the compiler's flags and the CPU)")
    # The same seeds with a Gaussian prior (sigma 1): not drifting, rms within 3 sigma.
    for seed in (5, 18):
        prior = os.path.join(tmp, f"sine{seed}_prior.h5")
        run(SIMMER, 1, SINE + ["--run.seed", str(seed), "--data.split_seed", str(seed), "--simmer.prior", "gaussian",
                               "--simmer.prior_sigma", "1", "--output", prior])
        with h5py.File(prior, "r") as f:
            d = f["diagnostics"]
            verdict_prior = st.strings(d["verdict"])
            rms = d["rms_end"][0]
            r2_prior = f["metrics"].attrs["ensemble_test_r2"]
        if verdict_prior == ["drifting"] or rms > 3.0:
            fail(f"seed {seed} with the prior: verdict {verdict_prior}, rms {rms} (sigma 1)")
        if "drifting" in summary(prior).split("stationarity")[-1]:
            fail(f"summary calls seed {seed} with the prior drifting")
        print(f"drift: seed {seed}: paper drifting (ratio {verdicts[seed][2]:.3f}, R² {verdicts[seed][4]:.3f}); "
              f"with the prior {verdict_prior[0]}, rms {rms:.2f}, R² {r2_prior:.3f}")
    print(f"drift: seed 18's block R² {blocks[0]:.3g} -> {blocks[-1]:.3g}, one test point {100 * share:.0f}% "
          "of the error")


def test_options(tmp):
    # Thermal start at the schedule's first T > 0 (T_initial 0, dT 0.01: 0.01).
    out = os.path.join(tmp, "thermal.h5")
    run(SIMMER, 1, opts(IRIS_SMALL, "--simmer.start_velocity", "thermal", "--run.trajectories", "1",
                        "--output", out))
    with h5py.File(out, "r") as f:
        v = f["initial/velocity"][0]
        t_kin = float(np.mean(v ** 2))
    if abs(t_kin - 0.01) > 0.01 * 0.1:  # 8053 draws: within 10 %
        fail(f"thermal start: kinetic temperature {t_kin}, expected 0.01")
    out = os.path.join(tmp, "zero.h5")
    run(SIMMER, 1, opts(IRIS_SMALL, "--simmer.start_velocity", "zero", "--run.trajectories", "1",
                        "--output", out))
    with h5py.File(out, "r") as f:
        if np.any(f["initial/velocity"][0] != 0.0):
            fail("zero start: velocities are not 0")
    # Martyna masses at T_target 0.1 with tau 0.5: Q_1 = N_f T tau^2, Q_k = T tau^2.
    out = os.path.join(tmp, "martyna.h5")
    p = run(SIMMER, 1, opts(IRIS_SMALL, "--simmer.masses", "martyna", "--simmer.tau", "0.5",
                            "--run.trajectories", "1", "--output", out))
    with h5py.File(out, "r") as f:
        masses = f.attrs["thermostat_masses"]
        q = [float(x) for x in (masses.decode() if isinstance(masses, bytes) else masses).split(",")]
    want = [8053 * 0.1 * 0.25, 0.1 * 0.25, 0.1 * 0.25]
    if not np.allclose(q, want, rtol=1e-12):
        fail(f"martyna masses {q}, expected {want}")
    # Langevin at constant T: the kinetic temperature of the stored draws is T.
    out = os.path.join(tmp, "langevin.h5")
    run(SIMMER, 1, opts(IRIS_SMALL, "--simmer.thermostat", "langevin", "--simmer.friction", "5",
                        "--simmer.T_initial", "0.05", "--simmer.T_target", "0.05", "--simmer.dT", "0",
                        "--run.trajectories", "1", "--output", out))
    with h5py.File(out, "r") as f:
        kin = f["sample_stats/kinetic_temperature"][0]
    if abs(kin.mean() / 0.05 - 1) > 0.05:
        fail(f"Langevin: mean kinetic temperature {kin.mean()}, expected 0.05")
    # Temperatures in posterior units: T = 2 T_Bayes = 2/112 for cce on 112 rows.
    out = os.path.join(tmp, "posterior.h5")
    p = run(SIMMER, 1, opts(IRIS_SMALL, "--simmer.temperature_unit", "posterior", "--simmer.T_target", "2",
                            "--simmer.dT", "1", "--run.trajectories", "1", "--output", out))
    with h5py.File(out, "r") as f:
        t = f["sample_stats/temperature"][0]
        over = f["metrics"].attrs["temperature_over_bayes"]
    if not (np.allclose(t[-1], 2.0 / 112, rtol=1e-12) and abs(over - 2.0) < 1e-9):
        fail(f"posterior units: T {t[-1]} (expected {2 / 112}), T/T_Bayes {over}")
    if "2 x the Bayesian temperature" not in p.stdout:
        fail(f"the run does not print T in Bayesian units:\n{p.stdout}")
    # Regression without a noise sd: posterior units are refused naming the key.
    p = run(SIMMER, 1, SINE + ["--simmer.temperature_unit", "posterior", "--output",
                               os.path.join(tmp, "no.h5")], expect=2)
    if "simmer.noise_sd" not in p.stdout + p.stderr:
        fail(f"posterior units without simmer.noise_sd: no message naming it\n{p.stderr}")
    print("options: thermal/zero start, Martyna masses, Langevin T_kin, posterior units as documented")


def test_identical(tmp):
    args = opts(IRIS_SMALL, "--simmer.prior", "gaussian", "--simmer.prior_scaling", "fan_in",
                "--simmer.thermostat", "langevin", "--simmer.start_velocity", "thermal",
                "--simmer.steps", "2000", "--ensemble.window", "1000", "--ensemble.stride", "5",
                "--run.checkpoint_interval", "500", "--run.sync_every", "50",
                "--simmer.time_step", "auto", "--simmer.step_fraction", "0.1")
    first = same_on_ranks(args, (1, 3), os.path.join(tmp, "n"))
    with h5py.File(first, "r") as f:
        h = f["diagnostics/time_step"][()]
        ratio = f["diagnostics/configurational_temperature"][()] / f["diagnostics/temperature"][()]
    if not (np.all(np.isfinite(h)) and np.all(h > 0) and len(set(h.tolist())) == len(h)):
        fail(f"time_step = auto: each trajectory's own finite step expected in /diagnostics/time_step, got {h}")
    if not np.all(np.isfinite(ratio)):
        fail(f"/diagnostics/configurational_temperature: finite T_conf/T expected, got {ratio}")
    # Stopped by SIGUSR1 at step 550, between checkpoints (exit 3 and a checkpoint at 550
    # required), resumed on 1 rank: the same bits.
    st.stopped_and_resumed(SIMMER, args, os.path.join(tmp, "stopped.h5"), [], [], "the prior + Langevin run",
                           at_step=550)
    print(f"identical: prior + Langevin + thermal start + auto step (h {h.min():.4g}-{h.max():.4g}, T_conf/T "
          f"{ratio.min():.3f}-{ratio.max():.3f}) bit-identical on 1 and 3 ranks and across a stop and resume")


def test_configurational_temperature(tmp):
    # The Iris posterior (prior N(0, 1/fan_in), T = T_Bayes) at a small step, h = 0.01 (a third of
    # the automatic step's 0.03), with the default thermostat in posterior units (massive
    # Nose-Hoover-Langevin; the job file states the paper's chain): the positions follow
    # exp(-U/T), so every trajectory's T_conf/T over the 2000-step window is within 3 % of 1
    # (measured 0.994-1.007, standard errors 0.001; the paper's one global chain here: 1.046-1.059).
    # A T_conf that drops the prior's part of U is off by far more.
    out = os.path.join(tmp, "tconf.h5")
    run(SIMMER, 2, opts(IRIS_SMALL, "--simmer.steps", "4000", "--ensemble.window", "2000", "--ensemble.stride", "10",
                        "--simmer.temperature_unit", "posterior", "--simmer.T_initial", "1", "--simmer.T_target", "1",
                        "--simmer.dT", "0", "--simmer.prior", "gaussian", "--simmer.prior_scaling", "fan_in",
                        "--simmer.start_velocity", "thermal", "--simmer.time_step", "0.01",
                        "--simmer.thermostat", "massive_nose_hoover_langevin", "--simmer.configurational_every", "10", "--simmer.configurational_probes", "4",
                        "--output", out))
    with h5py.File(out, "r") as f:
        d = f["diagnostics"]
        ratio = d["configurational_temperature"][()] / d["temperature"][()]
        kinetic = d["kinetic_temperature"][()] / d["temperature"][()]
    if not (np.all(np.abs(ratio - 1) < 0.03) and np.all(np.abs(kinetic - 1) < 0.03)):
        fail(f"Iris posterior at h = 0.01: T_conf/T {ratio}, T_kin/T {kinetic} (each within 3 % of 1 expected)")
    print(f"T_conf/T {ratio.min():.4f}-{ratio.max():.4f}, T_kin/T {kinetic.min():.4f}-{kinetic.max():.4f}")


def test_auto_step_with_the_chain(tmp):
    # time_step = auto with the paper's Nose-Hoover chain on the Iris posterior: there the chain's
    # own limit, 2/sqrt(2 N_f T/Q_1) with Q_1 = 1, is ~4x below the curvature's (lambda_max ~ 8 at
    # T_Bayes = 1/112), so every trajectory's window step is step_fraction x that limit. A step
    # limit without the thermostat's bound takes 0.2 x 2/sqrt(lambda_max) instead and fails here.
    out = os.path.join(tmp, "chain_auto.h5")
    p = run(SIMMER, 2, opts(IRIS_SMALL, "--simmer.temperature_unit", "posterior", "--simmer.T_initial", "1",
                            "--simmer.T_target", "1", "--simmer.dT", "0", "--simmer.prior", "gaussian",
                            "--simmer.prior_scaling", "fan_in", "--simmer.start_velocity", "thermal",
                            "--simmer.thermostat", "nose_hoover", "--simmer.time_step", "auto",
                            "--simmer.step_fraction", "0.2", "--output", out))
    with h5py.File(out, "r") as f:
        h = f["diagnostics/time_step"][()]
        temperature = f["diagnostics/temperature"][()]
        dof = f["posterior/params"].shape[-1]
    expected = 0.2 * 2.0 / np.sqrt(2.0 * dof * temperature)
    if not np.allclose(h, expected, rtol=1e-9, atol=0):
        fail(f"time_step = auto with the chain: window steps {h}, expected 0.2 x the thermostat's limit "
             f"{expected}\n{p.stdout}")
    print(f"auto step with the chain: h = {h.min():.5g} on every trajectory, 0.2 x the thermostat's limit")


def test_auto_step_near_the_limit(tmp):
    # simmer.time_step = auto at 0.95 of the limit: each trajectory chooses its step from its own
    # start's curvature, so the stability check must judge each step against its own trajectory's
    # curvature. Judged as before (the largest step any trajectory chose against the largest
    # curvature any had), these four sine start points, whose lambda_max spread over more than
    # 1/0.95, were refused at "129% of its limit" (exit 4).
    out = os.path.join(tmp, "near.h5")
    for ranks in (1, 2):
        p = run(SIMMER, ranks, SINE + ["--simmer.temperature_unit", "posterior", "--simmer.noise_sd", "auto",
                                       "--data.validation_fraction", "0.2", "--simmer.ladder", "1",
                                       "--simmer.time_step", "auto", "--simmer.step_fraction", "0.95",
                                       "--simmer.steps", "200", "--ensemble.window", "100", "--adam.epochs", "300",
                                       "--run.trajectories", "4", "--output", out, "--overwrite"])
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("stability:")), "")
        share = re.search(r"the step at ([0-9.]+)% of its limit", line)
        if not share or not float(share.group(1)) <= 95.0 + 1e-9:
            fail(f"-n {ranks}: the stability line does not give 95% or less:\n{line}")
        with h5py.File(out, "r") as f:
            window = [float(v) for v in f["diagnostics/time_step"][()]]
        print(f"-n {ranks}: {line.strip()} (window steps {min(window):.4g}-{max(window):.4g})")


def test_masses(tmp):
    # Parameter masses (issue 21): adapted after a 1 000-step warm-up, and Adam's: the same
    # bits on 1 and 3 ranks and across a stop in the warm-up, resumed on 1 rank.
    base = opts(IRIS_SMALL, "--simmer.prior", "gaussian", "--simmer.prior_scaling", "fan_in",
                "--simmer.start_velocity", "thermal", "--simmer.steps", "2000", "--ensemble.window", "1000",
                "--ensemble.stride", "5", "--run.trajectories", "4")
    for name, extra in (("adapt", ["--simmer.parameter_masses", "adapt", "--simmer.mass_warmup", "1000"]),
                        ("adam", ["--simmer.parameter_masses", "adam"])):
        first = same_on_ranks(base + extra, (1, 3), os.path.join(tmp, f"{name}_n"))
        with h5py.File(first, "r") as f:
            lo, mid, hi = (f[f"diagnostics/mass_{q}"][()] for q in ("min", "median", "max"))
        if not (np.all(np.isfinite(lo)) and np.all(lo > 0) and np.all(hi > lo) and np.all(mid >= lo)):
            fail(f"{name} masses: /diagnostics/mass_min {lo}, median {mid}, max {hi}")
    st.stopped_and_resumed(SIMMER, base + ["--simmer.parameter_masses", "adapt", "--simmer.mass_warmup", "1000"],
                           os.path.join(tmp, "stopped.h5"), [], [], "the adapted-masses run", at_step=550)
    with h5py.File(os.path.join(tmp, "stopped.h5"), "r") as f:
        if not np.isfinite(f["diagnostics/mass_min"][()]).all():
            fail("the resumed run lost its masses")
    print("masses: adapted and Adam's masses bit-identical on 1 and 3 ranks and across a stop in the warm-up")


def classification_scores(tmp):
    """Iris: the mean probabilities, NLL, Brier and ECE from every stored network."""
    iris = os.path.join(tmp, "iris.h5")
    run(SIMMER, 2, IRIS_SMALL + ["--output", iris])
    with h5py.File(iris, "r") as f:
        layout, params = read_layout(f), f["posterior/params"][()]
        m = f["metrics"].attrs
        for split in ("train", "test"):
            x, y = scaled(f, f[f"data/{split}/x"][()]), f[f"data/{split}/y"][()]
            probs = []
            for c in range(params.shape[0]):
                for d in range(params.shape[1]):
                    z = forward(params[c, d], layout, x)
                    e = np.exp(z - z.max(axis=1, keepdims=True))
                    probs.append(e / e.sum(axis=1, keepdims=True))
            p = np.mean(probs, axis=0)
            if not np.allclose(p, f[f"ensemble/{split}/probability"][()], rtol=1e-9, atol=1e-12):
                fail(f"{split}: mean probabilities differ from the stored networks'")
            nll = -np.mean(np.log(p[np.arange(len(y)), y]))
            onehot = np.eye(p.shape[1])[y]
            brier = np.mean(np.sum((p - onehot) ** 2, axis=1))
            conf, hit = p.max(axis=1), p.argmax(axis=1) == y
            bins = np.minimum((conf * 10).astype(int), 9)
            ece = sum(abs(hit[bins == b].sum() - conf[bins == b].sum()) for b in range(10)) / len(y)
            for name, want in (("nll", nll), ("brier", brier), ("ece", ece)):
                if not np.isclose(m[f"ensemble_{split}_{name}"], want, rtol=1e-9, atol=1e-12):
                    fail(f"{split} {name}: archive {m[f'ensemble_{split}_{name}']}, numpy {want}")


def regression_scores(tmp):
    """Sine: the Gaussian NLL, the mixture's components, predictive and members' coverage and
    the noise from every stored network."""
    sine = os.path.join(tmp, "sine.h5")
    run(SIMMER, 2, SINE + ["--adam.epochs", "200", "--simmer.steps", "2000", "--simmer.every", "200",
                           "--ensemble.window", "1000", "--run.trajectories", "3", "--output", sine])
    with h5py.File(sine, "r") as f:
        layout, params = read_layout(f), f["posterior/params"][()]
        lo, hi = f["data/scaling/y_min"][()], f["data/scaling/y_max"][()]
        m = f["metrics"].attrs
        preds = {}
        for split in ("train", "test"):
            x = scaled(f, f[f"data/{split}/x"][()])
            preds[split] = np.array([forward(params[c, d], layout, x) * (hi - lo) / 2 + (hi + lo) / 2
                                     for c in range(params.shape[0]) for d in range(params.shape[1])])
        noise = np.mean((preds["train"].mean(axis=0) - f["data/train/y"][()]) ** 2, axis=0)
        for split in ("train", "test"):
            y = f[f"data/{split}/y"][()]
            mean, var = preds[split].mean(axis=0), preds[split].var(axis=0, ddof=1) + noise
            nll = np.mean(0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var))
            if not np.isclose(m[f"ensemble_{split}_nll"], nll, rtol=1e-6):
                fail(f"sine {split} Gaussian NLL: archive {m[f'ensemble_{split}_nll']}, numpy {nll}")
            members = preds[split].shape[0]
            u = ((preds[split] < y).sum(axis=0) + 0.5 * (preds[split] == y).sum(axis=0)) / members
            # The predictive mixture: one component per trajectory (its members' mean and
            # variance, weighted by their count) with the noise (training residuals: no
            # validation split), and where its CDF puts the truth.
            per_chain = preds[split].reshape(params.shape[0], params.shape[1], *y.shape)
            comp_mean, comp_var = per_chain.mean(axis=1), per_chain.var(axis=1)
            g = f[f"ensemble/{split}"]
            if not (np.allclose(g["trajectory_mean"][()], comp_mean, rtol=1e-6, atol=1e-9)
                    and np.allclose(g["trajectory_variance"][()], comp_var, rtol=1e-4, atol=1e-12)
                    and np.array_equal(g["trajectory_members"][()], [params.shape[1]] * params.shape[0])):
                fail(f"sine {split}: the mixture's components differ from the stored networks'")
            pit = np.mean(stats.norm.cdf((y - comp_mean) / np.sqrt(comp_var + noise)), axis=0)
            for level in (50, 90, 95):
                a = (1 - level / 100) / 2
                want = np.mean((u >= a) & (u <= 1 - a))
                if not np.isclose(m[f"ensemble_{split}_mean_coverage_{level}"], want):
                    fail(f"sine {split} members' coverage {level}: archive "
                         f"{m[f'ensemble_{split}_mean_coverage_{level}']}, numpy {want}")
                want = np.mean((pit >= a) & (pit <= 1 - a))
                if not np.isclose(m[f"ensemble_{split}_coverage_{level}"], want):
                    fail(f"sine {split} predictive coverage {level}: archive "
                         f"{m[f'ensemble_{split}_coverage_{level}']}, scipy {want}")
        if st.text(m["ensemble_noise_source"]) != "training" or not np.isclose(m["ensemble_noise_variance"], noise[0]):
            fail(f"sine noise: archive {m['ensemble_noise_variance']} ({m['ensemble_noise_source']}), numpy {noise}")


def test_uncertainty(tmp):
    classification_scores(tmp)
    regression_scores(tmp)
    print("uncertainty: NLL/Brier/ECE (Iris) and Gaussian NLL, predictive and members' coverage (sine) equal "
          "numpy's and scipy's from the stored networks")


def test_heat(tmp):
    out = os.path.join(tmp, "heavy.h5")
    # The sine job with a single thermostat and a T = 0 stage of 3000 steps: it cools, and at
    # T = 0.01 its kinetic temperature stays below T/100 for several checks (seeds 1..8 all).
    p = run(SIMMER, 1, SINE + ["--simmer.chain_length", "1", "--simmer.every", "3000", "--output", out])
    if "slow to heat" not in p.stderr:
        fail(f"no slow-to-heat warning:\n{p.stderr}")
    with h5py.File(out, "r") as f:
        diverged = f["sample_stats/diverged_at_step"][()]
        members = f["metrics"].attrs["members"]
        slow = f["diagnostics/slow_to_heat_at_step"][0]
    if diverged[0] != -1 or members != 3000 or slow < 0:
        fail(f"slow to heat: diverged_at {diverged}, {members} members, slow_to_heat_at {slow}")
    print(f"heat: slow to heat at step {int(slow)} warned about; no divergence; all {members} members kept")


def verdicts_and_temperatures(path):
    with h5py.File(path, "r") as f:
        d = f["diagnostics"]
        return st.strings(d["verdict"]), d["configurational_temperature"][()] / d["temperature"][()]


def test_posterior_job(tmp):
    # jobs/sine_posterior.ini samples the sine's posterior at T_Bayes because its window is long
    # (docs/MIXING.md, "Windows that long do it"). Shortened to 200 000 steps with a 160 000-step
    # window (22 s on 2 ranks) a majority of its 8 trajectories is stationary and every T_conf/T
    # is within 10 % of 1 (measured: 7 of 8, 0.96-1.04, mean 0.987); at the recipe's 10 000 steps
    # with a 3 000-step window none is stationary (measured: 0 of 8). The job follows the recipe's
    # defaults, so a default that stops it sampling (the paper's one global chain: T_conf/T 0.13
    # on this posterior) fails here.
    job = ["--config", os.path.join(ROOT, "jobs/sine_posterior.ini")]
    long_run, short_run = os.path.join(tmp, "long.h5"), os.path.join(tmp, "short.h5")
    run(SIMMER, 2, job + ["--simmer.steps", "200000", "--ensemble.window", "160000", "--output", long_run], cwd=ROOT)
    run(SIMMER, 2, job + ["--simmer.steps", "10000", "--ensemble.window", "3000", "--ensemble.stride", "1",
                          "--output", short_run], cwd=ROOT)
    verdicts, ratio = verdicts_and_temperatures(long_run)
    short_verdicts, _ = verdicts_and_temperatures(short_run)
    stationary, short_stationary = verdicts.count("stationary"), short_verdicts.count("stationary")
    print(f"160 000-step window: {stationary} of {len(verdicts)} stationary, T_conf/T {ratio.min():.3f}-"
          f"{ratio.max():.3f} (mean {ratio.mean():.3f}); 3 000-step window: {short_stationary} stationary")
    if not (stationary > len(verdicts) / 2 and np.all(np.abs(ratio - 1) < 0.1) and abs(ratio.mean() - 1) < 0.03):
        fail(f"jobs/sine_posterior.ini over a 160 000-step window: verdicts {verdicts}, T_conf/T {ratio} (a majority "
             f"stationary, each within 10 % of 1 and their mean within 3 % expected)")
    if short_stationary > len(short_verdicts) / 2:
        fail(f"the same job over a 3 000-step window: {short_verdicts} (not a majority stationary expected: then the "
             f"long window is not what makes it sample)")
