#!/usr/bin/env python3
"""Draws paper figures from `placesim sweep` results (JSONL): a figure against an axis, one line per value of
another axis.

    python3 traces/sweep/plot_sweep.py results.jsonl --x strategy.dp --y memory.total_bytes --hue strategy.preset \
        --out memory.png --out memory.svg

Each row's "point" gives the axis columns (e.g. strategy.dp); the figures are the row's other keys (e.g.
memory.total_bytes, simulation.step_time_s). Several --y draw side-by-side panels. When other axes vary too, each
(hue, x) cell is reduced with --agg (min by default: the best configuration at that x). Only rows with status
"ok" are drawn unless --status all. Needs Debian's python3-matplotlib and python3-pandas.
"""
import argparse
import json
import math
import sys

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import pandas as pd  # noqa: E402

# Markers cycle so that lines stay apart in print and where they overlap.
MARKERS = "os^Dv<>PX*"

# Display units by a part of a report field's name: (part, divisor, unit), first match wins.
UNITS = [("bytes", 1e9, "GB"), ("flops", 1e15, "PFLOP"), ("_per_s", 1.0, "/s"), ("_time_s", 1.0, "s")]


def load(paths):
    """Rows of the results files as a DataFrame, and the axis paths in the order the sweep wrote them."""
    records, axes = [], []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"plot_sweep.py: {path}:{number}: not a JSON line ({e})")
                point = row.pop("point", {})
                for key in point:
                    if key not in axes:
                        axes.append(key)
                record = {k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in point.items()}
                record.update(row)
                records.append(record)
    if not records:
        sys.exit("plot_sweep.py: no rows in " + ", ".join(paths))
    return pd.DataFrame.from_records(records), axes


def numeric(frame, column):
    return pd.api.types.is_numeric_dtype(frame[column]) and not pd.api.types.is_bool_dtype(frame[column])


def defaults(frame, axes, args):
    """Fills --x, --y and --hue left out: the first numeric axis that varies, the simulated step time or the memory,
    and the first other axis that varies."""
    varying = [a for a in axes if frame[a].nunique(dropna=True) > 1]
    if args.x is None:
        candidates = [a for a in varying if numeric(frame, a)] or varying or axes
        args.x = candidates[0]
    if not args.y:
        args.y = ["simulation.step_time_s"] if "simulation.step_time_s" in frame else ["memory.total_bytes"]
    if args.hue is None:
        others = [a for a in varying if a != args.x and not numeric(frame, a)] or [a for a in varying if a != args.x]
        args.hue = others[0] if others else None
    for column in [args.x, args.hue] + args.y:
        if column is not None and column not in frame:
            known = ", ".join(list(axes) + [c for c in frame.columns if "." in c and c not in axes])
            sys.exit(f"plot_sweep.py: no column {column!r} in the results (columns: {known})")


def unit_of(column):
    for part, divisor, unit in UNITS:
        if part in column:
            return divisor, unit
    return 1.0, ""


def spans_decades(values):
    positive = [v for v in values if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
    return len(positive) > 1 and max(positive) / min(positive) >= 100


def draw_panel(ax, frame, args, y):
    divisor, unit = unit_of(y)
    data = frame.dropna(subset=[y])
    log_y = args.logy or spans_decades(list(data[y]))
    if log_y and (data[y] <= 0).any():
        print(f"plot_sweep.py: {int((data[y] <= 0).sum())} rows with {y} <= 0 left out of the log scale")
        data = data[data[y] > 0]
    # Lines in the order the sweep lists the hue's values, as its legend should read.
    groups = [(None, data)] if args.hue is None else list(data.groupby(args.hue, sort=False))
    for k, (name, group) in enumerate(groups):
        label, marker = None if name is None else str(name), MARKERS[k % len(MARKERS)]
        if args.agg == "none":
            ax.scatter(group[args.x], group[y] / divisor, label=label, marker=marker, s=14)
            continue
        cells = group.groupby(args.x, sort=True)[y].agg(args.agg)
        ax.plot(cells.index, cells.values / divisor, marker=marker, markersize=5, label=label)
    ax.set_xlabel(args.x)
    ax.set_ylabel(f"{y} [{unit}]" if unit else y)
    if numeric(frame, args.x) and spans_decades(list(frame[args.x])):
        ax.set_xscale("log", base=2)
        ticks = sorted(frame[args.x].unique())
        if len(ticks) <= 16:
            ax.set_xticks(ticks)
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    if log_y:
        ax.set_yscale("log")
    ax.grid(True, which="major", alpha=0.3)
    if args.hue is not None:
        ax.legend(title=args.hue, fontsize="small")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", help="JSONL files written by placesim sweep (shards may be given together)")
    p.add_argument("--x", help="axis on the horizontal axis (default: the first numeric axis that varies)")
    p.add_argument("--y", action="append", default=[], help="figure to draw; repeat for side-by-side panels")
    p.add_argument("--hue", help="axis with one line per value (default: the first other axis that varies)")
    p.add_argument("--agg", default="min", choices=["min", "max", "mean", "median", "none"],
                   help="reduces the rows of one (hue, x) cell when other axes vary; none draws every row")
    p.add_argument("--status", default="ok", choices=["ok", "all"], help="rows to draw (default: ok only)")
    p.add_argument("--logy", action="store_true", help="logarithmic y (automatic when values span 100x)")
    p.add_argument("--title", help="figure title")
    p.add_argument("--out", action="append", default=[], help="output file, .png/.svg/.pdf (repeatable)")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    frame, axes = load(args.results)
    defaults(frame, axes, args)
    if args.status == "ok" and "status" in frame:
        frame = frame[frame["status"] == "ok"]
    if frame.empty:
        sys.exit("plot_sweep.py: no rows with status ok to draw (--status all draws the invalid ones too)")
    fig, panels = plt.subplots(1, len(args.y), figsize=(5.5 * len(args.y), 4), squeeze=False)
    for ax, y in zip(panels[0], args.y):
        draw_panel(ax, frame, args, y)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    outputs = args.out or [args.results[0].rsplit(".", 1)[0] + ".png"]
    for out in outputs:
        fig.savefig(out, dpi=150)
    print(f"plot_sweep.py: {len(frame)} rows, {args.y} against {args.x} by {args.hue} -> {', '.join(outputs)}")


if __name__ == "__main__":
    main(sys.argv[1:])
