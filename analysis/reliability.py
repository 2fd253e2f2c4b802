#!/usr/bin/python3
"""Reliability diagram: do the ensemble's stated uncertainties hold?

Classification runs: the confidence (the largest mean probability, /<group>/<set>/probability)
against the accuracy in 10 equal-width bins of confidence, with each bin's count; a calibrated
ensemble lies on the diagonal. Printed: the table per bin and the expected calibration error
(Σ_b |correct_b − confidence_b| / n, the ECE of /metrics) for the run's ensemble and, when the
archive has one, the deep ensemble.

Regression runs: do the predictive intervals cover what they say?

For every value of a scored set (default: test) the probability integral transform F(y) of its
truth under the ensemble's predictive law, the mixture Σ_c w_c N(mean_c, variance_c + σ²) that the
run archived (/<group>/<set>/trajectory_*, /<group>/noise_variance: the members of each
trajectory, or each Adam end point of the deep ensemble, with the noise variance σ² from the
validation residuals of the ensemble's mean, or the training residuals without a validation
split). The observed coverage of the central interval at each nominal level (0.1 ... 0.9, 0.95)
is the share of transforms inside [(1 − q)/2, (1 + q)/2]; a calibrated ensemble lies on the
diagonal. One line for the run's ensemble (/ensemble) and, when the archive has one, the deep
ensemble (/deep_ensemble); several archives (seeds of a study) pool their values. Printed: the
table of observed coverage per level, and the members' own coverage without noise for contrast.
"""
import numpy as np

import simmer_archive as sa
from simmer_archive import plt

LEVELS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
FIGURE = "the reliability diagram"


def transforms(paths, group, set_name):
    """Every value's F(y) under `group`'s mixture, pooled over the archives (None if one lacks it)."""
    out = []
    for path in paths:
        with sa.Archive(path) as ar:
            ar.require_task("regression", FIGURE)
            if not ar.has(group.strip("/")):
                return None
            mixture = sa.Predictive(ar, group, set_name, FIGURE)
            y = np.asarray(ar.require(f"data/{set_name}/y", FIGURE), dtype=float)
            out.append(mixture.cdf(y).reshape(-1))
    return np.concatenate(out)


BINS = 10


def confidence_hits(paths, group, set_name):
    """(confidence, hit) of every row of `set_name`, pooled over the archives (None if one lacks it)."""
    conf, hit = [], []
    for path in paths:
        with sa.Archive(path) as ar:
            ar.require_task("classification", FIGURE)
            if not ar.has(f"{group}/{set_name}/probability"):
                return None
            p = np.asarray(ar.require(f"{group}/{set_name}/probability", FIGURE), dtype=float)
            y = np.asarray(ar.require(f"data/{set_name}/y", FIGURE)).astype(int).reshape(-1)
            best = np.argmax(p, axis=1)  # the first of equal probabilities, as the run scores it
            conf.append(p[np.arange(len(y)), best])
            hit.append(best == y)
    return np.concatenate(conf), np.concatenate(hit)


def calibration_table(conf, hit):
    """Per bin: count, mean confidence, accuracy; and the ECE."""
    b = np.clip((conf * BINS).astype(int), 0, BINS - 1)
    count = np.bincount(b, minlength=BINS)
    conf_sum = np.bincount(b, weights=conf, minlength=BINS)
    hit_sum = np.bincount(b, weights=hit.astype(float), minlength=BINS)
    ece = float(np.sum(np.abs(hit_sum - conf_sum)) / len(conf))
    with np.errstate(invalid="ignore", divide="ignore"):
        return count, conf_sum / count, hit_sum / count, ece


def classification_diagram(args):
    lines = {}
    for group, label in (("ensemble", "run's ensemble"), ("deep_ensemble", "deep ensemble")):
        got = confidence_hits(args.archives, group, args.set)
        if got is not None:
            lines[label] = got
    if "run's ensemble" not in lines:
        raise sa.ArchiveError(f"{args.archives[0]}: lacks /ensemble/{args.set}/probability (needed for {FIGURE})")
    with sa.Archive(args.archives[0]) as ar:
        title = args.label or ar.describe()
    fig, (ax, hax) = plt.subplots(2, 1, figsize=(5.2, 6.0), layout="constrained", sharex=True,
                                  gridspec_kw={"height_ratios": (3, 1)})
    ax.plot([0, 1], [0, 1], color="0.5", lw=1.0, ls="--", label="calibrated")
    width = 1.0 / BINS / (len(lines) + 0.5)
    print(f"{args.set} rows: {len(next(iter(lines.values()))[0])}; confidence bins of width {1 / BINS:g}")
    for k, ((label, (conf, hit)), colour) in enumerate(zip(lines.items(), (sa.ENSEMBLE_COLOUR, sa.ADAM_COLOUR))):
        count, mean_conf, accuracy, ece = calibration_table(conf, hit)
        used = count > 0
        print(f"{label}: ECE {ece:.6f}")
        print("  bin        " + "  ".join(f"{b / BINS:.1f}-{(b + 1) / BINS:.1f}" for b in range(BINS)))
        print("  count      " + "  ".join(f"{c:7d}" for c in count))
        print("  confidence " + "  ".join(f"{v:7.3f}" for v in mean_conf))
        print("  accuracy   " + "  ".join(f"{v:7.3f}" for v in accuracy))
        ax.plot(mean_conf[used], accuracy[used], marker="o", color=colour, lw=1.6,
                label=f"{label} (ECE {ece:.3f}, {len(conf)} rows)")
        centres = (np.arange(BINS) + 0.5) / BINS
        hax.bar(centres + (k - (len(lines) - 1) / 2) * width, count, width=width, color=colour, label=label)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel(f"accuracy on the {args.set} set")
    ax.set_title(f"{title}\nconfidence = the largest mean probability of the members", fontsize=9)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    hax.set_xlabel("confidence (bins of width 0.1)")
    hax.set_ylabel("rows")
    hax.grid(alpha=0.25)
    return sa.save(fig, sa.output_prefix(args, args.archives[0], "reliability"), args)


def main():
    p = sa.parser(__doc__)
    p.add_argument("archives", nargs="+", help="simmer archives (.h5) of one task's runs, pooled")
    p.add_argument("--set", default="test", help="scored set: test (default), validation or train")
    p.add_argument("--label", default=None, help="title (default: the first archive's description)")
    sa.add_output_arguments(p, "reliability")
    args = p.parse_args()
    with sa.Archive(args.archives[0]) as ar:
        if ar.task == "classification":
            return classification_diagram(args)
    lines = {}
    for group, label in (("ensemble", "run's ensemble"), ("deep_ensemble", "deep ensemble")):
        pit = transforms(args.archives, group, args.set)
        if pit is not None:
            lines[label] = pit
    if "run's ensemble" not in lines:
        raise sa.ArchiveError(f"{args.archives[0]}: lacks /ensemble (needed for {FIGURE})")
    with sa.Archive(args.archives[0]) as ar:
        title = args.label or ar.describe()
        source = sa.Predictive(ar, "ensemble", args.set, FIGURE).source
    fig, ax = plt.subplots(figsize=(5.2, 5.0), layout="constrained")
    ax.plot([0, 1], [0, 1], color="0.5", lw=1.0, ls="--", label="calibrated")
    print(f"{args.set} values: {len(lines[next(iter(lines))])}; noise from the {source} residuals")
    print("nominal   " + "  ".join(f"{q:5.2f}" for q in LEVELS))
    for (label, pit), colour in zip(lines.items(), (sa.ENSEMBLE_COLOUR, sa.ADAM_COLOUR)):
        observed = sa.central_coverage(pit, LEVELS)
        print(f"{label[:9]:9s} " + "  ".join(f"{v:5.3f}" for v in observed))
        ax.plot(LEVELS, observed, marker="o", color=colour, lw=1.6, label=f"{label} ({len(pit)} values)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("nominal coverage of the central predictive interval")
    ax.set_ylabel(f"observed coverage on the {args.set} set")
    ax.set_title(f"{title}\nmixture of the members' N(prediction, σ²), σ² from the {source} residuals", fontsize=9)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    return sa.save(fig, sa.output_prefix(args, args.archives[0], "reliability"), args)


if __name__ == "__main__":
    sa.run_main(main)
