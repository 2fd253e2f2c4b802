#!/usr/bin/python3
"""Mixing bench (issue 21): the Iris (or sine) retrofit posterior (T = T_Bayes, the paper's steps,
h and window; the study's posterior variant) with unit masses, simmer.parameter_masses = adam,
simmer.parameter_masses = adapt (warm-up: every step before the window) and replica exchange
(`exchange`: parallel rungs at 1, 2, 4 and 8 x T_Bayes with a round every 100 steps and four
times the trajectories, so that as many sample T_Bayes; its numbers are the T_Bayes rung's, its
wall time the whole run's), over several seeds. Per run: the stationarity verdicts of its trajectories (/metrics), the rank-normalised
R-hat and bulk ESS of the training-loss series of its stored draws (every 10th member is stored,
so the series is thinned and its ESS counts stored draws; the numbers `simmer_analyze summary`
prints, rank normalisation as Vehtari et al. 2021), the run's wall time and the bulk ESS per
second; then the ratio of the variants. Every number is measured on this machine when the script
runs; nothing is assumed.

Also per run (issue 29): the bulk ESS of every member's training loss (/diagnostics, not only the
stored draws) per second, the steps the trajectories ran with and their T_conf/T over the window.

usage: jobs/study/mixing.py [--case iris|sine] [--seeds 3] [--time-step H|auto] [--step-fraction F]
                            [--precision float64|float32] [--trajectories 8] [--ranks 2] [--out runs/mixing]
                            [--variants unit,adam_masses,adapt_masses,exchange]
                            [--simmer build/src/simmer_mpi] [--analyze build/src/simmer_analyze]
"""
import argparse
import os
import re
import subprocess
import sys

import h5py

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POSTERIOR = ["--simmer.temperature_unit", "posterior", "--simmer.T_initial", "1", "--simmer.T_target", "1",
             "--simmer.dT", "0", "--simmer.prior", "gaussian", "--simmer.prior_sigma", "1",
             "--simmer.prior_scaling", "fan_in", "--simmer.start_velocity", "thermal"]
# Per case: its job, extra keys, and the warm-up of `adapt` (every step before the paper's window).
CASES = {
    "iris": dict(ini="jobs/iris_retrofit.ini", extra=["--data.path", os.path.join(ROOT, "data/iris.csv")],
                 warmup=3000),
    # The sine's noise sd is known (the generator's data.sine_noise = 0.1): T_Bayes = 2 s^2 (SSE).
    "sine": dict(ini="jobs/sine_retrofit.ini", extra=["--simmer.noise_sd", "0.1"], warmup=7000),
}
VARIANTS = ["unit", "adam_masses", "adapt_masses", "exchange"]
# Replica exchange: the rungs (x T_Bayes, the first the target) and the steps between rounds.
EXCHANGE_LADDER = "1,2,4,8"
EXCHANGE_EVERY = 100


def variant_args(case, variant):
    if variant == "adam_masses":
        return ["--simmer.parameter_masses", "adam"]
    if variant == "adapt_masses":
        return ["--simmer.parameter_masses", "adapt", "--simmer.mass_warmup", str(CASES[case]["warmup"])]
    if variant == "exchange":
        return ["--simmer.ladder", EXCHANGE_LADDER, "--simmer.ladder_mode", "parallel", "--simmer.exchange_every",
                str(EXCHANGE_EVERY), "--ensemble.select_by", "none"]
    return []


def trajectories(args, variant):
    """As many trajectories at T_Bayes in every variant: exchange runs one set per rung."""
    return args.trajectories * (len(EXCHANGE_LADDER.split(",")) if variant == "exchange" else 1)
VERDICTS = ["stationary", "not_mixed", "drifting", "diverged", "no_members"]
RANK_LINE = re.compile(r"rank-normalised R̂ ([^,\s]+), bulk ESS ([^,\s]+)")


def run(args, variant, seed):
    step = f"-h{args.time_step}" if args.time_step else ""
    step += f"-f{args.step_fraction}" if args.step_fraction else ""
    step += f"-{args.precision}" if args.precision else ""
    out = os.path.join(args.out, f"{args.case}_posterior{step}-{variant}-seed{seed}.h5")
    case = CASES[args.case]
    if not os.path.exists(out):
        cmd = ["mpirun", "--oversubscribe", "-n", str(args.ranks), args.simmer, "--config",
               os.path.join(ROOT, case["ini"]), *case["extra"], "--run.trajectories", str(trajectories(args, variant)), "--run.seed", str(seed), "--data.split_seed", str(seed),
               "--run.progress", "lines", "--run.progress_seconds", "60", "--ensemble.store_every", "10",
               "--output", out, *POSTERIOR,
               *variant_args(args.case, variant),
               *(["--simmer.time_step", args.time_step] if args.time_step else []),
               *(["--simmer.step_fraction", args.step_fraction] if args.step_fraction else []),
               *(["--run.precision", args.precision] if args.precision else [])]
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)}\nfailed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    text = subprocess.run([args.analyze, "summary", out], capture_output=True, text=True, check=True).stdout
    lines = text.splitlines()
    # The first series after the heading: all stored draws, or (exchange) the T_Bayes rung's.
    first = next(i for i, line in enumerate(lines) if line.startswith("loss (/sample_stats/loss)")) + 1
    m = RANK_LINE.search(lines[first + 1])
    if not m:
        sys.exit(f"{out}: no rank-normalised line in the summary:\n{text}")
    with h5py.File(out, "r") as f:
        metrics = f["metrics"].attrs
        verdicts = {v: int(metrics.get(f"trajectories_{v}", 0)) for v in VERDICTS}
        wall = float(f.attrs["wall_seconds"])
        diag = f["diagnostics"]
        member_bulk = float(diag.attrs.get("bulk_ess_train_loss", float("nan")))
        h = diag["time_step"][()] if "time_step" in diag else [float("nan")]
        conf = (diag["configurational_temperature"][()] / diag["temperature"][()]
                if "configurational_temperature" in diag else [float("nan")])
        acceptance = list(f["ladder/exchange_acceptance"][()]) if "ladder/exchange_acceptance" in f else []
        trips = int(f["ladder/round_trips"][()].sum()) if "ladder/round_trips" in f else 0
        # The ensemble's test score beside the deep ensemble's (the trajectories' Adam end points).
        scores = {}
        for who in ("ensemble", "deep_ensemble"):
            scores[f"{who}_accuracy"] = float(metrics.get(f"{who}_test_accuracy",
                                                          metrics.get(f"{who}_test_r2", float("nan"))))
            scores[f"{who}_nll"] = float(metrics.get(f"{who}_test_nll", float("nan")))
    return dict(variant=variant, seed=seed, rhat=float(m.group(1)), bulk=float(m.group(2)), wall=wall,
                per_second=float(m.group(2)) / wall, verdicts=verdicts, acceptance=acceptance, trips=trips,
                member_bulk=member_bulk, member_per_second=member_bulk / wall, h_lo=float(min(h)), h_hi=float(max(h)),
                conf_lo=float(min(conf)), conf_hi=float(max(conf)),
                **scores)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=sorted(CASES), default="iris")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--time-step", default="", help="simmer.time_step instead of the job's (the paper's), or auto")
    ap.add_argument("--step-fraction", default="", help="simmer.step_fraction (with --time-step auto)")
    ap.add_argument("--precision", default="", help="run.precision (default: the job's)")
    ap.add_argument("--trajectories", type=int, default=8)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/mixing"))
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from " + ", ".join(VARIANTS))
    ap.add_argument("--simmer", default=os.path.join(ROOT, "build/src/simmer_mpi"))
    ap.add_argument("--analyze", default=os.path.join(ROOT, "build/src/simmer_analyze"))
    args = ap.parse_args()
    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"--variants: unknown variant '{v}' (choose from {', '.join(VARIANTS)})")
    if "unit" not in variants:
        variants.insert(0, "unit")  # the baseline every ratio is taken against
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for seed in range(1, args.seeds + 1):
        for variant in variants:
            r = run(args, variant, seed)
            rows.append(r)
            print(f"{variant:12s} seed {seed}: rank R-hat {r['rhat']:.3f}, bulk ESS {r['bulk']:.0f} of the loss, "
                  f"{r['wall']:.1f} s, {r['per_second']:.3g} ESS/s; every member's loss: bulk ESS "
                  f"{r['member_bulk']:.0f}, {r['member_per_second']:.3g} ESS/s; h {r['h_lo']:.4g}-{r['h_hi']:.4g}, "
                  f"T_conf/T {r['conf_lo']:.3f}-{r['conf_hi']:.3f}; verdicts "
                  + " ".join(f"{k}={v}" for k, v in r["verdicts"].items() if v)
                  + (f"; exchange acceptance {' '.join(f'{a:.2f}' for a in r['acceptance'])}, "
                     f"{r['trips']} round trips" if r["acceptance"] else "")
                  + f"; test accuracy (R² for regression) {r['ensemble_accuracy']:.4f}, NLL {r['ensemble_nll']:.4f} "
                  f"(deep ensemble {r['deep_ensemble_accuracy']:.4f}, {r['deep_ensemble_nll']:.4f})", flush=True)
    print("\nper variant (mean over seeds):")
    for variant in variants:
        sel = [r for r in rows if r["variant"] == variant]
        stationary = sum(r["verdicts"]["stationary"] for r in sel)
        total = sum(sum(r["verdicts"].values()) for r in sel)
        mean = lambda key: sum(r[key] for r in sel) / len(sel)  # noqa: E731
        print(f"  {variant:12s} every member's loss: ESS/s {mean('member_per_second'):.3g} (bulk ESS "
              f"{mean('member_bulk'):.0f}); T_conf/T {min(r['conf_lo'] for r in sel):.3f}-"
              f"{max(r['conf_hi'] for r in sel):.3f}")
        print(f"  {variant:12s} ESS/s {mean('per_second'):.3g}, bulk ESS {mean('bulk'):.0f}, rank R-hat "
              f"{mean('rhat'):.3f}, wall {mean('wall'):.1f} s, stationary {stationary}/{total}, "
              f"test accuracy {mean('ensemble_accuracy'):.4f}, NLL {mean('ensemble_nll'):.4f} (deep ensemble "
              f"{mean('deep_ensemble_accuracy'):.4f}, {mean('deep_ensemble_nll'):.4f})")
    base = [r["per_second"] for r in rows if r["variant"] == "unit"]
    for variant in variants:
        if variant == "unit":
            continue
        ratio = [r["per_second"] / b for r, b in zip([r for r in rows if r["variant"] == variant], base)]
        print(f"  {variant} / unit ESS/s per seed: " + ", ".join(f"{x:.2f}" for x in ratio))


if __name__ == "__main__":
    main()
