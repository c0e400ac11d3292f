#!/usr/bin/env python3
"""Draws paper figures from `placesim sweep` results (JSONL): a figure against an axis, one line per value of
another axis.

    python3 traces/sweep/plot_sweep.py results.jsonl --x strategy.dp --y memory.total_bytes --hue strategy.preset \
        --size column --out memory.pdf --out memory.png

Each row's "point" gives the axis columns (e.g. strategy.dp); the figures are the row's other keys (e.g.
memory.total_bytes, simulation.step_time_s). Several --y draw panels that share one legend, where each --hue value
keeps one colour and marker. When other axes vary too, each (hue, x) cell is reduced with --agg (min by default:
the best configuration at that x). Files given twice and rows read twice count once; rows of different sweeps are
refused unless --allow-mixed. Needs Debian's python3-matplotlib and python3-pandas: under another interpreter that
lacks them the script re-runs itself with /usr/bin/python3.
"""
import argparse
import math
import os
import re
import sys

DEBIAN_PYTHON = "/usr/bin/python3"
REEXEC_GUARD = "PLACESIM_PLOT_REEXEC"  # set in the re-run's environment so that it never loops


def reexec_target(have_libraries, executable, candidate=DEBIAN_PYTHON, exists=os.path.exists, environ=None):
    """The interpreter to re-run this script under, or None: Debian's python when matplotlib or pandas cannot be
    imported here, this is not already it, it exists, and this is not already a re-run."""
    environ = os.environ if environ is None else environ
    if have_libraries or environ.get(REEXEC_GUARD) or not exists(candidate):
        return None
    if os.path.realpath(executable) == os.path.realpath(candidate):
        return None
    return candidate


try:
    import matplotlib
    import pandas as pd
except ImportError as missing:
    if __name__ != "__main__":
        raise
    target = reexec_target(False, sys.executable)
    if target:
        os.environ[REEXEC_GUARD] = "1"
        os.execv(target, [target, os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit(f"plot_sweep.py: {missing}. It needs Debian's matplotlib and pandas: "
             f"apt-get install python3-matplotlib python3-pandas, then run it with {DEBIAN_PYTHON}")

import matplotlib.lines  # noqa: E402
import matplotlib.ticker  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))
from placesim._results import ResultsError, frame_of, load  # noqa: E402

PROG = "plot_sweep.py"

# Okabe-Ito colours (told apart with colour-blindness; the yellow is left out, it vanishes on white), with markers
# cycling alongside so that lines stay apart in greyscale print and where they overlap.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
MARKERS = "os^Dv<>PX*"

# Display units: name -> (divisor, text).
UNITS = {"GB": (1e9, "GB"), "PFLOP": (1e15, "PFLOP"), "s": (1.0, "s"), "tokens/s": (1.0, "tokens/s"),
         "TFLOP/s": (1.0, "TFLOP/s"), "": (1.0, "")}

# Readable names of fields: path -> (text, unit name).
FIELDS = {
    "model": ("model", ""),
    "model.seq_len": ("sequence length [tokens]", ""),
    "model.layers": ("layers", ""),
    "model.hidden": ("hidden size", ""),
    "strategy": ("strategy", ""),
    "strategy.preset": ("strategy", ""),
    "strategy.dp": ("data-parallel degree", ""),
    "strategy.tp": ("tensor-parallel degree", ""),
    "strategy.pp": ("pipeline stages", ""),
    "strategy.cp": ("context-parallel degree", ""),
    "strategy.schedule": ("pipeline schedule", ""),
    "training.micro_batch": ("micro-batch size [sequences]", ""),
    "training.global_batch": ("global batch [sequences]", ""),
    "training.recompute": ("activation recomputation", ""),
    "training.dtype": ("precision", ""),
    "cluster": ("cluster", ""),
    "cluster.preset": ("cluster", ""),
    "cluster.nodes": ("nodes", ""),
    "memory.total_bytes": ("memory per GPU", "GB"),
    "memory.model_states_bytes": ("model-state memory per GPU", "GB"),
    "memory.parameters_bytes": ("parameter memory per GPU", "GB"),
    "memory.gradients_bytes": ("gradient memory per GPU", "GB"),
    "memory.optimizer_bytes": ("optimizer-state memory per GPU", "GB"),
    "memory.activations_bytes": ("activation memory per GPU", "GB"),
    "memory.buffers_bytes": ("buffer memory per GPU", "GB"),
    "memory.host_bytes": ("host memory per GPU", "GB"),
    "communication.bytes_per_step": ("bytes sent per GPU per step", "GB"),
    "compute.model_flops_per_step": ("model FLOPs per step", "PFLOP"),
    "compute.hardware_flops_per_step": ("hardware FLOPs per step", "PFLOP"),
    "simulation.step_time_s": ("step time", "s"),
    "simulation.mfu": ("MFU", ""),
    "simulation.hfu": ("HFU", ""),
    "simulation.tokens_per_s": ("throughput", "tokens/s"),
    "simulation.exposed_communication_s": ("exposed communication per step", "s"),
    "simulation.model_tflops_per_gpu": ("model TFLOP/s per GPU", "TFLOP/s"),
    "simulation.peak_memory_bytes.total": ("peak memory per GPU", "GB"),
}

# Sizes by name: width in inches (a two-column paper's column and its full text width), panel height, font size.
SIZES = {"column": (3.5, 2.3, 8), "page": (7.0, 2.6, 8)}


def unit_of(path):
    """(divisor, unit text) a field is shown in: bytes in GB, FLOPs in PFLOP, seconds, rates."""
    if path in FIELDS:
        return UNITS[FIELDS[path][1]]
    last = path.rsplit(".", 1)[-1]
    if "bytes" in last:
        return UNITS["GB"]
    if last.endswith("tflops_per_gpu"):
        return UNITS["TFLOP/s"]
    if "flops" in last:
        return UNITS["PFLOP"]
    if last.endswith("_per_s"):
        return 1.0, "/s"
    if last.endswith("_s") or last.endswith("_time"):
        return UNITS["s"]
    return UNITS[""]


def label(path, overrides=None, unit=True):
    """The axis label of a field: the --label override, the name in FIELDS, or a readable form of the last path
    component ("per_stage.0.activations_bytes" -> "activations"); with its unit in brackets."""
    if overrides and path in overrides:
        return overrides[path]
    if path in FIELDS:
        text = FIELDS[path][0]
    elif path.startswith("strategy.placement."):
        text = path.rsplit(".", 1)[-1].replace("_", " ") + " placement"
    else:
        last = path.rsplit(".", 1)[-1]
        text = re.sub(r"_(bytes|s|time_s)$", "", last).replace("_", " ")
    shown = unit_of(path)[1]
    return f"{text} [{shown}]" if unit and shown else text


def format_bytes(value):
    """80 GiB for a multiple of 2^30, else decimal GB: 80 GB, 85.9 GB."""
    if value > 0 and value % 2**30 == 0:
        return f"{value / 2**30:g} GiB"
    return f"{value / 1e9:.3g} GB"


def parse_size(text):
    """Bytes of "80GB", "80 GiB", "8.5e10" (as placesim reads --device-memory: GB = 1e9, GiB = 2^30)."""
    m = re.fullmatch(r"\s*([0-9.]+(?:[eE][-+]?[0-9]+)?)\s*([kKMGTP]i?B|B)?\s*", text)
    scale = {None: 1, "B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
             "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
    if not m or m.group(2) not in scale:
        raise ValueError(f"--device-memory={text}: not a size like 80GB or 80GiB")
    return float(m.group(1)) * scale[m.group(2)]


def is_memory_figure(path):
    """A per-GPU memory figure, against which the GPU's memory is drawn (host memory is not)."""
    return ((path.startswith("memory.") and "bytes" in path and path != "memory.host_bytes")
            or path.startswith("simulation.peak_memory_bytes"))


def memory_limit(frame, override=None, warn=None):
    """The GPU memory to draw: --device-memory (bytes) when given, else the rows' device_memory_bytes when they
    all agree, else None."""
    if override is not None:
        return override
    # "device_memory": the --device-memory a sweep ran with (every row); "device_memory_bytes": the figure (the
    # cluster's GPU, or that override).
    column = next((c for c in ("device_memory", "device_memory_bytes") if c in frame and frame[c].notna().any()),
                  None)
    if column is None:
        return None
    values = frame[column].dropna().unique()
    if len(values) == 1:
        return float(values[0])
    if len(values) > 1 and warn:
        warn(f"{PROG}: the rows were checked against {len(values)} different GPU memories; no limit drawn "
             "(--device-memory SIZE draws one)")
    return None


def numeric(frame, column):
    return pd.api.types.is_numeric_dtype(frame[column]) and not pd.api.types.is_bool_dtype(frame[column])


def ordered_values(frame, column):
    """The values of an axis in order: ascending when numeric, else as the sweep lists them (by point index)."""
    values = frame[column].dropna()
    if numeric(frame, column):
        return sorted(values.unique().tolist())
    return list(dict.fromkeys(values.tolist()))


def colour_map(values):
    """value -> (colour, marker), the same in every panel: the k-th value gets the k-th colour and marker."""
    return {v: (PALETTE[k % len(PALETTE)], MARKERS[k % len(MARKERS)]) for k, v in enumerate(values)}


def series(frame, x, y, hue=None, agg="min"):
    """What one panel draws: hue value -> (xs, ys) in raw units, hue values in order (None without --hue). Each
    (hue, x) cell is reduced with agg; agg "none" keeps every row."""
    data = frame.dropna(subset=[y])
    keys = ordered_values(data, hue) if hue is not None else [None]
    x_order = ordered_values(frame, x)
    out = {}
    for key in keys:
        group = data if key is None else data[data[hue] == key]
        if group.empty:
            continue
        if agg == "none":
            out[key] = (group[x].tolist(), group[y].tolist())
            continue
        cells = group.groupby(x, sort=False)[y].agg(agg)
        xs = [v for v in x_order if v in cells.index]
        out[key] = (xs, [float(cells[v]) for v in xs])
    return out


def spans_decades(values):
    positive = [v for v in values if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
    return len(positive) > 1 and max(positive) / min(positive) >= 100


def power_of_two(v):
    return isinstance(v, (int, float)) and v > 0 and math.isfinite(v) and math.frexp(v)[0] == 0.5


def x_scale(frame, x, logx=False, linear=False):
    """None (linear) or the log base of the x axis: 2 for three or more powers of two (1, 2, 4, ... evenly apart)
    or values spanning 100x that are all powers of two, 10 for other values spanning 100x."""
    if not numeric(frame, x):
        return None
    values = [v for v in frame[x].dropna().unique().tolist()]
    twos = bool(values) and all(power_of_two(v) for v in values)
    if logx or (not linear and ((twos and len(values) >= 3) or spans_decades(values))):
        return 2 if twos else 10
    return None


def figure_layout(size, panels, font=None):
    """(width, panel height, columns, font size, total height or None) of a figure; size is None (a screen figure
    5.5 in wide per panel and 4 in tall), "column", "page" or "WxH" inches (H the whole figure's height)."""
    if size is None:
        return 5.5 * panels, 4.0, panels, font or 10, 4.0
    if size in SIZES:
        width, panel_height, base = SIZES[size]
        total = None
    else:
        m = re.fullmatch(r"\s*([0-9.]+)\s*x\s*([0-9.]+)\s*", size)
        if not m or float(m.group(1)) <= 0 or float(m.group(2)) <= 0:
            raise ValueError(f"--size={size}: expected column, page or WxH in inches (e.g. 3.5x2.5)")
        width, total = float(m.group(1)), float(m.group(2))
        panel_height, base = None, 8 if width <= 4 else 9 if width <= 7.5 else 10
    columns = 1 if width < 4.5 else min(panels, 3)
    return width, panel_height, columns, font or base, total


def legend_rows(labels, width, font):
    """(columns, rows) of a legend of these entries across a figure width in inches."""
    if not labels:
        return 1, 0
    entry = (max(len(s) for s in labels) * 0.55 * font + 3.2 * font) / 72
    cols = max(1, min(len(labels), int(width * 0.95 / entry)))
    rows = math.ceil(len(labels) / cols)
    return math.ceil(len(labels) / rows), rows  # balanced: matplotlib fills a legend column by column


def draw_panel(ax, frame, args, y, colours, limit, x_positions, log_x):
    """One panel: a line (or scatter) per hue value in its colour, the GPU memory on memory figures."""
    divisor, _ = unit_of(y)
    data = frame.dropna(subset=[y])
    log_y = args.logy or (not args.linear and spans_decades(list(data[y])))
    if log_y and (data[y] <= 0).any():
        print(f"{PROG}: {int((data[y] <= 0).sum())} rows with {y} <= 0 left out of the log scale", file=sys.stderr)
        data = data[data[y] > 0]
    for key, (xs, ys) in series(data, args.x, y, args.hue, args.agg).items():
        colour, marker = colours.get(key, (PALETTE[0], MARKERS[0]))
        xs = [x_positions[v] for v in xs] if x_positions else xs
        ys = [v / divisor for v in ys]
        if args.agg == "none":
            ax.scatter(xs, ys, color=colour, marker=marker, s=12, linewidths=0.6, label=str(key), gid="series")
        else:
            ax.plot(xs, ys, color=colour, marker=marker, label=str(key), gid="series")
    drew_limit = limit is not None and is_memory_figure(y)
    if drew_limit:
        ax.axhline(limit / divisor, linestyle="--", color="0.25", linewidth=1.0, zorder=1, gid="device_memory")
    ax.set_ylabel(label(y, args.labels))
    if log_x:
        ax.set_xscale("log", base=log_x)
        ticks = ordered_values(frame, args.x)
        if len(ticks) <= 12:
            ax.set_xticks(ticks)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    if x_positions:
        ax.set_xticks(list(x_positions.values()))
        ax.set_xticklabels([str(v) for v in x_positions], rotation=30 if len(x_positions) > 4 else 0,
                           ha="right" if len(x_positions) > 4 else "center")
    if log_y:
        ax.set_yscale("log")
    ax.grid(True, which="major", alpha=0.3, linewidth=0.5)
    return drew_limit


def legend_handles(colours, args, limit_label):
    handles = [matplotlib.lines.Line2D([], [], color=c, marker=m, linestyle="none" if args.agg == "none" else "-",
                                       label=str(v)) for v, (c, m) in colours.items()]
    if limit_label:
        handles.append(matplotlib.lines.Line2D([], [], color="0.25", linestyle="--", linewidth=1.0,
                                               label=limit_label))
    return handles


def rc_for(font):
    """Font and line sizes for a base font size in points (8 suits a column or page figure, 10 a screen)."""
    small = font <= 9
    return {"font.size": font, "axes.labelsize": font, "axes.titlesize": font, "xtick.labelsize": font - 1,
            "ytick.labelsize": font - 1, "legend.fontsize": font - 1, "legend.title_fontsize": font - 1,
            "figure.titlesize": font + 1, "lines.linewidth": 1.2 if small else 1.5,
            "lines.markersize": 3.5 if small else 5, "axes.linewidth": 0.6 if small else 0.8,
            "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path"}


def build_figure(frame, args, warn=None):
    """The whole figure: panels for every --y, one legend above them; returns the matplotlib Figure."""
    warn = warn or (lambda m: print(m, file=sys.stderr))
    width, panel_height, columns, font, total = figure_layout(args.size, len(args.y))
    with plt.rc_context(rc_for(font)):
        # Only the hue values that have something to draw in some panel get a colour and a legend entry.
        drawn = frame[frame[[y for y in args.y if y in frame]].notna().any(axis=1)] if any(
            y in frame for y in args.y) else frame.iloc[0:0]
        if drawn.empty:
            sys.exit(f"{PROG}: no row has {' or '.join(args.y)} to draw (filtered and error rows carry no figures; "
                     "invalid rows only when they were analyzed)")
        colours = colour_map(ordered_values(drawn, args.hue)) if args.hue is not None else {}
        limit = memory_limit(frame, args.device_memory, warn)
        limit_label = (f"GPU memory ({format_bytes(limit)})"
                       if limit is not None and any(is_memory_figure(y) for y in args.y) else None)
        handles = legend_handles(colours, args, limit_label) if (colours or limit_label) else []
        title = label(args.hue, args.labels) if args.hue is not None else None
        cols, rows = legend_rows([h.get_label() for h in handles], width, font - 1)
        legend_h = (rows + (1 if title else 0)) * (font - 1) * 1.45 / 72 + 0.08 if handles else 0.0
        panel_rows = math.ceil(len(args.y) / columns)
        if total is None:
            total = panel_rows * panel_height + legend_h + (0.3 if args.title else 0)
        fig = plt.figure(figsize=(width, total), layout="constrained")
        ratios = ([legend_h] if handles else []) + [max(total - legend_h, 0.5) / panel_rows] * panel_rows
        grid = fig.add_gridspec(len(ratios), columns, height_ratios=ratios)
        first = 1 if handles else 0
        x_categorical = not numeric(frame, args.x)
        x_positions = {v: k for k, v in enumerate(ordered_values(frame, args.x))} if x_categorical else None
        log_x = None if x_categorical else x_scale(frame, args.x, args.logx, args.linear)
        panels = []
        for k, y in enumerate(args.y):
            share = panels[0] if panels and columns == 1 else None
            ax = fig.add_subplot(grid[first + k // columns, k % columns], sharex=share)
            draw_panel(ax, frame, args, y, colours, limit, x_positions, log_x)
            last_row = k + columns >= len(args.y)
            if last_row:
                ax.set_xlabel(label(args.x, args.labels))
            else:
                ax.tick_params(labelbottom=columns > 1)
                if columns > 1:
                    ax.set_xlabel(label(args.x, args.labels))
            panels.append(ax)
        if handles:
            legend_ax = fig.add_subplot(grid[0, :])
            legend_ax.axis("off")
            legend_ax.legend(handles=handles, title=title, loc="center", ncol=cols, frameon=False,
                             borderaxespad=0, handlelength=2.2, columnspacing=1.2, borderpad=0)
        if args.title:
            fig.suptitle(args.title)
        fig.get_layout_engine().set(w_pad=0.02, h_pad=0.02, hspace=0.03, wspace=0.03)
    return fig


FORMATS = (".png", ".pdf", ".svg")


def save(fig, outputs, font_rc):
    """Writes the figure to every output, the format by the extension; PNG at 300 dpi. The PDF carries no
    creation date, so that an unchanged figure is an unchanged file."""
    for out in outputs:
        ext = os.path.splitext(out)[1].lower()
        metadata = {"CreationDate": None} if ext == ".pdf" else {"Date": None} if ext == ".svg" else None
        with plt.rc_context(font_rc):
            fig.savefig(out, dpi=300, metadata=metadata)


def parse_labels(pairs):
    labels = {}
    for pair in pairs:
        path, sep, text = pair.partition("=")
        if not sep or not path:
            raise ValueError(f"--label {pair}: expected PATH=TEXT, e.g. --label strategy.dp='GPUs'")
        labels[path] = text
    return labels


STATUSES = {"ok": {"ok"}, "invalid": {"invalid"}, "all": {"ok", "invalid"}, "filtered": {"filtered"},
            "error": {"error"}}


def select_status(frame, status):
    """The rows --status draws: "all" is ok and invalid; filtered points (skipped by the sweep's filters, without
    figures) only with --status filtered. Rows without a status (none are written so) are kept."""
    if "status" not in frame:
        return frame
    return frame[frame["status"].isin(STATUSES[status]) | frame["status"].isna()]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", help="JSONL files written by placesim sweep (shards may be given together)")
    p.add_argument("--x", help="axis on the horizontal axis (default: the first numeric axis that varies)")
    p.add_argument("--y", action="append", default=[], help="figure to draw; repeat for more panels")
    p.add_argument("--hue", help="axis with one line per value (default: the first other axis that varies)")
    p.add_argument("--agg", default="min", choices=["min", "max", "mean", "median", "none"],
                   help="reduces the rows of one (hue, x) cell when other axes vary; none draws every row")
    p.add_argument("--status", default="ok", choices=list(STATUSES),
                   help="rows to draw: ok (default), invalid, all (ok and invalid), filtered (the points the sweep's "
                        "filters skipped), error")
    p.add_argument("--allow-mixed", action="store_true", help="combine rows of different sweeps")
    p.add_argument("--device-memory", metavar="SIZE",
                   help="GPU memory drawn as a dashed line on memory panels, e.g. 80GB or 80GiB (default: the rows' "
                        "device_memory_bytes when they agree)")
    p.add_argument("--label", action="append", default=[], metavar="PATH=TEXT",
                   help="axis or legend title of a field, e.g. --label 'strategy.dp=GPUs' (repeatable)")
    p.add_argument("--logx", action="store_true", help="logarithmic x (automatic: powers of two, or a 100x span)")
    p.add_argument("--logy", action="store_true", help="logarithmic y (automatic when values span 100x)")
    p.add_argument("--linear", action="store_true", help="no automatic log axes (--logx/--logy still apply)")
    p.add_argument("--size", help="column (3.5 in wide), page (7 in) or WxH in inches (default: 5.5 x 4 per panel)")
    p.add_argument("--title", help="figure title")
    p.add_argument("--out", action="append", default=[],
                   help="output file: .pdf, .png (300 dpi) or .svg by its extension (repeatable)")
    args = p.parse_args(argv)
    try:
        args.labels = parse_labels(args.label)
        args.device_memory = parse_size(args.device_memory) if args.device_memory else None
        if args.size is not None:
            figure_layout(args.size, 1)
    except ValueError as e:
        p.error(str(e))
    for out in args.out:
        if os.path.splitext(out)[1].lower() not in FORMATS:
            p.error(f"--out {out}: the extension must be one of {', '.join(FORMATS)}")
    return args


def load_frame(paths, allow_mixed=False, warn=None):
    """The rows of the results files as a DataFrame (each file and point once) and the axis paths."""
    warn = warn or (lambda m: print(m, file=sys.stderr))
    loaded = load(paths, allow_mixed=allow_mixed, warn=warn, prog=PROG)
    if not loaded.records:
        raise ResultsError("no rows in " + ", ".join(paths))
    frame = frame_of(loaded)
    if "points" in frame and "sweep" in frame:
        for sweep, rows in frame.groupby("sweep"):
            points = rows["points"].dropna()
            if len(points) and len(rows) < points.iloc[0]:
                warn(f"{PROG}: sweep {sweep}: {len(rows)} of {int(points.iloc[0])} points present (a shard or an "
                     "unfinished run)")
    return frame, loaded.axes


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
            known = ", ".join(list(axes) + frame.attrs.get("figures", []))
            raise ResultsError(f"no column {column!r} in the results (columns: {known})")


def main(argv):
    args = parse_args(argv)
    try:
        frame, axes = load_frame(args.results, args.allow_mixed)
        defaults(frame, axes, args)
    except (ResultsError, OSError) as e:
        sys.exit(f"{PROG}: {e}")
    frame = select_status(frame, args.status)
    if frame.empty:
        sys.exit(f"{PROG}: no rows with status {' or '.join(sorted(STATUSES[args.status]))} to draw "
                 "(--status all draws ok and invalid rows)")
    fig = build_figure(frame, args)
    outputs = args.out or [os.path.splitext(args.results[0])[0] + ".png"]
    save(fig, outputs, rc_for(figure_layout(args.size, len(args.y))[3]))
    print(f"{PROG}: {len(frame)} rows, {args.y} against {args.x} by {args.hue} -> {', '.join(outputs)}",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
