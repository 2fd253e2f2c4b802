#!/usr/bin/python3
"""The fit of a one-feature regression run, and the distribution of member predictions.

Left: train and test data (/data/*), the ground truth sin(2πx) when data.source = sine, the
ensemble mean with two bands: the 95 % predictive interval (the quantiles of the mixture of the
members' N(prediction, σ²), σ² the archived noise variance: /ensemble/<set>/trajectory_*,
/ensemble/noise_variance; archives before issue 26 lack it) and, darker, the members' own
spread (mean ± 1.96 sd, /ensemble/<set>/{mean,variance}: no noise, the uncertainty of the mean
function alone), on the archive's dense evaluation set (`points`: simmer_mpi --ensemble.points
analysis/sine_grid.csv) or, when the run had none, on a grid of --grid inputs over the training
range widened by 10 % where `simmer_analyze predict` evaluates the stored networks (a finished
run needs no rerun), and Adam's fit when the archive stores it
(/baseline/<set>/prediction; otherwise the legend says it is not in the archive).
Right: histograms of every member's prediction at two tracked test inputs
(/ensemble/test/tracked [chain, member, point], rows /ensemble/test/tracked_rows: run with
--ensemble.track ROWS), with the true value and the ensemble mean.
"""
import sys

import numpy as np

import simmer_archive as sa
from simmer_archive import plt

HIST_COLOURS = ("#7b3294", "#008837")


def sorted_curve(x, y):
    order = np.argsort(x)
    return x[order], y[order]


def adam_predictions(ar, set_name):
    """Adam's predictions [chain, point] on a set, if the archive stores them; else None."""
    for name in (f"baseline/{set_name}/prediction", f"baseline/{set_name}_prediction"):
        if ar.has(name):
            values = np.asarray(ar.file[name][()], dtype=float)
            if values.ndim == 3:
                values = values[..., 0]
            return np.atleast_2d(values)
    return None


def main():
    p = sa.parser(__doc__)
    p.add_argument("archive", help="simmer archive (.h5) of a one-feature regression run")
    p.add_argument("--points-set", default="points", metavar="SET",
                   help="evaluation set drawn as the curves (default: points, the grid given "
                        "with ensemble.points; `test` works without a grid but is sparse)")
    p.add_argument("--at", nargs=2, type=float, metavar=("X1", "X2"),
                   help="inputs for the member histograms: the tracked test rows nearest to "
                        "X1 and X2 (default: the first two tracked rows)")
    p.add_argument("--no-distributions", action="store_true",
                   help="draw only the fit (for archives run without ensemble.track)")
    p.add_argument("--bins", type=int, default=40, help="histogram bins (default 40)")
    p.add_argument("--grid", type=int, default=300,
                   help="without the run's own points: inputs on the grid over the training range (default 300)")
    p.add_argument("--analyze", metavar="PATH", help="simmer_analyze (default: $SIMMER_ANALYZE, PATH, build/src)")
    sa.add_output_arguments(p, "fit")
    args = p.parse_args()

    figure = "the regression fit"
    with sa.Archive(args.archive) as ar:
        ar.require_task("regression", figure)
        set_name = args.points_set
        predicted = None
        if set_name == "points" and not ar.has("data/points/x"):
            # No grid in the run: the stored networks on one over the training range.
            train_x = np.asarray(ar.require("data/train/x", figure), dtype=float)
            if train_x.ndim != 2 or train_x.shape[1] != 1:
                raise sa.ArchiveError(f"{args.archive}: the run has {train_x.shape[-1]} features; "
                                      f"{figure} needs exactly one")
            grid_x = sa.training_grid(train_x, args.grid)
            predicted = sa.predict_grid(args.archive, grid_x, ar.feature_names() or ["x"], args.analyze)
            set_name = f"a {args.grid}-point grid"
            y_name = (ar.strings("data/target_names") or ["y"])[0]
            mean = predicted[f"mean_{y_name}"][:, None]
            variance = predicted[f"sd_model_{y_name}"][:, None] ** 2
        else:
            grid_x = np.asarray(ar.require(f"data/{set_name}/x", figure), dtype=float)
            mean = np.asarray(ar.require(f"ensemble/{set_name}/mean", figure), dtype=float)
            variance = np.asarray(ar.require(f"ensemble/{set_name}/variance", figure), dtype=float)
        if grid_x.ndim != 2 or grid_x.shape[1] != 1:
            raise sa.ArchiveError(f"{args.archive}: /data/{set_name}/x has {grid_x.shape[-1]} "
                                  f"features; {figure} needs exactly one")
        if mean.ndim == 2 and mean.shape[1] != 1:
            raise sa.ArchiveError(f"{args.archive}: the network has {mean.shape[1]} outputs; "
                                  f"{figure} needs exactly one")
        data = {}
        for s in ("train", "test"):
            data[s] = (np.asarray(ar.require(f"data/{s}/x", figure), dtype=float)[:, 0],
                       np.asarray(ar.require(f"data/{s}/y", figure), dtype=float).reshape(-1))
        members = ar.attr("members", f"ensemble/{set_name}") if predicted is None else None
        # The predictive 95 % interval (members and noise) where the run archived its mixture.
        predictive = None
        if predicted is not None:
            noise = ar.require("ensemble/noise_variance", figure) if ar.has("ensemble/noise_variance") else [np.nan]
            predictive = (predicted[f"q0.025_{y_name}"], predicted[f"q0.975_{y_name}"], "archived",
                          float(np.sqrt(np.asarray(noise, dtype=float).reshape(-1)[0])))
        elif ar.has(f"ensemble/{set_name}/trajectory_mean") and ar.has("ensemble/noise_variance"):
            mix = sa.Predictive(ar, "ensemble", set_name, figure)
            predictive = (mix.quantile(0.025)[:, 0], mix.quantile(0.975)[:, 0], mix.source,
                          float(np.sqrt(mix.noise[0])))
        sine = ar.config.get("data.source") == "sine"
        adam_grid = adam_predictions(ar, set_name) if predicted is None else None
        adam_test = adam_predictions(ar, "test") if adam_grid is None else None
        baseline = ar.baseline_label()
        feature = (ar.feature_names() or ["x"])[0]
        target = (ar.strings("data/target_names") or ["y"])[0]
        title = ar.describe()
        metrics = {k: ar.attr(k, "metrics") for k in ("baseline_test_r2_mean", "ensemble_test_r2",
                                                      "baseline_test_mse_mean", "ensemble_test_mse")}
        tracked = rows = None
        if not args.no_distributions:
            track_hint = "rerun with --ensemble.track ROWS (e.g. 0,5), or use --no-distributions"
            tracked = np.asarray(ar.require("ensemble/test/tracked", "the member distributions",
                                            track_hint), dtype=float)
            rows = np.asarray(ar.require("ensemble/test/tracked_rows", "the member distributions",
                                         track_hint)).astype(int).reshape(-1)

    gx, gmean = sorted_curve(grid_x[:, 0], mean.reshape(-1))
    _, gsd = sorted_curve(grid_x[:, 0], np.sqrt(np.maximum(variance.reshape(-1), 0.0)))

    if args.no_distributions:
        fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
        hist_axes = []
    else:
        fig = plt.figure(figsize=(11.0, 5.0), layout="constrained")
        grid = fig.add_gridspec(2, 2, width_ratios=(1.9, 1.0))
        ax = fig.add_subplot(grid[:, 0])
        hist_axes = [fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, 1])]

    # Left panel: the fit.
    if sine:
        tx = np.linspace(min(gx.min(), -1.0), max(gx.max(), 1.0), 600)
        ax.plot(tx, np.sin(2 * np.pi * tx), color="black", lw=1.0, ls="--", label="truth sin(2πx)",
                zorder=2)
    if predictive is not None:
        _, lo = sorted_curve(grid_x[:, 0], predictive[0])
        _, hi = sorted_curve(grid_x[:, 0], predictive[1])
        ax.fill_between(gx, lo, hi, color=sa.ENSEMBLE_COLOUR, alpha=0.13, lw=0, zorder=0,
                        label=f"95 % predictive interval (members + noise σ = {predictive[3]:.3g}, "
                              f"{predictive[2]} residuals)")
    ax.fill_between(gx, gmean - 1.96 * gsd, gmean + 1.96 * gsd, color=sa.ENSEMBLE_COLOUR, alpha=0.3,
                    lw=0, label="members' spread: mean ± 1.96 sd (no noise)", zorder=1)
    ens_label = f"ensemble mean ({members} members)" if members else "ensemble mean"
    ax.plot(gx, gmean, color=sa.ENSEMBLE_COLOUR, lw=1.8, label=ens_label, zorder=3)
    if adam_grid is not None:
        for c in range(adam_grid.shape[0]):
            x_sorted, y_sorted = sorted_curve(grid_x[:, 0], adam_grid[c])
            ax.plot(x_sorted, y_sorted, color=sa.ADAM_COLOUR, lw=1.2 if c == 0 else 0.6,
                    alpha=1.0 if c == 0 else 0.4, label=f"{baseline} fit" if c == 0 else None, zorder=3)
    elif adam_test is not None:
        ax.scatter(np.repeat(data["test"][0][None, :], adam_test.shape[0], 0).ravel(), adam_test.ravel(),
                   marker="x", s=22, color=sa.ADAM_COLOUR, label=f"{baseline} at test inputs", zorder=4)
    else:
        # No Adam predictions stored: say so rather than re-evaluate /baseline/params.
        r2 = metrics["baseline_test_r2_mean"]
        note = f"{baseline} fit: not in archive"
        if r2 is not None:
            note += f" (test R² {r2:.3f})"
        ax.plot([], [], color=sa.ADAM_COLOUR, lw=1.2, ls="none", label=note)
    ax.scatter(*data["train"], s=16, facecolor="white", edgecolor="0.2", lw=0.9, label="train", zorder=5)
    ax.scatter(*data["test"], s=18, color="0.2", marker="s", label="test", zorder=5)
    ax.set_xlabel(feature)
    ax.set_ylabel(target)
    ax.margins(y=0.1)
    ax.grid(alpha=0.25)
    r2_ens = metrics["ensemble_test_r2"]
    ax.set_title((f"fit on /{set_name} ({len(gx)} points)" if predicted is None
                  else f"fit on {set_name} (the stored networks)")
                 + (f"; ensemble test R² {r2_ens:.3f}" if r2_ens is not None else ""), fontsize=10)

    # Right panels: member predictions at two tracked inputs.
    if hist_axes:
        chosen = choose_tracked(rows, data["test"][0], args.at, args.archive)
        outputs = tracked.shape[2] // max(len(rows), 1)
        letters = "AB"
        for k, (hax, index) in enumerate(zip(hist_axes, chosen)):
            row = rows[index]
            values = tracked[:, :, index * outputs].ravel()
            values = values[np.isfinite(values)]
            x0, y0 = data["test"][0][row], data["test"][1][row]
            colour = HIST_COLOURS[k]
            ax.axvline(x0, color=colour, lw=1.0, ls=":", zorder=1)
            ax.annotate(letters[k], (x0, 0.985), xycoords=("data", "axes fraction"), ha="center",
                        va="top", color=colour, fontweight="bold", zorder=6,
                        bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none"))
            if values.size == 0:
                hax.text(0.5, 0.5, "no member predictions stored", ha="center", va="center",
                         transform=hax.transAxes)
                continue
            hax.hist(values, bins=args.bins, color=colour, alpha=0.55, density=True)
            m, sd = values.mean(), values.std()
            hax.axvline(m, color=colour, lw=1.8, label=f"member mean {m:.3f}")
            hax.axvline(y0, color="black", lw=1.2, ls="--", label=f"test target {y0:.3f}")
            if sine:
                hax.axvline(np.sin(2 * np.pi * x0), color="0.5", lw=1.0, ls=":",
                            label=f"truth {np.sin(2 * np.pi * x0):.3f}")
            hax.set_title(f"{letters[k]}: {feature} = {x0:.3g} (test row {row}); "
                          f"{values.size} members, sd {sd:.3f}", fontsize=9)
            hax.set_ylabel("density")
            hax.legend(fontsize=7.5, loc="upper left", frameon=False)
            hax.margins(y=0.35)
        hist_axes[-1].set_xlabel(f"member prediction of {target}")

    handles, labels = ax.get_legend_handles_labels()
    # Inside the axes (a legend anchored outside them was cut off the saved figure), half
    # transparent, where it covers the fewest points.
    ax.margins(y=0.25)
    ax.legend(handles, labels, loc="best", ncol=2, fontsize=7.5, framealpha=0.75)
    fig.suptitle(title, fontsize=10)
    return sa.save(fig, sa.output_prefix(args, args.archive, "fit"), args)


def choose_tracked(rows, test_x, at, path):
    """Indices into the tracked rows: the first two, or the ones nearest to the --at inputs."""
    if len(rows) == 0:
        raise sa.ArchiveError(f"{path}: /ensemble/test/tracked_rows is empty (run with --ensemble.track ROWS)")
    if at is None:
        return [0, 1 if len(rows) > 1 else 0]
    xs = test_x[rows]
    chosen = [int(np.argmin(np.abs(xs - a))) for a in at]
    for a, i in zip(at, chosen):
        if abs(xs[i] - a) > 1e-9:
            print(f"note: the tracked test input nearest to {a:g} is {xs[i]:g} (tracked rows "
                  f"{', '.join(str(r) for r in rows)} at x = {', '.join(f'{v:g}' for v in xs)})",
                  file=sys.stderr)
    return chosen


if __name__ == "__main__":
    sa.run_main(main)
