#!/usr/bin/python3
"""Drift figure of a simmer run (docs/STATIONARITY.md): is the ensemble a sample or a segment of a
line?

Left: the parameters' distance from the simmering start point (per parameter, |x − x₀|/√N) and
their rms |x|/√N against the
simmering step (from /trace; one line per chain, the temperature T(step) shaded behind, the
sampling window marked). Right: the ensemble's test metric per block of the window
(/diagnostics/block_test_metric, one line per chain, the pooled ensemble in bold) next to the
baseline's (Adam's end point, or the first member ab initio). The title gives the verdicts.
With several archives (e.g. the paper variant and a variant with a prior), one row each. For a
temperature ladder both panels show the rung /diagnostics judges (the run's ensemble's): its steps
(sequential rungs) or its trajectories (parallel rungs), never the other temperatures.
"""
import numpy as np

import simmer_archive as sa
from simmer_archive import plt


def load(ar):
    purpose = "the drift figure"
    hint = "archives written before the drift diagnostics lack it; rerun with this simmer"
    phase = np.atleast_2d(ar.require("trace/phase", purpose, hint).astype(float))
    step = np.atleast_2d(ar.require("trace/step", purpose, hint).astype(float))
    distance = np.atleast_2d(ar.require("trace/distance", purpose, hint).astype(float))
    rms = np.atleast_2d(ar.require("trace/param_rms", purpose, hint).astype(float))
    temperature = np.atleast_2d(ar.require("trace/temperature", purpose, hint).astype(float))
    blocks = np.atleast_2d(ar.require("diagnostics/block_test_metric", purpose, hint).astype(float))
    first = ar.require("diagnostics/block_first_step", purpose, hint).astype(float)
    pooled = ar.file["diagnostics/pooled_block_test_metric"][()] if ar.has("diagnostics/pooled_block_test_metric") \
        else None
    metric = "accuracy" if ar.task == "classification" else "r2"
    baseline = ar.attr(f"baseline_test_{metric}_mean", "metrics")
    verdicts = ar.strings("diagnostics/verdict")
    steps = int(ar.config.get("simmer.steps", "0") or 0)
    window = int(ar.config.get("ensemble.window", "0") or 0)
    n = ar.attr("parameters", "model") or distance.shape[1]
    distance = distance / np.sqrt(float(n))  # per parameter, on the rms's scale
    # A ladder: /diagnostics judges one rung (its attribute stage); both panels show that rung:
    # its steps (sequential rungs run one after the other) or its trajectories (parallel rungs).
    stage = ar.attr("stage", "diagnostics")
    ladder = [t for t in ar.config.get("simmer.ladder", "").split(",") if t.strip()]
    first_step = 0
    if len(ladder) > 1 and stage and str(stage).startswith("rung_"):
        k = int(str(stage)[5:])
        if ar.config.get("simmer.ladder_mode", "sequential") == "parallel":
            ids = ar.file["diagnostics/chain"][()].astype(int) if ar.has("diagnostics/chain") \
                else np.arange(k, distance.shape[0], len(ladder))
            phase, step, distance, rms, temperature = (a[ids] for a in (phase, step, distance, rms, temperature))
        else:
            first_step = k * steps
            inside = (step[0] >= first_step) & (step[0] < first_step + steps)
            phase = np.where(inside[None, :], phase, -1)  # records outside the rung: not simmering here
        title_rung = f" — {stage} (its steps and trajectories in both panels)"
    else:
        title_rung = ""
    return dict(phase=phase, step=step, distance=distance, rms=rms, temperature=temperature, blocks=blocks,
                first=first, pooled=pooled, metric=metric, baseline=baseline, verdicts=verdicts,
                steps=first_step + steps, window=window, title=ar.describe() + title_rung,
                label=ar.baseline_label())


def verdict_text(verdicts):
    counts = {}
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "no verdicts"


def draw(axes, d):
    left, right = axes
    sim = d["phase"][0] == 1
    x = d["step"][0][sim]
    t = d["temperature"][0][sim]
    twin = left.twinx()
    twin.fill_between(x, 0, t, color=sa.TEMPERATURE_COLOUR, alpha=0.08, step="post", lw=0)
    twin.set_ylabel("T", color=sa.TEMPERATURE_COLOUR)
    twin.set_ylim(0, max(float(np.nanmax(t)) * 1.6, 1e-300))
    left.set_zorder(twin.get_zorder() + 1)
    left.patch.set_visible(False)
    chains = d["distance"].shape[0]
    alpha = 0.9 if chains == 1 else max(0.15, 1.5 / chains)
    for c in range(chains):
        left.plot(x, d["distance"][c][sim], color="#7b3294", lw=1, alpha=alpha,
                  label="displacement |x − x₀|/√N" if c == 0 else None)
        left.plot(x, d["rms"][c][sim], color="#008837", lw=1, alpha=alpha,
                  label="rms |x|/√N" if c == 0 else None)
    if d["window"] and d["steps"]:
        left.axvspan(d["steps"] - d["window"], d["steps"], color="#fdb863", alpha=0.25, lw=0, label="window")
    left.set_xlabel("simmering step")
    left.set_ylabel("parameters")
    left.legend(loc="upper left", fontsize=8, frameon=False)
    left.set_title(d["title"], fontsize=9)

    label = "test accuracy" if d["metric"] == "accuracy" else "test R²"
    centres = d["first"]
    for c in range(d["blocks"].shape[0]):
        right.plot(centres, d["blocks"][c], marker="o", ms=3, lw=1, color=sa.ENSEMBLE_COLOUR,
                   alpha=alpha, label="each chain's ensemble" if c == 0 else None)
    if d["pooled"] is not None and np.isfinite(d["pooled"]).any():
        right.plot(centres, d["pooled"], marker="s", ms=5, lw=2.2, color="black", label="pooled ensemble")
    if d["baseline"] is not None and np.isfinite(d["baseline"]):
        right.axhline(d["baseline"], color=sa.ADAM_COLOUR, ls="--", lw=1.2, label=f"{d['label']} (mean)")
    right.set_xlabel("first step of the block")
    right.set_ylabel(f"ensemble {label} per block")
    right.legend(loc="lower left", fontsize=8, frameon=False)
    right.set_title(verdict_text(d["verdicts"]), fontsize=9)


def main():
    p = sa.parser(__doc__)
    p.add_argument("archives", nargs="+", help="simmer archives (.h5), one row each")
    sa.add_output_arguments(p, "drift")
    args = p.parse_args()
    data = []
    for path in args.archives:
        with sa.Archive(path) as ar:
            data.append(load(ar))
    fig, axes = plt.subplots(len(data), 2, figsize=(11, 3.6 * len(data)), squeeze=False,
                             gridspec_kw=dict(width_ratios=[1.5, 1]))
    for row, d in zip(axes, data):
        draw(row, d)
    fig.tight_layout()
    return sa.save(fig, sa.output_prefix(args, args.archives[0], "drift"), args)


if __name__ == "__main__":
    sa.run_main(main)
