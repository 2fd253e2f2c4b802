#!/usr/bin/python3
"""Loss curves of a simmer run: train and test loss through Adam and simmering, from /trace.

Adam epochs are drawn at step = epoch - epochs (ending at 0), simmering steps at step > 0, with a
vertical line where simmering starts and the temperature T(step) on the right axis. A ladder's
chosen rung (the run's ensemble, /metrics ensemble) is shaded (sequential rungs) or its
trajectories' mean training loss drawn (parallel rungs). With several
chains the mean over chains is a solid line and each chain a light line. A summed loss (SSE) is
divided by the set's size so train and test are comparable (--raw keeps it as stored).
"""
import numpy as np

import simmer_archive as sa
from simmer_archive import plt


def load_trace(ar):
    purpose = "the loss curves"
    hint = "the run wrote no trace (run.trace_every = 0?)"
    trace = {k: np.atleast_2d(ar.require(f"trace/{k}", purpose, hint).astype(float))
             for k in ("phase", "step", "temperature", "train_loss", "test_loss")}
    # Rows a run did not reach (stopped, diverged) read NaN: keep records with a step.
    if not np.isfinite(trace["step"]).any():
        raise sa.ArchiveError(f"{ar.path}: /trace holds no recorded step (the run wrote no trace rows)")
    return trace


def chain_mean(values):
    """Mean over chains, ignoring NaN; NaN where no chain has a value."""
    counts = np.isfinite(values).sum(axis=0)
    sums = np.where(np.isfinite(values), values, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def main():
    p = sa.parser(__doc__)
    p.add_argument("archive", help="simmer archive (.h5)")
    p.add_argument("--raw", action="store_true",
                   help="plot a summed loss (SSE) as stored instead of per point")
    p.add_argument("--log", choices=("auto", "on", "off"), default="auto",
                   help="logarithmic loss axis: auto = when the losses span more than 1.5 decades")
    p.add_argument("--no-chains", action="store_true", help="draw only the mean over chains")
    sa.add_output_arguments(p, "loss")
    args = p.parse_args()

    with sa.Archive(args.archive) as ar:
        trace = load_trace(ar)
        loss_name = ar.attr("loss", "model") or ar.config.get("model.loss", "loss")
        sizes = {"train": ar.set_size("train"), "test": ar.set_size("test")}
        title = ar.describe()
        epochs = ar.config.get("adam.epochs")
        chosen = ar.chosen_rung()
        rungs = len([t for t in ar.config.get("simmer.ladder", "").split(",") if t.strip()])
        rung_steps = int(ar.config.get("simmer.steps", "0") or 0)
        deep_chosen = ar.attr("ensemble", "metrics") == "deep_ensemble"

    per_point = loss_name == "sse" and not args.raw and all(sizes.values())
    if per_point:
        trace["train_loss"] = trace["train_loss"] / sizes["train"]
        trace["test_loss"] = trace["test_loss"] / sizes["test"]
        ylabel = "loss per point (SSE / n)"
    else:
        ylabel = f"loss ({loss_name.upper()})"

    # Records are aligned over chains (same trace_every); use the first chain with a full step row.
    step = chain_mean(trace["step"])
    keep = np.isfinite(step)
    step = step[keep]
    for k in ("phase", "temperature", "train_loss", "test_loss"):
        trace[k] = trace[k][:, keep]
    phase = chain_mean(trace["phase"])
    chains = trace["train_loss"].shape[0]

    fig, ax = plt.subplots(figsize=(8.0, 4.6), layout="constrained")
    curves = [("train", trace["train_loss"], sa.TRAIN_COLOUR), ("test", trace["test_loss"], sa.TEST_COLOUR)]
    for label, values, colour in curves:
        if chains > 1 and not args.no_chains:
            alpha = max(0.08, min(0.35, 2.0 / chains))
            every = max(1, len(step) // 600)  # thinned: light lines need no full resolution
            for c in range(chains):
                ax.plot(step[::every], values[c, ::every], color=colour, lw=0.6, alpha=alpha, zorder=1,
                        rasterized=True)
        mean = chain_mean(values)
        what = f"{label} (mean of {chains} chains)" if chains > 1 else label
        ax.plot(step, mean, color=colour, lw=1.6, label=what, zorder=3)

    finite = np.concatenate([v[np.isfinite(v)] for _, v, _ in curves])
    log = args.log == "on"
    if args.log == "auto" and finite.size and finite.min() > 0:
        log = finite.max() / finite.min() > 10 ** 1.5
    if log:
        if finite.size and finite.min() <= 0:
            raise sa.ArchiveError(f"{args.archive}: losses are not all positive; use --log off")
        ax.set_yscale("log")
    # Headroom at the top for the phase labels.
    if finite.size:
        lo, hi = finite.min(), finite.max()
        if log:
            ax.set_ylim(lo / 1.3, hi * (hi / lo) ** 0.12)
        else:
            ax.set_ylim(min(0.0, lo) if lo >= 0 and lo < 0.2 * hi else lo - 0.05 * (hi - lo),
                        hi + 0.12 * (hi - lo))

    # The run's ensemble, when a ladder chose it: its rung's steps (sequential rungs) or its
    # trajectories' mean training loss (parallel rungs: trajectories i with i mod K = k).
    if chosen is not None:
        k, name, parallel = chosen
        if parallel:
            ax.plot(step, chain_mean(trace["train_loss"][k::rungs]), color="black", lw=1.2, ls="--", zorder=4,
                    label=f"train, {name}'s trajectories (the run's ensemble)")
        elif rung_steps:
            ax.axvspan(k * rung_steps, (k + 1) * rung_steps, color="#fdb863", alpha=0.3, lw=0, zorder=0,
                       label=f"{name}: the run's ensemble")
    elif deep_chosen:
        ax.plot([], [], ls="none", label="the run's ensemble: the deep ensemble (Adam's end points, step 0)")

    has_adam = np.any(phase == 0)
    if has_adam:
        ax.axvspan(np.nanmin(step), 0, color="0.93", zorder=0)
        ax.axvline(0, color="black", lw=1.0, ls="--", zorder=2)
        ax.text(0, 0.985, "  simmering starts", transform=ax.get_xaxis_transform(), ha="left",
                va="top", fontsize=9)
        adam_label = f"Adam ({epochs} epochs)" if epochs else "Adam"
        span = np.nanmax(step) - np.nanmin(step)
        if -np.nanmin(step) > 0.2 * span:
            ax.text(0, 0.985, adam_label + "  ", ha="right", va="top",
                    transform=ax.get_xaxis_transform(), fontsize=9)
        else:  # a narrow Adam phase: label it along the dashed line
            ax.text(0, 0.985, adam_label + " ", ha="right", va="top", rotation=90,
                    transform=ax.get_xaxis_transform(), fontsize=9)
    ax.set_xlabel("Adam epoch − epochs  |  simmering step" if has_adam else "simmering step")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.25, which="major")

    # Temperature on the right axis, over the simmering records only (Adam has no temperature).
    tax = ax.twinx()
    simmering = phase == 1
    temperature = chain_mean(trace["temperature"])
    if simmering.any():
        ts, tv = step[simmering], temperature[simmering]
        # From step 0: the first record's T (the ramp's T_initial) holds until then.
        ts, tv = np.concatenate([[0.0], ts]), np.concatenate([[tv[0]], tv])
        tax.plot(ts, tv, color=sa.TEMPERATURE_COLOUR, lw=1.2, ls=":", label="temperature T", zorder=4,
                 drawstyle="steps-post")
        top = np.nanmax(tv) if np.isfinite(tv).any() else 0.0
        tax.set_ylim(0, top * 1.15 if top > 0 else 1.0)
    tax.set_ylabel("temperature T", color=sa.TEMPERATURE_COLOUR)
    tax.tick_params(axis="y", colors=sa.TEMPERATURE_COLOUR)

    handles, labels = ax.get_legend_handles_labels()
    h2, l2 = tax.get_legend_handles_labels()
    # Above the axes, so it never covers a curve.
    ax.legend(handles + h2, labels + l2, loc="lower center", bbox_to_anchor=(0.5, 1.01), ncol=3,
              frameon=False, fontsize=9)
    fig.suptitle(title, fontsize=10)
    return sa.save(fig, sa.output_prefix(args, args.archive, "loss"), args)


if __name__ == "__main__":
    sa.run_main(main)
