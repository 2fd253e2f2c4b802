#!/usr/bin/python3
"""The multi-seed reproduction study: every case of SIMMERING.md §7 over several seeds.

Seed k sets both run.seed (initialisation, sampling) and data.split_seed (the train/test split,
the sine noise, the synthetic HIGGS data). Each (case, seed) is one simmer_mpi run writing
runs/study/<case>-seed<k>.h5; finished archives are reused, so an interrupted study resumes
where it stopped. Then it collects /metrics from every archive and writes

  runs/study/summary.csv     one row per case (the table below, machine-readable)
  runs/study/runs.csv        one row per (case, seed)
  docs/REPRODUCTION.md       per case: Adam and ensemble test metric, mean ± sd over seeds, the
                             seeds where simmering beat Adam, wall time; what was shortened
  docs/reproduction_bars.png the bar chart (analysis/bars.py --table), when matplotlib exists

usage: jobs/study/study.py [--seeds 8] [--jobs 2] [--cases sine,iris_retrofit,...]
                           [--simmer build/src/simmer_mpi] [--report-only]
       jobs/study/study.py --slurm    print the sbatch commands instead (one array per case)

Lengths: the paper's, except where the CASES table says `shortened` (this 2-core machine cannot
run LeNet-5 on 10000 images or the 800k-parameter HIGGS network for 8 seeds in reasonable time;
the shortened settings and the reason are written into REPRODUCTION.md).
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name, job file, metric, ranks per run, extra arguments, note on what was shortened.
CASES = [
    ("sine", "jobs/sine_retrofit.ini", "r2", 1, [], None),
    ("autompg_s", "jobs/autompg_s_retrofit.ini", "r2", 1, ["--simmer.stability_check", "warn"],
     "run with simmer.stability_check = warn: as specified, h = 0.001 exceeds the leapfrog limit "
     "at the Adam end point and the run would be refused (SIMMERING.md §9)"),
    ("autompg_m", "jobs/autompg_m_retrofit.ini", "r2", 1, [], None),
    ("iris_retrofit", "jobs/iris_retrofit.ini", "accuracy", 1, [], None),
    ("iris_abinitio", "jobs/iris_abinitio.ini", "accuracy", 2,
     ["--run.trajectories", "12"],
     "12 trajectories per seed instead of 36 (full length: 25000 steps, 2000 members each)"),
    ("autompg_abinitio", "jobs/autompg_abinitio.ini", "r2", 1, [], None),
    ("mnist", "jobs/mnist_retrofit.ini", "accuracy", 1,
     ["--data.train", "500", "--data.test", "500", "--adam.epochs", "100",
      "--simmer.steps", "800", "--ensemble.window", "400", "--ensemble.store_every", "20",
      "--run.trajectories", "1", "--run.gather_interval", "200"],
     "Fashion-MNIST (MNIST cannot be downloaded here); 500 train / 500 test images instead of "
     "10000 / 1000, Adam 100 epochs instead of 300, 800 simmering steps instead of 6000 (the "
     "ramp reaches T = 0.001 at step 200 as specified), members: every step of the last 400"),
    ("higgs", "jobs/higgs_retrofit.ini", "accuracy", 1,
     ["--data.rows", "0", "--data.train", "1000", "--data.test", "500", "--adam.epochs", "150",
      "--simmer.steps", "900", "--ensemble.window", "400", "--ensemble.store_every", "50",
      "--run.trajectories", "1", "--run.gather_interval", "300"],
     "synthetic HIGGS-shaped data (the UCI file cannot be downloaded here); 1000 train / 500 "
     "test instead of 10000 / 1000, Adam 150 epochs instead of 1000, 900 simmering steps instead "
     "of 15000 (the ramp reaches T = 1e-4 at step 500 as specified), members: every step of the "
     "last 400"),
]


def archive_path(out_dir, case, seed):
    return os.path.join(out_dir, f"{case}-seed{seed}.h5")


def run_one(simmer, out_dir, case, seed):
    name, ini, _, ranks, extra, _ = case
    path = archive_path(out_dir, name, seed)
    log = path[:-3] + ".log"
    if os.path.exists(path) and os.path.exists(log) and "wall " in open(log).read():
        return name, seed, "reused"
    cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), simmer, "--config", os.path.join(ROOT, ini),
           "--run.seed", str(seed), "--data.split_seed", str(seed), "--output", path, "--overwrite",
           "--run.progress", "lines", "--run.progress_seconds", "60"] + extra
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    t0 = time.time()
    with open(log, "w") as f:
        f.write("# " + " ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        f.write(f"# exit {rc} after {time.time() - t0:.1f} s\n")
    return name, seed, f"exit {rc} in {time.time() - t0:.0f} s"


def read_metrics(path, metric):
    import h5py
    with h5py.File(path, "r") as f:
        m = f["metrics"].attrs
        status = f.attrs.get("status", b"")
        status = status.decode() if isinstance(status, bytes) else str(status)
        wall = float(f.attrs.get("wall_seconds", float("nan")))
        adam = float(m.get(f"baseline_test_{metric}_mean", float("nan")))
        ens = float(m.get(f"ensemble_test_{metric}", float("nan")))
        return adam, ens, wall, status


def mean_sd(values):
    v = [x for x in values if math.isfinite(x)]
    if not v:
        return float("nan"), float("nan"), 0
    mu = sum(v) / len(v)
    sd = math.sqrt(sum((x - mu) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return mu, sd, len(v)


def fmt(mu, sd):
    return "n/a" if not math.isfinite(mu) else f"{mu:.4f} ± {sd:.4f}"


def report(out_dir, seeds, cases):
    rows, summary = [], []
    for name, ini, metric, ranks, extra, note in cases:
        adams, enss, walls, beat, done, statuses = [], [], [], 0, 0, []
        for seed in seeds:
            path = archive_path(out_dir, name, seed)
            if not os.path.exists(path):
                rows.append([name, seed, metric, "", "", "", "missing"])
                continue
            try:
                adam, ens, wall, status = read_metrics(path, metric)
            except (OSError, KeyError) as e:
                rows.append([name, seed, metric, "", "", "", f"unreadable: {e}"])
                continue
            done += 1
            adams.append(adam)
            enss.append(ens)
            walls.append(wall)
            statuses.append(status)
            if math.isfinite(adam) and math.isfinite(ens) and ens > adam:
                beat += 1
            rows.append([name, seed, metric, adam, ens, wall, status])
        am, asd, _ = mean_sd(adams)
        em, esd, n_ok = mean_sd(enss)
        finite = sorted(x for x in enss if math.isfinite(x))
        emed = (finite[(len(finite) - 1) // 2] + finite[len(finite) // 2]) / 2 if finite else float("nan")
        finite = sorted(x for x in adams if math.isfinite(x))
        amed = (finite[(len(finite) - 1) // 2] + finite[len(finite) // 2]) / 2 if finite else float("nan")
        summary.append(dict(case=name, metric=metric, adam_mean=am, adam_sd=asd, ensemble_mean=em,
                            ensemble_sd=esd, n_seeds=done, beat=beat, adam_median=amed, n_finite=n_ok,
                            ensemble_median=emed,
                            wall_mean=mean_sd(walls)[0], note=note or "", ranks=ranks,
                            statuses=sorted(set(statuses))))
    with open(os.path.join(out_dir, "runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "seed", "metric", "adam_test", "ensemble_test", "wall_seconds", "status"])
        w.writerows(rows)
    table = os.path.join(out_dir, "summary.csv")
    with open(table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "metric", "adam_mean", "adam_sd", "ensemble_mean", "ensemble_sd",
                    "n_seeds", "beat"])
        for s in summary:
            w.writerow([s["case"], s["metric"], s["adam_mean"], s["adam_sd"], s["ensemble_mean"],
                        s["ensemble_sd"], s["n_seeds"], s["beat"]])
    return summary, table


def write_markdown(summary, seeds, table, out_dir):
    docs = os.path.join(ROOT, "docs")
    os.makedirs(docs, exist_ok=True)
    bars = os.path.join(docs, "reproduction_bars")
    chart = False
    script = os.path.join(ROOT, "analysis", "bars.py")
    if os.path.exists(script):
        chart = subprocess.call(["/usr/bin/python3", script, "--table", table, "-o", bars]) == 0
    lines = [
        "# Reproduction study: every case of SIMMERING.md §7 over several seeds",
        "",
        f"Made by `jobs/study/study.py` on {time.strftime('%Y-%m-%d')} on this project's development "
        "machine (2 cores, Debian 12). Seed k sets run.seed and data.split_seed (split and "
        f"initialisation). Seeds: {', '.join(map(str, seeds))}. Metric: test accuracy "
        "(classification) or test R² (regression); Adam = the retrofit's starting network (ab "
        "initio: the first member of each trajectory, averaged over trajectories); ensemble = "
        "the majority vote or mean of all members. \"beat\" counts seeds where the ensemble's "
        "test metric is strictly higher than Adam's. Archives: runs/study/ (not in the "
        "repository); per-seed numbers: runs/study/runs.csv.",
        "",
        "| case | metric | Adam (mean ± sd) | ensemble (mean ± sd) | median Adam / ensemble | seeds where simmering beat Adam | wall time per seed |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        wall = s["wall_mean"]
        lines.append(f"| {s['case']} | test {s['metric']} | {fmt(s['adam_mean'], s['adam_sd'])} | "
                     f"{fmt(s['ensemble_mean'], s['ensemble_sd'])}"
                     + (f" (over {s['n_finite']} seeds; the other {s['n_seeds'] - s['n_finite']} have no "
                        "finite ensemble metric)" if s['n_finite'] < s['n_seeds'] else "") + " | "
                     f"{s['adam_median']:.4f} / {s['ensemble_median']:.4f} | {s['beat']} of {s['n_seeds']} | "
                     + (f"{wall:.1f} s on {s['ranks']} rank(s)" if math.isfinite(wall) else "n/a") + " |")
    lines += ["", "## Shortened cases and deviations", ""]
    for s in summary:
        if s["note"]:
            lines.append(f"- **{s['case']}**: {s['note']}.")
    lines += ["- all other cases ran at the paper's lengths and sizes.", "",
              "## Run status", ""]
    for s in summary:
        lines.append(f"- {s['case']}: {', '.join(s['statuses']) or 'no archives'}")
    if chart:
        lines += ["", "## Bar chart", "", "![Adam vs simmering](reproduction_bars.png)"]
    lines += ["", "## What the numbers say", "", "<!-- findings: text below this line is kept when "
              "the study regenerates this file -->"]
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
    ap.add_argument("--cases", default="", help="comma-separated subset of: " +
                    ",".join(c[0] for c in CASES))
    ap.add_argument("--simmer", default=os.path.join(ROOT, "build/src/simmer_mpi"))
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/study"))
    ap.add_argument("--report-only", action="store_true", help="only collect and write the report")
    ap.add_argument("--slurm", action="store_true", help="print sbatch array commands instead")
    a = ap.parse_args()
    seeds = list(range(1, a.seeds + 1))
    cases = [c for c in CASES if not a.cases or c[0] in a.cases.split(",")]
    if a.cases and len(cases) != len(a.cases.split(",")):
        sys.exit(f"study: unknown case in --cases {a.cases}")
    os.makedirs(a.out, exist_ok=True)
    if a.slurm:
        for name, ini, _, ranks, extra, _ in cases:
            print(f"SIMMER_CONFIG={ini} SIMMER_OUTPUT_DIR={a.out} sbatch --array=0-{len(seeds) - 1} "
                  f"--ntasks={ranks} --job-name=study-{name} jobs/slurm/simmer_array.sbatch "
                  + " ".join(extra))
        print("# array task k runs seed k + 1; then rename each archive to <case>-seed<k+1>.h5 in "
              f"{a.out} and run: jobs/study/study.py --report-only")
        return
    if not a.report_only:
        if not os.access(a.simmer, os.X_OK):
            sys.exit(f"study: {a.simmer} is not built (cmake/build.sh)")
        # Cheapest first, so a short session still gets the small cases done.
        todo = [(c, s) for c in cases for s in seeds]
        t0 = time.time()
        with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            for i, (name, seed, what) in enumerate(pool.map(lambda cs: run_one(a.simmer, a.out, *cs), todo)):
                print(f"[{time.time() - t0:7.0f}s] {i + 1}/{len(todo)} {name} seed {seed}: {what}", flush=True)
    summary, table = report(a.out, seeds, cases)
    write_markdown(summary, seeds, table, a.out)


if __name__ == "__main__":
    main()
