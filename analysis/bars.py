#!/usr/bin/python3
"""Bar chart: Adam, the deep ensemble and simmering, test metric and test NLL for every case.

From archives: test accuracy (classification) or test R² (regression) and the test NLL from
/metrics: baseline_test_<score>_mean ± _sd over the chains (one Adam network; for an ab initio run
the first member of each chain), deep_ensemble_test_<score> (the ensemble of the run's Adam end
points, where the run has one) and ensemble_test_<score> (the run's ensemble; for regression the
NLL is the Gaussian NLL with the noise variance of /metrics). One bar group per archive,
labelled with the archive's file name (or --labels).
From a study table (--table summary.csv, as jobs/study/study.py writes it; columns case, metric,
adam_mean, adam_sd, ensemble_mean, ensemble_sd, n_seeds, beat and, where it has them, deep_mean,
adam_nll, deep_nll, ensemble_nll): mean ± sd over seeds, and "beat" = seeds where the ensemble
beat Adam. Archives and a table can be combined.
Top row: one panel per metric; bottom row: the test NLL of the same cases (lower is better).
Values below the axis limit (e.g. a diverged R² of −228) are clipped and written in the bar.
"""
import csv
import math
import os

import numpy as np

import simmer_archive as sa
from simmer_archive import plt

METRIC_LABELS = {"accuracy": "test accuracy", "r2": "test R²"}
R2_FLOOR = -0.5


def normalise_metric(name):
    key = name.strip().lower().replace("test_", "").replace("²", "2").replace("^", "")
    return {"acc": "accuracy", "r-squared": "r2", "rsquared": "r2"}.get(key, key)


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def from_archive(path, label=None):
    with sa.Archive(path) as ar:
        metric = "accuracy" if ar.task == "classification" else "r2"
        purpose = "the bar chart"
        mean = ar.require_attr(f"baseline_test_{metric}_mean", "metrics", purpose)
        sd = ar.attr(f"baseline_test_{metric}_sd", "metrics", 0.0)
        ens = ar.require_attr(f"ensemble_test_{metric}", "metrics", purpose)
        chains = ar.attr("trajectories")
        value = lambda key: float(ar.attr(key, "metrics", math.nan))  # noqa: E731 (NaN: not in this archive)
        return dict(case=label or ar.name, metric=metric, adam_mean=float(mean), adam_sd=float(sd),
                    ensemble_mean=float(ens), ensemble_sd=math.nan,
                    deep_mean=value(f"deep_ensemble_test_{metric}"), deep_sd=math.nan,
                    adam_nll=value("baseline_test_nll_mean"), adam_nll_sd=value("baseline_test_nll_sd"),
                    deep_nll=value("deep_ensemble_test_nll"), deep_nll_sd=math.nan,
                    ensemble_nll=value("ensemble_test_nll"), ensemble_nll_sd=math.nan,
                    baseline=ar.baseline_label(),
                    note=f"{int(chains)} chains" if chains is not None else "")


def from_table(path):
    if not os.path.exists(path):
        raise sa.ArchiveError(f"{path}: no such file")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"case", "metric", "adam_mean", "adam_sd", "ensemble_mean", "ensemble_sd"}
        missing = need - set(reader.fieldnames or [])
        if missing:
            raise sa.ArchiveError(f"{path}: lacks column(s) {', '.join(sorted(missing))} "
                                  "(expected case,metric,adam_mean,adam_sd,ensemble_mean,ensemble_sd,n_seeds,beat)")
        rows = []
        for row in reader:
            n = row.get("n_seeds", "")
            beat = row.get("beat", "")
            note = f"beat {beat} of {n}" if n not in ("", None) and beat not in ("", None) else \
                (f"{n} seeds" if n else "")
            case = row["case"].strip()
            rows.append(dict(case=case, metric=normalise_metric(row["metric"]),
                             adam_mean=number(row["adam_mean"]), adam_sd=number(row["adam_sd"]),
                             ensemble_mean=number(row["ensemble_mean"]),
                             ensemble_sd=number(row["ensemble_sd"]),
                             **{k: number(row.get(k)) for k in ("deep_mean", "deep_sd", "adam_nll", "adam_nll_sd",
                                                                "deep_nll", "deep_nll_sd", "ensemble_nll",
                                                                "ensemble_nll_sd")},
                             baseline="first member" if "abinitio" in case.replace("_", "").replace(" ", "")
                             else "Adam",
                             note=note))
    if not rows:
        raise sa.ArchiveError(f"{path}: the table has no rows")
    return rows


SERIES = (("adam", "Adam / first member (mean ± sd)", sa.ADAM_COLOUR),
          ("deep", "deep ensemble (the Adam end points)", "#7570b3"),
          ("ensemble", "simmering ensemble", sa.ENSEMBLE_COLOUR))


def draw_panel(ax, rows, metric, nll=False):
    """One panel: a bar per series (Adam, deep ensemble, simmering) per case, of the test metric
    or (nll) the test NLL; a series without values in any row is left out."""
    x = np.arange(len(rows))
    value_of = (lambda r, key: (r.get(f"{key}_nll", math.nan), r.get(f"{key}_nll_sd", math.nan))) if nll else \
        (lambda r, key: (r.get(f"{key}_mean", math.nan), r.get(f"{key}_sd", math.nan)))
    series = []
    for key, label, colour in SERIES:
        values = np.array([value_of(r, key)[0] for r in rows], dtype=float)
        sds = np.array([value_of(r, key)[1] for r in rows], dtype=float)
        if np.isfinite(values).any():
            series.append((values, sds, colour, label + (" (mean ± sd)" if np.isfinite(sds).any() and key != "adam"
                                                         else "")))
    width = 0.8 / max(len(series), 1)
    finite = np.concatenate([v[np.isfinite(v)] for v, *_ in series]) if series else np.array([])
    if nll:
        bottom = min(0.0, finite.min()) if finite.size else 0.0
        top = finite.max() * 1.05 if finite.size and finite.max() > 0 else 1.0
    elif metric == "accuracy":
        low = min(0.0, finite.min()) if finite.size else 0.0
        bottom, top = low, 1.0
    else:
        low = finite.min() if finite.size else 0.0
        bottom = max(min(0.0, low - 0.05), R2_FLOOR)
        top = 1.0
    def shown(values):  # bar heights from 0, clipped at the panel's floor
        return np.clip(np.nan_to_num(values, nan=0.0), bottom, top)

    ceiling = top + 0.12 * (top - bottom)

    def errors(values, sd):
        """Error bars that fit in the panel; none for a missing or clipped value or one whose bar
        would leave the panel (its sd is written in the label instead)."""
        ok = np.isfinite(sd) & np.isfinite(values) & (values >= bottom)
        ok &= (values - np.nan_to_num(sd) >= bottom) & (values + np.nan_to_num(sd) <= ceiling)
        return np.where(ok, sd, 0.0)

    bars = [(x + (i - (len(series) - 1) / 2) * width, values, sds, colour, label)
            for i, (values, sds, colour, label) in enumerate(series)]
    for xs, values, sd, colour, label in bars:
        drawn_sd = errors(values, sd)
        drawn = ax.bar(xs, shown(values), width, color=colour, label=label,
                       yerr=np.where(drawn_sd > 0, drawn_sd, np.nan) if (drawn_sd > 0).any() else None, capsize=3,
                       error_kw=dict(lw=1, ecolor="black"))
        for bar, xi, v, s_, e in zip(drawn, xs, values, sd, drawn_sd):
            text = f"{v:.3g}" if np.isfinite(v) and abs(v) >= 10 else f"{v:.3f}"
            if np.isfinite(s_) and s_ > 0 and e == 0:  # sd not drawn: say it
                text += f" ± {s_:.2g}"
            if not np.isfinite(v):
                ax.annotate("n/a", (xi, max(bottom, 0.0)), xytext=(0, 3), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7.5)
            elif v < bottom:  # clipped: hatch the bar and write the real value inside it
                bar.set_hatch("//")
                bar.set_edgecolor("white")
                ax.annotate(text.replace(" ± ", "\n± ") + "\n(clipped)", (xi, bottom), xytext=(0, 4),
                            textcoords="offset points", ha="center", va="bottom", fontsize=7,
                            bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none"))
            elif v >= 0:
                ax.annotate(text, (xi, v + e), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7, rotation=90)
            else:  # a negative bar: the label above the zero line, where there is room
                ax.annotate(text, (xi, 0.0), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7, rotation=90)
    labels = []
    for r in rows:
        text = r["case"]
        if r["baseline"] != "Adam":
            text += f"\n(vs {r['baseline']})"
        if r["note"]:
            text += f"\n{r['note']}"
        labels.append(text)
    ax.set_xticks(x, labels, fontsize=8, rotation=30 if len(rows) > 4 else 0,
                  ha="right" if len(rows) > 4 else "center")
    ax.set_ylabel("test NLL (lower is better)" if nll else METRIC_LABELS.get(metric, f"test {metric}"))
    ax.set_ylim(bottom, top + 0.2 * (top - bottom))  # room for the value labels
    ax.set_yticks([t for t in ax.get_yticks() if bottom - 1e-9 <= t <= top + 1e-9])
    ax.axhline(top, color="0.6", lw=0.6, ls=":")
    if bottom < 0:
        ax.axhline(0, color="black", lw=0.6)
    ax.grid(axis="y", alpha=0.25)
    ax.set_xlim(-0.6, len(rows) - 0.4)


def main():
    p = sa.parser(__doc__)
    p.add_argument("archives", nargs="*", metavar="RUN.h5", help="simmer archives, one bar pair each")
    p.add_argument("--table", metavar="FILE.csv", help="a study summary (jobs/study/study.py)")
    p.add_argument("--labels", nargs="+", metavar="LABEL", help="labels for the archives, in order")
    p.add_argument("--title", default=None, help="figure title")
    sa.add_output_arguments(p, "bars")
    args = p.parse_args()
    if not args.archives and not args.table:
        p.error("give at least one archive or --table FILE.csv")
    if args.labels and len(args.labels) != len(args.archives):
        p.error(f"--labels: {len(args.labels)} labels for {len(args.archives)} archives")
    if not args.output and not args.archives:
        args.output = os.path.splitext(os.path.basename(args.table))[0] + "_bars"

    rows = []
    for k, path in enumerate(args.archives):
        rows.append(from_archive(path, args.labels[k] if args.labels else None))
    if args.table:
        rows += from_table(args.table)

    metrics = [m for m in ("accuracy", "r2") if any(r["metric"] == m for r in rows)]
    metrics += sorted({r["metric"] for r in rows} - set(metrics))
    counts = [sum(r["metric"] == m for r in rows) for m in metrics]
    with_nll = any(np.isfinite(r.get("ensemble_nll", math.nan)) for r in rows)
    panels = [(m, False) for m in metrics] + ([(m, True) for m in metrics] if with_nll else [])
    if sum(counts) > 12:  # many cases (a study with variants): one panel per row
        fig, grid = plt.subplots(len(panels), 1, figsize=(max(5.0, 1.1 * max(counts) + 2.2), 4.6 * len(panels)),
                                 layout="constrained", squeeze=False)
        cells = [row[0] for row in grid]
    else:
        fig, grid = plt.subplots(2 if with_nll else 1, len(metrics),
                                 figsize=(max(5.0, 1.5 * sum(counts) + 2.2 * len(metrics)), 4.8 * (2 if with_nll else 1)),
                                 gridspec_kw=dict(width_ratios=[max(c, 1.5) for c in counts]),
                                 layout="constrained", squeeze=False)
        cells = list(grid[0]) + (list(grid[1]) if with_nll else [])
    for ax, (metric, nll) in zip(cells, panels):
        draw_panel(ax, [r for r in rows if r["metric"] == metric], metric, nll)
    handles, labels = cells[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, frameon=False, fontsize=9,
               bbox_to_anchor=(0.5, 0.965))
    source = "mean ± sd over seeds" if args.table and not args.archives else "error bars: sd over chains (archives) / seeds (table)"
    if not args.table:
        source = "Adam error bars: sd over chains"
    fig.suptitle(args.title or f"Adam, the deep ensemble and simmering: test metric{' and test NLL' if with_nll else ''} "
                 f"per case ({source})", fontsize=10)
    fig.get_layout_engine().set(rect=(0, 0, 1, 0.93))
    prefix = sa.output_prefix(args, args.archives[0] if args.archives else args.table, "bars")
    return sa.save(fig, prefix, args)


if __name__ == "__main__":
    sa.run_main(main)
