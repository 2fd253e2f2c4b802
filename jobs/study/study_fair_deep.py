#!/usr/bin/python3
"""A fair deep ensemble beside the ladder: for each ladder run of the study
(runs/study/<case>-ladder-seed<k>.h5, written by jobs/study/study.py), Adam alone with the same
data split, seeds, network and N trajectories, trained for the ladder run's whole budget in
gradient evaluations (Adam's epochs + rungs x steps, every one a full-batch gradient) and
early-stopped on the validation loss (adam.keep = best_validation, adam.patience = 1000).
Prints, per seed, the test metric (MSE for regression, accuracy for classification) and test NLL
of the ladder's chosen ensemble, of the study's deep ensemble (a retrofit's Adam end points; an
ab initio run has none: nan) and of the fair one, and the ladder's W/T/L against each with the
one-sided sign test's p (ties dropped). Two analyses beside it: the ceiling of choosing (the best
candidate on the test rows, from the archive's candidates) and the stacked candidates (as the run
reports them in /stacked, or for an archive older than that computed here as simmer computes
them: the candidates weighted by the weights that maximise the validation rows' likelihood of
one mixture of their predictives, per row N(mean, variance + noise variance) for regression and
the class probabilities for classification, found by EM as Bayesian stacking does).

usage: study_fair_deep.py [CASE ...]   (default: autompg_m autompg_s sine iris_retrofit)
environment: SIMMER_STUDY_DIR (the study's runs, default runs/study), SIMMER_STUDY_VARIANT (the
ladder variant to compare, default ladder; ladder_auto and ladder_auto_mnhl are issue 37's), and
SIMMER_MPI. A fair deep ensemble already on disk for a case and seed (runs/study_fair_deep) is
reused: it depends only on the budget, the split and the seeds, which the ladder variants share.
The NLL is comparable only when the ladder archive was written by a simmer with the same noise
rule as this one (regression: each candidate's noise variance from its mean's validation
residuals, issue 26); the script says when an archive is older (no `ensemble_noise_source`).
"""
import os
import re
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_common import UNBOUND, sign_test  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIMMER = os.environ.get("SIMMER_MPI", os.path.join(ROOT, "build", "src", "simmer_mpi"))
OUT = os.path.join(ROOT, "runs", "study_fair_deep")
STUDY = os.environ.get("SIMMER_STUDY_DIR", os.path.join(ROOT, "runs", "study"))
VARIANT = os.environ.get("SIMMER_STUDY_VARIANT", "ladder")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
PATIENCE = 1000


def config_text(f):
    c = f["config"][()]
    return c.decode() if isinstance(c, bytes) else bytes(c.ravel()).decode()


def fair_deep_ensemble(ini, budget, path, ranks=2):
    """The rule, once: the run's configuration `ini` without its ladder (written to path.ini), Adam
    alone for `budget` full-batch epochs, early-stopped on the validation loss, into path.h5.
    Returns the finished process (its returncode and output)."""
    with open(path + ".ini", "w") as fh:
        fh.write(re.sub(r"(?m)^ladder = .*$", "ladder =", ini))
    return subprocess.run(
        ["mpirun", "--oversubscribe", "-n", str(ranks)] + UNBOUND * (ranks == 1)
        + [SIMMER, "--config", path + ".ini", "--simmer.mode", "adam",
           "--adam.epochs", str(budget), "--adam.keep", "best_validation", "--adam.patience", str(PATIENCE),
           "--ensemble.select_by", "none", "--output", path + ".h5", "--overwrite"],
        cwd=ROOT, env=ENV, capture_output=True, text=True)


def log_densities(f, names, split):
    """Per candidate group in `names`, per row of `split`, the log of its predictive density of the
    truth: N(mean, variance + noise variance) for regression (output 0), the probability of the
    label for classification (the densities behind the archive's ensemble_<split>_nll)."""
    y = f[f"data/{split}/y"][()]
    out = []
    for g in names:
        if f"{g}/{split}/probability" in f:
            p = f[f"{g}/{split}/probability"][()]
            out.append(np.log(np.maximum(p[np.arange(len(p)), y.reshape(len(p), -1)[:, 0].astype(int)], 1e-300)))
            continue
        var = f[f"{g}/{split}/variance"][()][:, 0] + f[f"{g}/noise_variance"][()][0]
        out.append(-0.5 * np.log(2 * np.pi * var) - 0.5 * (y[:, 0] - f[f"{g}/{split}/mean"][()][:, 0]) ** 2 / var)
    return np.array(out)


def mixture(w, logp):
    """Per row: the log of sum_k w_k p_k (in logs, so that a row far outside one candidate's
    predictive does not underflow), and each candidate's share of it."""
    a = np.log(np.maximum(w, 1e-300))[:, None] + logp
    top = a.max(0)
    shares = np.exp(a - top)
    total = shares.sum(0)
    return top + np.log(total), shares / total


def stacking(f, names, splits=("validation", "test")):
    """The mixture of the candidates `names` (archive groups) whose weights maximise the validation
    rows' mean log-likelihood: plain EM from equal weights until the Frank-Wolfe gap
    max_k mean_i p_k/mixture_i - 1 (a bound on the distance from the maximum) is at most 1e-10,
    or 100 000 sweeps. Returns the weights and the mixture's NLL on each of `splits`. simmer
    reports the same weights in /selection (an accelerated EM, ensemble/selection.hpp), which
    tests/mpi/test_ladder.py checks with `log_densities` and `mixture`."""
    valid = log_densities(f, names, "validation")
    w = np.full(len(names), 1.0 / len(names))
    for _ in range(100000):
        log_mix = mixture(w, valid)[0]
        g = np.exp(valid - log_mix).mean(1)
        if g.max() - 1 <= 1e-10:
            break
        w = w * g / np.sum(w * g)
    return w, {split: float(-np.mean(mixture(w, log_densities(f, names, split))[0])) for split in splits}


def stacked_test(f, names, metric):
    """The stacked candidates' test NLL and test metric (`metric`: mse or accuracy): as the run
    reported them (/stacked; /selection's stacked_test_* for an archive of the day before, whose
    regression NLL was the mixture's density and accuracy its most probable class'), or for an
    archive written before simmer stacked, computed here as simmer computes them
    (ensemble::stacked_candidate): each candidate weighted by `stacking`'s weight, the mean and
    spread sum_k w_k (v_k + (m_k - m)^2), the noise variance from that mean's validation residuals,
    the Gaussian NLL; the weighted probabilities and the weighted vote's accuracy. Third, each test
    row's NLL (for `paired`; for the archive of the day before, its mixture's, computed)."""
    if "stacked" in f and "ensemble_test_nll" in f["stacked"].attrs:
        a = f["stacked"].attrs
        return float(a["ensemble_test_nll"]), float(a[f"ensemble_test_{metric}"]), -log_densities(f, ["stacked"], "test")[0]
    if "selection" in f and "stacked_test_nll" in f["selection"].attrs:
        # That day's NLL was the mixture's density: its rows are the same density's.
        a = f["selection"].attrs
        w, _ = stacking(f, names)
        rows = -mixture(w, log_densities(f, names, "test"))[0]
        nll = float(a["stacked_test_nll"])
        if not np.isclose(np.mean(rows), nll, rtol=1e-6):
            raise SystemExit(f"the stacked test NLL {nll} is not the mean of its rows' {np.mean(rows)}")
        return nll, float(a[f"stacked_test_{metric}"]), rows
    return computed_stack(f, names, metric)


def computed_stack(f, names, metric):
    """`stacked_test`'s three, computed from the candidates `names` as simmer computes them."""
    w, _ = stacking(f, names)
    y = f["data/test/y"][()]
    if metric == "accuracy":
        p = sum(wk * f[f"{g}/test/probability"][()] for wk, g in zip(w, names))
        labels = y.reshape(-1).astype(int)
        rows = -np.log(np.maximum(p[np.arange(len(labels)), labels], np.finfo(float).tiny))
        fraction = sum(wk * f[f"{g}/test/fraction"][()] for wk, g in zip(w, names))
        return float(np.mean(rows)), float(np.mean(np.argmax(fraction, axis=1) == labels)), rows

    def moments(split):
        means = [f[f"{g}/{split}/mean"][()][:, 0] for g in names]
        m = sum(wk * mk for wk, mk in zip(w, means))
        return m, sum(wk * (f[f"{g}/{split}/variance"][()][:, 0] + (mk - m) ** 2) for wk, g, mk in zip(w, names, means))

    noise = np.mean((f["data/validation/y"][()][:, 0] - moments("validation")[0]) ** 2)
    m, v = moments("test")
    var = v + noise
    rows = 0.5 * np.log(2 * np.pi * var) + 0.5 * (y[:, 0] - m) ** 2 / var
    return float(np.mean(rows)), float(np.mean((y[:, 0] - m) ** 2)), rows


def paired(ours, other):
    """How far the test rows tell two ensembles apart: the mean of the per-row differences
    ours - other (e.g. of NLL) and its standard error sd / sqrt(rows), paired because both scored
    the same rows. A seed is decided when the mean is beyond 2 standard errors."""
    d = np.asarray(ours) - np.asarray(other)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))


def tally(t, ours, other, lower_better):
    """W/T/L of `ours` against `other`."""
    better = ours < other if lower_better else ours > other
    t[0 if better else 1 if ours == other else 2] += 1


def median(values):
    v = sorted(x for x in values if x == x)
    return float("nan") if not v else (v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2]))


def main(cases):
    os.makedirs(OUT, exist_ok=True)
    rows = []  # one markdown row per case, printed at the end
    stacked_rows_md = []  # and one for the stacked candidates
    for case in cases:
        wins = [0, 0, 0]  # the metric against the fair deep ensemble: W/T/L
        wins_last = [0, 0, 0]
        nll_wins, nll_last, nll_oracle, nll_stacked = [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]
        stacked_wins = [0, 0, 0]  # the stacked candidates' test metric against the fair deep ensemble
        decided = [0, 0, 0]  # their test NLL: better / within 2 paired standard errors / worse (`paired`)
        gaps = []  # their test NLL minus the fair deep ensemble's, per seed
        seen = {k: [] for k in ("ladder", "fair", "ladder_nll", "fair_nll", "last", "last_nll", "chosen", "stacked")}
        for seed in range(1, 9):
            ladder = os.path.join(STUDY, f"{case}-{VARIANT}-seed{seed}.h5")
            if not os.path.exists(ladder):
                print(f"{case} seed {seed}: no {ladder} (run jobs/study/study.py first)")
                continue
            with h5py.File(ladder, "r") as f:
                ini = config_text(f)
                m = f["metrics"].attrs
                chosen = f["selection"].attrs.get("selected_name", b"?") if "selection" in f else b"?"
                chosen = (chosen.decode() if isinstance(chosen, bytes) else str(chosen)).replace("rung_", "r")
                metric = "mse" if "ensemble_test_mse" in m else "accuracy"
                ladder_mse = float(m[f"ensemble_test_{metric}"])
                ladder_nll = float(m["ensemble_test_nll"])
                # An ab initio run trains no Adam networks: no deep ensemble of its own.
                deep_mse = float(m.get(f"deep_ensemble_test_{metric}", float("nan")))
                deep_nll = float(m.get("deep_ensemble_test_nll", float("nan")))
                # The ceiling of choosing: the best test NLL among the candidates the run chose from
                # (its rungs and, in retrofit, its Adam end points), as if the test rows had chosen.
                rungs = [f"ladder/{k}" for k in sorted(f["ladder"]) if k.startswith("rung_")]
                deep = ["deep_ensemble"] if deep_nll == deep_nll else []
                oracle_nll = min([float(f[g].attrs["ensemble_test_nll"]) for g in rungs] + ([deep_nll] if deep else []))
                stacked_nll, stacked_metric, stacked_rows = stacked_test(f, rungs + deep, metric)
                if metric == "mse" and "ensemble_noise_source" not in m:
                    print(f"{case} seed {seed}: {ladder} predates the validation-residual noise: its NLL is not "
                          "comparable")
            # An ab initio job's Adam epochs are not used by its run: the budget is its rungs alone.
            epochs = int(re.search(r"(?m)^epochs = (\d+)", ini).group(1)) if "mode = abinitio" not in ini else 0
            steps = int(re.search(r"(?m)^steps = (\d+)", ini).group(1))
            rungs = len(re.search(r"(?m)^ladder = (.*)$", ini).group(1).split(","))
            budget = epochs + rungs * steps
            path = os.path.join(OUT, f"{case}-seed{seed}")
            budget_file = path + ".budget"
            reuse = (os.path.exists(path + ".h5") and os.path.exists(budget_file)
                     and open(budget_file).read().strip() == str(budget))
            run = None if reuse else fair_deep_ensemble(ini, budget, path)
            if run is not None and run.returncode == 0:
                with open(budget_file, "w") as fh:
                    fh.write(str(budget))
            if run is not None and run.returncode != 0:
                print(f"{case} seed {seed}: the fair deep ensemble failed:\n{run.stderr[-1000:]}")
                continue
            with h5py.File(path + ".h5", "r") as f:
                fair_mse = float(f["metrics"].attrs[f"deep_ensemble_test_{metric}"])
                fair_nll = float(f["metrics"].attrs["deep_ensemble_test_nll"])
                fair_rows = -log_densities(f, ["deep_ensemble"], "test")[0]
            lower = metric == "mse"
            for key, value in (("ladder", ladder_mse), ("fair", fair_mse), ("ladder_nll", ladder_nll),
                               ("fair_nll", fair_nll), ("last", deep_mse), ("last_nll", deep_nll), ("chosen", chosen)):
                seen[key].append(value)
            tally(wins, ladder_mse, fair_mse, lower)
            tally(nll_wins, ladder_nll, fair_nll, True)
            tally(nll_oracle, oracle_nll, fair_nll, True)
            tally(nll_stacked, stacked_nll, fair_nll, True)
            tally(stacked_wins, stacked_metric, fair_mse, lower)
            seen["stacked"].append(stacked_metric)
            gap = paired(stacked_rows, fair_rows)
            gaps.append(stacked_nll - fair_nll)
            decided[0 if gap[0] < -2 * gap[1] else 2 if gap[0] > 2 * gap[1] else 1] += 1
            if deep_mse == deep_mse:  # not nan
                tally(wins_last, ladder_mse, deep_mse, lower)
                tally(nll_last, ladder_nll, deep_nll, True)
            print(f"{case} seed {seed}: budget {budget} gradients; test {metric} ladder {ladder_mse:.4g}, deep "
                  f"ensemble (last epoch) {deep_mse:.4g}, fair deep ensemble (early-stopped) {fair_mse:.4g}; test NLL "
                  f"{ladder_nll:.4g}, {deep_nll:.4g}, {fair_nll:.4g}; the best candidate {oracle_nll:.4g}, the stacked "
                  f"candidates {stacked_nll:.4g} (test {metric} {stacked_metric:.4g}; test NLL to the fair deep "
                  f"ensemble's {gap[0]:+.4f} +- {gap[1]:.4f} a row)", flush=True)
        print(f"{case}: the ladder's test {metric} W/T/L against the fair deep ensemble {wins[0]}/{wins[1]}/{wins[2]} "
              f"(sign test p {sign_test(wins[0], wins[2]):.3g}), against the last-epoch deep ensemble "
              f"{wins_last[0]}/{wins_last[1]}/{wins_last[2]}; test NLL {nll_wins[0]}/{nll_wins[1]}/{nll_wins[2]} "
              f"(p {sign_test(nll_wins[0], nll_wins[2]):.3g}) and {nll_last[0]}/{nll_last[1]}/{nll_last[2]}; the best "
              f"candidate on the test rows (the ceiling of choosing) against the fair deep ensemble's test NLL "
              f"{nll_oracle[0]}/{nll_oracle[1]}/{nll_oracle[2]}; the stacked candidates' "
              f"{nll_stacked[0]}/{nll_stacked[1]}/{nll_stacked[2]} (test {metric} "
              f"{stacked_wins[0]}/{stacked_wins[1]}/{stacked_wins[2]}, median {median(seen['stacked']):.4g} against "
              f"{median(seen['fair']):.4g}); seeds where the test rows tell the stacked candidates' NLL from "
              f"the fair deep ensemble's (beyond 2 paired standard errors): better {decided[0]}, worse {decided[2]}, "
              f"undecided {decided[1]}", flush=True)
        rows.append(f"| {case} ({metric}) | {wins[0]}/{wins[1]}/{wins[2]} ({sign_test(wins[0], wins[2]):.3g}) | "
                    f"{nll_wins[0]}/{nll_wins[1]}/{nll_wins[2]} ({sign_test(nll_wins[0], nll_wins[2]):.3g}) | "
                    f"{median(seen['ladder']):.4g} / {median(seen['fair']):.4g} | "
                    f"{median(seen['ladder_nll']):.4g} / {median(seen['fair_nll']):.4g} | "
                    f"{wins_last[0]}/{wins_last[1]}/{wins_last[2]}, {nll_last[0]}/{nll_last[1]}/{nll_last[2]}; "
                    f"{median(seen['last']):.4g}, {median(seen['last_nll']):.4g} | "
                    f"{', '.join(seen['chosen'])} |")
        stacked_rows_md.append(
            f"| {case} ({metric}) | {nll_stacked[0]}/{nll_stacked[1]}/{nll_stacked[2]} "
            f"({sign_test(nll_stacked[0], nll_stacked[2]):.3g}) | {stacked_wins[0]}/{stacked_wins[1]}/{stacked_wins[2]}; "
            f"{median(seen['stacked']):.4g} / {median(seen['fair']):.4g} | {decided[0]} / {decided[2]} | "
            f"{np.mean(gaps):+.4f} +- {np.std(gaps, ddof=1) / np.sqrt(len(gaps)):.4f} |")
    print(f"\n{VARIANT} against the fair deep ensemble (W/T/L with the one-sided sign test's p, ties dropped):\n")
    print("| case | test metric W/T/L (p) | test NLL W/T/L (p) | median test metric: ladder / fair | "
          "median test NLL: ladder / fair | against the Adam end points: metric W/T/L, NLL W/T/L; their medians | "
          "chosen per seed |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nThe stacked candidates (the run's ensemble at ensemble.select_rule = stacking) against the fair deep "
          "ensemble; a seed is decided when the mean of its test rows' NLL differences is beyond 2 paired standard "
          "errors:\n")
    print("| case | test NLL W/T/L (p) | test metric W/T/L; median: stacked / fair | seeds decided: better / worse | "
          "test NLL minus the fair deep ensemble's: mean over the seeds +- its standard error |")
    print("|---|---|---|---|---|")
    print("\n".join(stacked_rows_md))


if __name__ == "__main__":
    main(sys.argv[1:] or ["autompg_m", "autompg_s", "sine", "iris_retrofit"])
