#!/usr/bin/python3
"""The multi-seed study: every case of docs/METHOD.md §7 over several seeds, as the paper specifies
it and with one principled variant, and a chaos check (docs/REPRODUCTION.md).

Seed k sets both run.seed (initialisation, sampling) and data.split_seed (the train/test split,
the sine noise, the synthetic HIGGS data). Each (case, variant, seed) is one simmer_mpi run
writing runs/study/<case>-<variant>-seed<k>.h5; finished archives are reused, so an interrupted
study resumes where it stopped.

Variants (fixed before any run, the same rule for every case; no per-case tuning):
  paper      the job as specified (jobs/*.ini; shortened where CASES says).
  posterior  sample the Bayesian posterior: simmer.temperature_unit = posterior with
             T_initial = T_target = 1 (constant T = T_Bayes from the first step: 1/n for cross-
             entropy; 2 s^2 (SSE) or 2 s^2/n (MSE) with the noise sd s of the rule below), a
             Gaussian prior (simmer.prior = gaussian, prior_sigma = 1, prior_scaling = fan_in:
             weights N(0, 1/fan_in), biases N(0, 1)), thermal start velocities at T_Bayes; the
             paper's Nosé–Hoover chain, steps, h, window and members unchanged.
             Noise sd rule (regression): s² = the paper run's (same case and seed) training MSE of
             its baseline (Adam; ab initio: of its ensemble mean).
  langevin   posterior with simmer.thermostat = langevin (friction 1): the cheap cases only.
Against the deep ensemble (issue 17; fixed before the runs, the same for every case): each job
runs N trajectories (8; 12 for Iris ab initio, as its paper variant; 4 for the shortened
Fashion-MNIST and HIGGS cases and 2 for higgs_small, whose members are every 4th step of the
window) in float32 with a 20 % validation split (data.validation_fraction = 0.2, so every variant
below trains on the same rows), a Gaussian prior N(0, 1/fan_in) and
thermal start velocities (noise sd rule as above), and stores every 100th member:
  cold       T = 0.01 T_Bayes fixed, no choice.
  ladder     simmer.ladder = 0.01, 0.03, 0.1, 0.3, 1 T_Bayes (each rung the case's simmer.steps),
             the run's ensemble chosen by validation NLL (ensemble.select_rule = best) among the
             rungs and, in retrofit mode, the deep ensemble of the job's own Adam end points.
  deep       ab initio cases: simmer.mode = adam, the deep ensemble alone (N Adam networks with
             the Adam settings of the case's retrofit sibling: Iris 200 epochs; Auto-MPG 3500).
  ladder_auto       ladder at simmer.time_step = auto (the default fraction), the paper's chain.
  ladder_auto_mnhl  the same with the massive Nose-Hoover-Langevin thermostat: the recipe at its
                    defaults, compared with the fair deep ensemble by study_fair_deep.py.
  ladder_auto_es    ladder_auto_mnhl from Adam's best epoch on the validation loss
                    (adam.keep = best_validation, every epoch still run).
A retrofit job's deep ensemble is its own Adam end points (/metrics deep_ensemble_*).
Mixing (issue 21; jobs/study/study_mixing.py has them in full), on the cheap cases: unit (8
trajectories at T_Bayes with issue 17's shared settings), masses (the same with adapted parameter
masses) and exchange (rungs 1, 2, 4, 8 T_Bayes side by side with replica exchange, 32
trajectories), each run's verdicts, bulk ESS and ESS per second in their own section.
Chaos check (cheap cases, paper variant): two reruns with the start velocity changed by a
relative 1e-9 (simmer.start_jitter = +1e-9 and -1e-9).

Writes runs/study/runs.csv (one row per run), runs/study/summary.csv (one row per case and
variant, for analysis/bars.py), docs/REPRODUCTION.md and docs/reproduction_bars.png.

usage: jobs/study/study.py [--seeds 8] [--jobs 2] [--cases sine,iris_retrofit,...]
                           [--variants paper,posterior,langevin,cold,ladder,deep,ladder_auto,
                                       ladder_auto_mnhl,ladder_auto_es,unit,masses,exchange]
                           [--no-chaos]
                           [--simmer build/src/simmer_mpi] [--report-only]
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sections  # noqa: E402
from study_common import (UNBOUND, VERDICTS, archive_path, attrs, compare, finished, fmt, mean_sd, median,  # noqa: E402
                          sign_test)
from study_selection import MARK17, collect17, markdown17  # noqa: E402
import study_mixing  # noqa: E402
import study_step  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The shortened HIGGS case's settings (CASES says what they shorten).
HIGGS_SHORT = ["--data.rows", "0", "--data.train", "1000", "--data.test", "500", "--adam.epochs", "150",
               "--simmer.steps", "900", "--ensemble.window", "400", "--ensemble.store_every", "50",
               "--run.trajectories", "1", "--run.gather_interval", "300"]


def with_value(args, key, value):
    """A copy of the option list args with key's value replaced."""
    out = list(args)
    out[out.index(key) + 1] = value
    return out


# name, job file, metric, ranks per run, extra arguments, note on what was shortened, cheap.
CASES = [
    ("sine", "jobs/sine_retrofit.ini", "r2", 1, [], None, True),
    ("autompg_s", "jobs/autompg_s_retrofit.ini", "r2", 1, ["--simmer.stability_check", "warn"],
     "run with simmer.stability_check = warn: as specified, h = 0.001 exceeds the leapfrog limit "
     "at the Adam end point and the run would be refused (docs/METHOD.md §9)", True),
    ("autompg_m", "jobs/autompg_m_retrofit.ini", "r2", 1, [], None, True),
    ("iris_retrofit", "jobs/iris_retrofit.ini", "accuracy", 1, [], None, True),
    ("autompg_abinitio", "jobs/autompg_abinitio.ini", "r2", 1, [], None, True),
    ("iris_abinitio", "jobs/iris_abinitio.ini", "accuracy", 2,
     ["--run.trajectories", "12"],
     "12 trajectories per seed instead of 36 (full length: 25000 steps, 2000 members each)", False),
    ("mnist", "jobs/mnist_retrofit.ini", "accuracy", 1,
     ["--data.train", "500", "--data.test", "500", "--adam.epochs", "100",
      "--simmer.steps", "800", "--ensemble.window", "400", "--ensemble.store_every", "20",
      "--run.trajectories", "1", "--run.gather_interval", "200"],
     "Fashion-MNIST (MNIST cannot be downloaded here); 500 train / 500 test images instead of "
     "10000 / 1000, Adam 100 epochs instead of 300, 800 simmering steps instead of 6000 (the "
     "ramp reaches T = 0.001 at step 200 as specified), members: every step of the last 400", False),
    ("higgs", "jobs/higgs_retrofit.ini", "accuracy", 1, HIGGS_SHORT,
     "synthetic HIGGS-shaped data (the UCI file cannot be downloaded here); 1000 train / 500 "
     "test instead of 10000 / 1000, Adam 150 epochs instead of 1000, 900 simmering steps instead "
     "of 15000 (the ramp reaches T = 1e-4 at step 500 as specified), members: every step of the "
     "last 400", False),
    ("higgs_small", "jobs/higgs_retrofit.ini", "accuracy", 1,
     with_value(HIGGS_SHORT, "--data.train", "500"),
     "the higgs case with 500 training rows instead of 1000, for issue 37's study (the ladder at "
     "1000 rows and 4 trajectories takes 35-60 minutes a seed here)", False),
]
# Cases a study without --cases leaves out: higgs_small is issue 37's study at the defaults only.
OPT_IN = {"higgs_small"}
VARIANTS = (["paper", "posterior", "langevin", "cold", "ladder", "deep", "ladder_auto", "ladder_auto_mnhl",
             "ladder_auto_es"]
            + list(study_mixing.MIXING)
            + list(study_step.STEP))
# The variants against the deep ensemble (issue 17), and per case what their jobs change: the
# trajectories, ranks, shortening (the expensive cases) and, for ab initio cases, the Adam of the
# deep ensemble they are compared with.
ISSUE17 = ("cold", "ladder", "deep", "ladder_auto", "ladder_auto_mnhl", "ladder_auto_es")
# What the issue-37 variants add to the ladder (the docstring says what each is for).
LADDER_AUTO = ["--simmer.time_step", "auto"]
MNHL = ["--simmer.thermostat", "massive_nose_hoover_langevin"]
EARLY_STOPPED = ["--adam.keep", "best_validation"]
SHARED17 = ["--run.precision", "float32", "--data.validation_fraction", "0.2", "--ensemble.store_every", "100",
            "--simmer.prior", "gaussian", "--simmer.prior_sigma", "1", "--simmer.prior_scaling", "fan_in",
            "--simmer.start_velocity", "thermal", "--simmer.temperature_unit", "posterior"]
COLD = ["--simmer.T_initial", "0.01", "--simmer.T_target", "0.01", "--simmer.dT", "0"]
LADDER = ["--simmer.ladder", "0.01,0.03,0.1,0.3,1", "--ensemble.select_by", "nll", "--ensemble.select_rule", "best"]
SETUP17 = {
    "sine": dict(trajectories=8),
    "autompg_s": dict(trajectories=8),
    "autompg_m": dict(trajectories=8),
    "iris_retrofit": dict(trajectories=8),
    "autompg_abinitio": dict(trajectories=8, deep=["--adam.epochs", "3500"]),
    "iris_abinitio": dict(trajectories=12, deep=["--adam.epochs", "200"]),
    # The expensive cases (shortened as CASES says) with four trajectories and every 4th step of
    # the window a member.
    "mnist": dict(trajectories=4, extra=["--ensemble.stride", "4"]),
    "higgs": dict(trajectories=4, extra=["--ensemble.stride", "4"]),
}
SETUP17["higgs_small"] = dict(SETUP17["higgs"], trajectories=2)
POSTERIOR = ["--simmer.temperature_unit", "posterior", "--simmer.T_initial", "1", "--simmer.T_target", "1",
             "--simmer.dT", "0", "--simmer.prior", "gaussian", "--simmer.prior_sigma", "1",
             "--simmer.prior_scaling", "fan_in", "--simmer.start_velocity", "thermal"]
JITTER = 1e-9
OUT = os.path.join(ROOT, "runs/study")


def noise_sd(case, paper_path):
    """The rule: s² = the paper run's training MSE of Adam (retrofit) or of its ensemble (ab initio)."""
    m = attrs(paper_path)
    mse = m["ensemble_train_mse"] if "abinitio" in case[0] else m["baseline_train_mse_mean"]
    return math.sqrt(float(mse))


def variant_args(case, variant, seed, out_dir):
    name, metric = case[0], case[2]
    if variant == "paper":
        return []
    noise = (["--simmer.noise_sd", repr(noise_sd(case, archive_path(out_dir, name, "paper", seed)))]
             if metric == "r2" else [])
    if variant in study_mixing.MIXING:
        return study_mixing.variant_args(ROOT, case, variant, SHARED17 + noise)
    if variant in study_step.STEP:
        return study_step.variant_args(ROOT, case, variant, SHARED17 + noise)
    if variant in ISSUE17:
        setup = SETUP17[name]
        args = ["--run.trajectories", str(setup["trajectories"])] + SHARED17 + noise + setup.get("extra", [])
        if variant == "cold":
            return args + COLD
        if variant == "ladder":
            return args + LADDER
        if variant == "ladder_auto":
            return args + LADDER + LADDER_AUTO
        if variant == "ladder_auto_mnhl":
            return args + LADDER + LADDER_AUTO + MNHL
        if variant == "ladder_auto_es":
            return args + LADDER + LADDER_AUTO + MNHL + EARLY_STOPPED
        return args + ["--simmer.mode", "adam"] + setup.get("deep", [])
    args = list(POSTERIOR) + noise
    if variant == "langevin":
        args += ["--simmer.thermostat", "langevin", "--simmer.friction", "1"]
    return args


def applies(case, variant):
    """Langevin on the cheap cases only; Adam alone (deep) for the ab initio cases (a retrofit
    job's deep ensemble is its own Adam end points)."""
    if variant == "langevin" or variant in study_mixing.MIXING:
        return case[6]
    if variant in study_step.STEP:
        return study_step.applies(case)
    if variant == "deep":
        return "abinitio" in case[0]
    return True


def run_one(simmer, out_dir, case, variant, seed, extra=(), tag=None):
    name, ini, _, ranks, case_extra, _, _ = case
    path = archive_path(out_dir, name, tag or variant, seed)
    log = path[:-3] + ".log"
    if finished(path):
        return "reused"
    # The case's own settings give way to the variant's (issue 17's N trajectories, its storage).
    extra_args = variant_args(case, variant, seed, out_dir)
    case_extra = [x for key, value in zip(case_extra[0::2], case_extra[1::2]) if key not in extra_args
                  for x in (key, value)]
    cmd = (["mpirun", "--oversubscribe", "-n", str(ranks)] + UNBOUND * (ranks == 1)
           + [simmer, "--config", os.path.join(ROOT, ini),
              "--run.seed", str(seed), "--data.split_seed", str(seed), "--output", path, "--overwrite",
              "--run.progress", "lines", "--run.progress_seconds", "60"] + case_extra
           + extra_args + list(extra))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    t0 = time.time()
    with open(log, "w") as f:
        f.write("# " + " ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        f.write(f"# exit {rc} after {time.time() - t0:.1f} s\n")
    return f"exit {rc} in {time.time() - t0:.0f} s"


def run_seed(simmer, out_dir, case, seed, variants, chaos):
    """One (case, seed): the paper run first (the posterior variant's noise rule reads it)."""
    done = []
    for variant in variants:
        if not applies(case, variant):
            continue
        needs_paper = case[2] == "r2"  # the noise sd rule of the regression cases reads the paper run
        if (variant != "paper" and needs_paper and "paper" not in variants
                and not finished(archive_path(out_dir, case[0], "paper", seed))):
            run_one(simmer, out_dir, case, "paper", seed)
        done.append(f"{variant} {run_one(simmer, out_dir, case, variant, seed)}")
    if chaos and case[6]:
        for sign, tag in ((1, "jitter+"), (-1, "jitter-")):
            done.append(f"{tag} " + run_one(simmer, out_dir, case, "paper", seed,
                                            ["--simmer.start_jitter", repr(sign * JITTER)], tag=f"paper{tag}"))
    return case[0], seed, "; ".join(done)


def collect(out_dir, seeds, cases, variants):
    rows, summary = [], []
    for case in cases:
        name, _, metric, ranks, _, note, cheap = case
        for variant in variants:
            if (not applies(case, variant) or variant in ISSUE17 or variant in study_mixing.MIXING
                    or variant in study_step.STEP):
                continue
            base, ens, base_nll, ens_nll, walls, statuses = [], [], [], [], [], set()
            verdicts = {v: 0 for v in VERDICTS}
            for seed in seeds:
                path = archive_path(out_dir, name, variant, seed)
                if not os.path.exists(path):
                    continue
                try:
                    m = attrs(path)
                except (OSError, KeyError) as e:
                    rows.append([name, variant, seed, metric, "", "", "", "", "", f"unreadable: {e}"])
                    continue
                b = float(m.get(f"baseline_test_{metric}_mean", math.nan))
                e_ = float(m.get(f"ensemble_test_{metric}", math.nan))
                bn = float(m.get("baseline_test_nll_mean", math.nan))
                en = float(m.get("ensemble_test_nll", math.nan))
                base.append(b)
                ens.append(e_)
                base_nll.append(bn)
                ens_nll.append(en)
                walls.append(float(m.get("@wall_seconds", math.nan)))
                statuses.add(str(m.get("@status", "?")))
                for v in VERDICTS:
                    verdicts[v] += int(m.get(f"trajectories_{v}", 0))
                rows.append([name, variant, seed, metric, b, e_, bn, en,
                             " ".join(f"{v}={int(m.get(f'trajectories_{v}', 0))}" for v in VERDICTS
                                      if int(m.get(f"trajectories_{v}", 0))),
                             m.get("@status", "?")])
            if not base:
                continue
            w, t, l = compare(ens, base)
            nw, nt, nl = compare(ens_nll, base_nll, higher_better=False)
            bm, bsd = mean_sd(base)
            em, esd = mean_sd(ens)
            summary.append(dict(case=name, variant=variant, metric=metric, n=len(base), wins=w, ties=t, losses=l,
                                p=sign_test(w, l), nll_wins=nw, nll_ties=nt, nll_losses=nl,
                                base_mean=bm, base_sd=bsd, base_median=median(base),
                                ens_mean=em, ens_sd=esd, ens_median=median(ens),
                                ens_finite=sum(math.isfinite(x) for x in ens),
                                nll_base_median=median(base_nll), nll_ens_median=median(ens_nll),
                                verdicts=verdicts, wall=mean_sd(walls)[0], ranks=ranks, note=note or "",
                                statuses=sorted(statuses)))
    with open(os.path.join(out_dir, "runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "variant", "seed", "metric", "baseline_test", "ensemble_test", "baseline_test_nll",
                    "ensemble_test_nll", "verdicts", "status"])
        w.writerows(rows)
    table = os.path.join(out_dir, "summary.csv")
    with open(table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "metric", "adam_mean", "adam_sd", "ensemble_mean", "ensemble_sd", "n_seeds", "beat"])
        for s in summary:
            w.writerow([f"{s['case']} ({s['variant']})", s["metric"], s["base_mean"], s["base_sd"], s["ens_mean"],
                        s["ens_sd"], s["n"], s["wins"]])
    return summary, table


def chaos_report(out_dir, seeds, cases):
    """Per cheap case: the test metric of the paper run and its two jittered reruns, per seed."""
    out = []
    for case in cases:
        name, _, metric, _, _, _, cheap = case
        if not cheap:
            continue
        spreads = []
        for seed in seeds:
            values = []
            for tag in ("paper", "paperjitter+", "paperjitter-"):
                path = archive_path(out_dir, name, tag, seed)
                values.append(float(attrs(path).get(f"ensemble_test_{metric}", math.nan)) if os.path.exists(path)
                              else math.nan)
            if all(math.isfinite(v) for v in values):
                spreads.append((max(values) - min(values), seed, values))
        if spreads:
            out.append((name, metric, sorted(spreads, reverse=True)))
    return out


def drift_figures(cases, docs, seed=1):
    """docs/drift/<case>.png from seed 1's paper and posterior archives (when both exist)."""
    out = []
    for case in cases:
        runs = [archive_path(OUT, case[0], v, seed) for v in ("paper", "posterior")]
        runs = [r for r in runs if os.path.exists(r)]
        if not runs:
            continue
        prefix = os.path.join(docs, "drift", case[0])
        rc = subprocess.call(["/usr/bin/python3", os.path.join(ROOT, "analysis", "drift.py")] + runs
                             + ["-o", prefix, "--dpi", "80", "--palette"], stdout=subprocess.DEVNULL)
        if rc == 0:
            if os.path.exists(prefix + ".pdf"):
                os.remove(prefix + ".pdf")  # the PNG is what REPRODUCTION.md shows
            out.append((case[0], prefix + ".png"))
    return out


def write_markdown(summary, chaos, seeds, table, cases, summary17=(), mixing=()):
    docs = os.path.join(ROOT, "docs")
    os.makedirs(docs, exist_ok=True)
    bars = os.path.join(docs, "reproduction_bars")
    chart = subprocess.call(["/usr/bin/python3", os.path.join(ROOT, "analysis", "bars.py"), "--table", table,
                             "-o", bars]) == 0
    lines = [
        "# Multi-seed study: the paper's cases as specified and sampling the posterior",
        "",
        f"Made by `jobs/study/study.py` on {time.strftime('%Y-%m-%d')} on this project's development machine "
        f"(2 cores, Debian 12). Seeds {seeds[0]}..{seeds[-1]}; seed k sets run.seed and data.split_seed. "
        "Metric: test accuracy (classification) or test R² (regression). Baseline: Adam's end point "
        "(retrofit) or each trajectory's first member (ab initio), averaged over trajectories; "
        "ensemble: majority vote or mean of all members. W/T/L: seeds where the ensemble's test "
        "metric is higher / equal / lower than the baseline's (no ensemble at all counts as a loss); "
        "p: one-sided sign test of \"the ensemble is better\" (ties dropped). NLL W/T/L: the same "
        "for the test negative log-likelihood (lower is better; regression: Gaussian NLL of mean ± sd, "
        "sd² = members' variance + training MSE; the baseline's sd² = its training MSE; with a validation "
        "split, since 2026-12-01, both from the validation residuals instead). Verdicts: "
        "trajectories judged stationary / not mixed / drifting / diverged / without members "
        "(docs/STATIONARITY.md), summed over seeds.",
        "",
        "Variants, fixed before the runs for all cases alike: **paper** = the job as specified; "
        "**posterior** = constant T = T_Bayes from the first step, Gaussian prior N(0, 1/fan_in) on "
        "weights and N(0, 1) on biases, thermal start velocities, the paper's Nosé–Hoover chain, "
        "steps, h, window and members (regression noise sd s: s² = the paper run's training MSE of "
        "Adam, or of its ensemble for ab initio); **langevin** = posterior with the Langevin "
        "thermostat (friction 1), on the cheap cases only. Archives: runs/study/ (not in the "
        "repository); per-run numbers: runs/study/runs.csv.",
        "",
        "| case | variant | baseline (mean ± sd) | ensemble (mean ± sd) | median baseline / ensemble | W/T/L | p | NLL W/T/L | median NLL baseline / ensemble | verdicts (st/nm/dr/dv/none) | wall per seed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        v = s["verdicts"]
        ens = fmt(s["ens_mean"], s["ens_sd"])
        if s["ens_finite"] < s["n"]:
            ens += f" ({s['ens_finite']} of {s['n']} seeds have an ensemble)"
        lines.append(
            f"| {s['case']} | {s['variant']} | {fmt(s['base_mean'], s['base_sd'])} | {ens} | "
            f"{fmt(s['base_median'])} / {fmt(s['ens_median'])} | {s['wins']}/{s['ties']}/{s['losses']} | "
            f"{s['p']:.3g} | {s['nll_wins']}/{s['nll_ties']}/{s['nll_losses']} | "
            f"{fmt(s['nll_base_median'], digits=3)} / {fmt(s['nll_ens_median'], digits=3)} | "
            f"{'/'.join(str(v[k]) for k in VERDICTS)} | "
            + (f"{s['wall']:.1f} s on {s['ranks']} rank(s)" if math.isfinite(s["wall"]) else "n/a") + " |")
    lines += markdown17(list(summary17))
    lines += list(mixing)
    lines += ["", "## Chaos: the same run with the start velocity changed by a relative 1e-9", "",
              "Paper variant, cheap cases: the ensemble's test metric of the run and of two reruns with "
              "simmer.start_jitter = ±1e-9 (v_i (1 ± 1e-9 ξ_i)). Largest spread first.", "",
              "| case | seeds | median spread | largest spread (seed: run, +1e-9, −1e-9) |", "|---|---|---|---|"]
    for name, metric, spreads in chaos:
        top = spreads[0]
        lines.append(f"| {name} | {len(spreads)} | {median([s[0] for s in spreads]):.4g} | {top[0]:.4g} "
                     f"(seed {top[1]}: {', '.join(f'{x:.4f}' for x in top[2])}) |")
    lines += ["", "## Shortened cases and deviations", ""]
    seen = set()
    for case in cases:
        if case[5] and case[0] not in seen:
            seen.add(case[0])
            lines.append(f"- **{case[0]}**: {case[5]}.")
    lines += ["- all other cases ran at the paper's lengths and sizes.", "", "## Run status", ""]
    for s in summary:
        lines.append(f"- {s['case']} ({s['variant']}): {', '.join(s['statuses']) or 'no archives'}")
    if chart:
        lines += ["", "## Bar chart", "", "![baseline vs ensemble, both variants](reproduction_bars.png)"]
    drift = drift_figures(cases, docs)
    if drift:
        lines += ["", "## Drift figures (seed 1: the paper's run above the posterior variant)", "",
                  "Left: displacement from the simmering start and parameter rms, per parameter, against "
                  "the step (T shaded, the window marked); right: the ensemble's test metric per block of "
                  "the window against the baseline; titles: the verdicts (analysis/drift.py).", ""]
        lines += [f"![{name}](drift/{os.path.basename(path)})" for name, path in drift]
    lines += ["", "## What the numbers say", "",
              "<!-- findings: text below this line is kept when the study regenerates this file -->"]
    path = os.path.join(docs, "REPRODUCTION.md")
    old = open(path).read() if os.path.exists(path) else ""
    marker = lines[-1]
    if marker in old:
        lines.append(old.split(marker, 1)[1].strip("\n"))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path}" + (f" and {bars}.png" if chart else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=8, help="seeds 1..N (default 8)")
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    ap.add_argument("--cases", default="", help="comma-separated subset of: " + ",".join(c[0] for c in CASES)
                    + " (default: every case but " + ",".join(sorted(OPT_IN)) + ": run only when named)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of: " + ",".join(VARIANTS))
    ap.add_argument("--no-chaos", action="store_true", help="skip the jittered reruns")
    ap.add_argument("--simmer", default=os.path.join(ROOT, "build/src/simmer_mpi"))
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/study"))
    ap.add_argument("--report-only", action="store_true", help="only collect and write the report")
    a = ap.parse_args()
    seeds = list(range(1, a.seeds + 1))
    cases = [c for c in CASES if c[0] in a.cases.split(",")] if a.cases else [c for c in CASES if c[0] not in OPT_IN]
    variants = [v for v in VARIANTS if v in a.variants.split(",")]
    if a.cases and len(cases) != len(a.cases.split(",")):
        sys.exit(f"study: unknown case in --cases {a.cases}")
    os.makedirs(a.out, exist_ok=True)
    global OUT
    OUT = a.out
    if not a.report_only:
        if not os.access(a.simmer, os.X_OK):
            sys.exit(f"study: {a.simmer} is not built (cmake/build.sh)")
        todo = [(c, s) for c in cases for s in seeds]  # cheapest cases first (CASES order)
        t0 = time.time()
        with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            work = pool.map(lambda cs: run_seed(a.simmer, a.out, cs[0], cs[1], variants, not a.no_chaos), todo)
            for i, (name, seed, what) in enumerate(work):
                print(f"[{time.time() - t0:7.0f}s] {i + 1}/{len(todo)} {name} seed {seed}: {what}", flush=True)
    summary17 = collect17(a.out, CASES)  # every case's finished runs, whichever this call ran
    mixing = study_mixing.markdown(
        study_mixing.collect(a.out, CASES), fmt)
    step = study_step.markdown(
        study_step.collect(a.out, CASES), fmt)
    if all(v in ISSUE17 or v in study_mixing.MIXING or v in study_step.STEP for v in variants):
        if any(v in ISSUE17 for v in variants):
            sections.update_section(ROOT, markdown17(summary17), MARK17, "issue 17's variants")
        if any(v in study_mixing.MIXING for v in variants):
            sections.update_section(ROOT, mixing, study_mixing.MARK, "the mixing variants")
        if any(v in study_step.STEP for v in variants):
            sections.update_section(ROOT, step, study_step.MARK, "the step variants")
        return
    summary, table = collect(a.out, seeds, cases, variants)
    write_markdown(summary, chaos_report(a.out, seeds, cases), seeds, table, cases, summary17, mixing)


if __name__ == "__main__":
    main()
