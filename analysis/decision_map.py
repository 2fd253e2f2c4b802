#!/usr/bin/python3
"""Decision map of a two-feature classification run: the whole ensemble's vote fractions on a
grid, colours mixed by vote share (RGB = Σ_k fraction_k · colour_k), train and test data on
top coloured by class, and vote-share bars at two grid points.

The grid is the archive's extra evaluation set when the run had one (/ensemble/points/fraction
with /data/points/x: simmer_mpi --ensemble.points GRID.csv, every member's vote); otherwise a
--grid x --grid lattice over the training range widened by 10 %, on which `simmer_analyze predict`
evaluates the run's stored networks (their vote fractions), so a finished run needs no rerun.
The two bar points are the grid points nearest to --at "x1,y1" "x2,y2"; by default one point on
each of the two most-contested class boundaries inside the range of the training data.
"""
import numpy as np

import simmer_archive as sa
from simmer_archive import plt

FIGURE = "the decision map"


def coordinate(text):
    try:
        a, b = (float(v) for v in text.split(","))
    except ValueError:
        raise ValueError(f"expected two numbers as x,y, got '{text}'") from None
    return a, b


def regular_grid(x):
    """(xs, ys, index[j, i]) when x is a full regular grid of unique points; else None."""
    xs, xi = np.unique(x[:, 0], return_inverse=True)
    ys, yi = np.unique(x[:, 1], return_inverse=True)
    if len(xs) * len(ys) != len(x) or len(xs) < 2 or len(ys) < 2:
        return None
    index = np.full((len(ys), len(xs)), -1)
    index[yi, xi] = np.arange(len(x))
    if (index < 0).any():
        return None
    return xs, ys, index


def edges(centres):
    mid = (centres[1:] + centres[:-1]) / 2
    return np.concatenate([[centres[0] - (mid[0] - centres[0])], mid,
                           [centres[-1] + (centres[-1] - mid[-1])]])


def contested_points(grid_x, fraction, train_x, count=2):
    """Grid points on the most-contested boundaries between two classes, inside the data range.

    For each pair of classes (a, b) the score of a point is min(f_a, f_b) minus the share of the
    other classes; the best point of each of the `count` best-scoring pairs is returned."""
    lo, hi = train_x.min(axis=0), train_x.max(axis=0)
    inside = np.all((grid_x >= lo) & (grid_x <= hi), axis=1)
    if not inside.any():
        inside[:] = True
    # Prefer points near the data: distance to the nearest training point, in grid-range units.
    span = np.maximum(grid_x.max(axis=0) - grid_x.min(axis=0), 1e-12)
    d = np.sqrt((((grid_x[:, None, :] - train_x[None, :, :]) / span) ** 2).sum(axis=2)).min(axis=1)
    classes = fraction.shape[1]
    candidates = []
    for a in range(classes):
        for b in range(a + 1, classes):
            other = fraction.sum(axis=1) - fraction[:, a] - fraction[:, b]
            score = np.minimum(fraction[:, a], fraction[:, b]) - other - 0.5 * d
            score[~inside] = -np.inf
            i = int(np.argmax(score))
            candidates.append((score[i], i))
    candidates.sort(reverse=True)
    chosen = [i for _, i in candidates[:count]]
    while len(chosen) < count:  # fewer than two class pairs: take the most uncertain points
        entropy = -(fraction * np.log(np.where(fraction > 0, fraction, 1))).sum(axis=1)
        entropy[chosen] = -np.inf
        chosen.append(int(np.argmax(entropy)))
    return chosen


def main():
    p = sa.parser(__doc__)
    p.add_argument("archive", help="simmer archive (.h5) of a two-feature classification run")
    p.add_argument("--at", nargs=2, type=coordinate, metavar=("X1,Y1", "X2,Y2"),
                   help="the two points for the vote-share bars (nearest grid points are used)")
    p.add_argument("--lighten", type=float, default=0.3,
                   help="mix the map with this share of white so the data stand out (default 0.3)")
    p.add_argument("--grid", type=int, default=120,
                   help="without the run's own points: the lattice's points per side (default 120)")
    p.add_argument("--analyze", metavar="PATH", help="simmer_analyze (default: $SIMMER_ANALYZE, PATH, build/src)")
    sa.add_output_arguments(p, "map")
    args = p.parse_args()

    with sa.Archive(args.archive) as ar:
        ar.require_task("classification", FIGURE)
        train_x = np.asarray(ar.require("data/train/x", FIGURE), dtype=float)
        if train_x.ndim != 2 or train_x.shape[1] != 2:
            raise sa.ArchiveError(f"{args.archive}: the run has {train_x.shape[-1]} features; "
                                  f"{FIGURE} needs exactly two")
        features = ar.feature_names() or ["feature 1", "feature 2"]
        classes = ar.class_names() or [f"class {k}" for k in range(ar.require("ensemble/test/fraction", FIGURE).shape[1])]
        if ar.has("data/points/x") and ar.has("ensemble/points/fraction"):
            grid_x = np.asarray(ar.require("data/points/x", FIGURE), dtype=float)
            fraction = np.asarray(ar.require("ensemble/points/fraction", FIGURE), dtype=float)
            members = ar.attr("members", "ensemble/points")
            source = "members"
        else:
            grid_x = sa.training_grid(train_x, args.grid ** 2)
            fraction = None
            members = None
            source = "stored networks"
        if fraction is not None and len(fraction) != len(grid_x):
            raise sa.ArchiveError(f"{args.archive}: /ensemble/points/fraction has {len(fraction)} rows "
                                  f"but /data/points/x has {len(grid_x)}")
        data = {s: (np.asarray(ar.require(f"data/{s}/x", FIGURE), dtype=float),
                    np.asarray(ar.require(f"data/{s}/y", FIGURE)).astype(int).reshape(-1))
                for s in ("train", "test")}
        metrics = {k: ar.attr(k, "metrics") for k in ("ensemble_test_accuracy", "baseline_test_accuracy_mean",
                                                      "baseline_test_accuracy_sd")}
        baseline = ar.baseline_label()
        title = ar.describe()

    if fraction is None:  # the stored networks on the lattice, by simmer_analyze predict
        predicted = sa.predict_grid(args.archive, grid_x, features, args.analyze)
        fraction = np.column_stack([predicted[f"fraction_{c}"] for c in classes])
    n_classes = fraction.shape[1]
    if n_classes > len(sa.CLASS_COLOURS):
        raise sa.ArchiveError(f"{args.archive}: {n_classes} classes; {FIGURE} has colours for at most "
                              f"{len(sa.CLASS_COLOURS)}")
    colours = sa.CLASS_COLOURS[:n_classes]
    short = [c.split("-", 1)[1] if c.lower().startswith("iris-") else c for c in classes]
    # Points with no votes (unwritten rows) are NaN: draw them white.
    fraction = np.where(np.isfinite(fraction), fraction, 0.0)
    rgb = fraction @ colours
    rgb = np.where(fraction.sum(axis=1, keepdims=True) > 0, rgb, 1.0)
    rgb = (1 - args.lighten) * rgb + args.lighten
    rgb = np.clip(rgb, 0, 1)

    fig = plt.figure(figsize=(10.0, 6.0), layout="constrained")
    outer = fig.add_gridspec(1, 2, width_ratios=(2.3, 1.0))
    ax = fig.add_subplot(outer[0])
    right = outer[1].subgridspec(3, 1, height_ratios=(1.1, 1.0, 1.0))

    grid = regular_grid(grid_x)
    if grid is not None:
        xs, ys, index = grid
        ex, ey = edges(xs), edges(ys)
        if np.allclose(np.diff(xs), xs[1] - xs[0]) and np.allclose(np.diff(ys), ys[1] - ys[0]):
            ax.imshow(rgb[index], origin="lower", extent=(ex[0], ex[-1], ey[0], ey[-1]), aspect="auto",
                      interpolation="nearest", zorder=0)
        else:  # uneven spacing: one rectangle per grid point
            for j in range(len(ys)):
                for i in range(len(xs)):
                    ax.add_patch(plt.Rectangle((ex[i], ey[j]), ex[i + 1] - ex[i], ey[j + 1] - ey[j],
                                               color=rgb[index[j, i]], lw=0, zorder=0))
        ax.set_xlim(edges(xs)[[0, -1]])
        ax.set_ylim(edges(ys)[[0, -1]])
    else:  # scattered points: squares sized to the point density
        size = 12000.0 / max(len(grid_x), 1)
        ax.scatter(grid_x[:, 0], grid_x[:, 1], c=rgb, marker="s", s=size, lw=0, zorder=0)

    # Data: class colour, black edge; train circles, test triangles.
    for s, marker, size in (("train", "o", 30), ("test", "^", 42)):
        x, y = data[s]
        ax.scatter(x[:, 0], x[:, 1], c=colours[np.clip(y, 0, n_classes - 1)], marker=marker, s=size,
                   edgecolor="black", linewidth=0.7, alpha=0.9, zorder=3)
    ax.set_xlabel(features[0])
    ax.set_ylabel(features[1])
    acc = metrics["ensemble_test_accuracy"]
    sub = (f"vote fractions of {members} members" if members
           else f"stored networks' votes, {args.grid}x{args.grid} grid" if source != "members"
           else "vote fractions")
    if acc is not None:
        sub += f"; test accuracy: ensemble {acc:.3f}"
        if metrics["baseline_test_accuracy_mean"] is not None:
            sub += f", {baseline} {metrics['baseline_test_accuracy_mean']:.3f}"
            if metrics["baseline_test_accuracy_sd"]:
                sub += f" ± {metrics['baseline_test_accuracy_sd']:.3f}"
    ax.set_title(sub, fontsize=9.5)

    # Chosen points.
    if args.at:
        chosen = [int(np.argmin(((grid_x - np.array(a)) ** 2).sum(axis=1))) for a in args.at]
    else:
        chosen = contested_points(grid_x, fraction, data["train"][0])
    letters = "AB"
    for k, i in enumerate(chosen):
        ax.scatter(*grid_x[i], marker="*", s=260, color="white", edgecolor="black", lw=1.0, zorder=5)
        ax.annotate(letters[k], grid_x[i], xytext=(7, 7), textcoords="offset points", fontsize=12,
                    fontweight="bold", zorder=6,
                    bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.8))

    # Legend panel: class colours and markers.
    lax = fig.add_subplot(right[0])
    lax.axis("off")
    handles = [plt.Rectangle((0, 0), 1, 1, color=(1 - args.lighten) * c + args.lighten) for c in colours]
    labels = [f"{name}: all votes" for name in short]
    handles += [plt.Line2D([], [], ls="none", marker="o", mfc="0.6", mec="black", ms=6),
                plt.Line2D([], [], ls="none", marker="^", mfc="0.6", mec="black", ms=7),
                plt.Line2D([], [], ls="none", marker="*", mfc="white", mec="black", ms=12)]
    labels += ["train (colour = class)", "test (colour = class)", "points A, B (bars below)"]
    lax.legend(handles, labels, loc="center", frameon=False, fontsize=8.5,
               title="mixed colour = vote share", title_fontsize=8.5)

    for k, i in enumerate(chosen):
        bax = fig.add_subplot(right[k + 1])
        bars = bax.barh(np.arange(n_classes), fraction[i], color=colours, edgecolor="black", lw=0.5)
        for bar, f in zip(bars, fraction[i]):
            bax.text(min(f + 0.02, 0.80), bar.get_y() + bar.get_height() / 2, f"{f:.2f}", va="center",
                     fontsize=8)
        bax.set_yticks(np.arange(n_classes), short, fontsize=8.5)
        bax.invert_yaxis()
        bax.set_xlim(0, 1)
        bax.set_title(f"{letters[k]}: {features[0]} = {grid_x[i, 0]:.3g},\n{features[1]} = {grid_x[i, 1]:.3g}",
                      fontsize=8.5)
        bax.tick_params(axis="x", labelsize=8)
        if k == len(chosen) - 1:
            bax.set_xlabel("vote share")
    fig.suptitle(title, fontsize=10)
    return sa.save(fig, sa.output_prefix(args, args.archive, "map"), args)


if __name__ == "__main__":
    sa.run_main(main)
