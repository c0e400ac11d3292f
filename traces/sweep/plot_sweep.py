#!/usr/bin/env python3
"""Draws paper figures from `placesim sweep` results (JSONL): a figure against an axis, one line per value of
another axis, in a grid of panels by the values of up to two more axes.

    python3 traces/sweep/plot_sweep.py results.jsonl --x strategy.dp --y memory.total_bytes --hue strategy.preset \
        --size column --out memory.pdf --out memory.png
    python3 traces/sweep/plot_sweep.py results.jsonl --x training.global_batch --y simulation.step_time_s \
        --hue training.micro_batch --col strategy.pp --where strategy.tp=2 --where 'model.seq_len<=4096'

Each row's "point" gives the axis columns (e.g. strategy.dp); the figures are the row's other keys (e.g.
memory.total_bytes, simulation.step_time_s).

Rows: --where AXIS=V, AXIS=V1,V2, AXIS<=V, AXIS>=V, AXIS<V or AXIS>V keeps the rows that match (repeatable, all
must hold; quote < and > in a shell); an axis or figure the rows lack, or a value no row has, is refused (exit 2)
naming the axes or the values present. Files given twice and rows read twice count once; rows of different sweeps
are refused unless --allow-mixed.

Panels: one per --y, sharing one legend, where each --hue value keeps one colour and marker. --col AXIS draws a
column of panels per value of AXIS and the --y panels become rows; --row AXIS a row per value, and the --y panels
become columns; --col and --row together take one --y. Panels of one --y share its scale, all panels share x.

Reduction: when an axis other than --x, --hue, --col and --row still takes several values within one point, the
point is the --agg of those rows (min by default: the best configuration at that x); a warning on stderr and a
footnote in the figure name those axes and their values (--no-note leaves the footnote out). Fix such an axis with
--where, or show it with --hue, --col or --row.

Labels: FIELDS below names fields with units (bytes in GB, fractions in %, FLOPs in PFLOP) and scales the values
drawn; other paths read as their last component; --label PATH=TEXT overrides a name.

Needs Debian's python3-matplotlib and python3-pandas: under another interpreter that lacks them the script re-runs
itself with /usr/bin/python3.
"""
import argparse
import collections
import difflib
import math
import os
import re
import sys
import textwrap

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
import numpy as np  # noqa: E402  (a dependency of pandas)

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

# Display units: name -> (divisor, text); a value is drawn as value / divisor.
UNITS = {"GB": (1e9, "GB"), "MB": (1e6, "MB"), "GB/s": (1e9, "GB/s"), "PFLOP": (1e15, "PFLOP"),
         "billions": (1e9, "billions"), "%": (0.01, "%"), "s": (1.0, "s"), "tokens/s": (1.0, "tokens/s"),
         "TFLOP/s": (1.0, "TFLOP/s"), "": (1.0, "")}

# Readable names of fields: path -> (text, unit name[, short name for panel titles and footnotes]). The one table
# of names: axes first, then the figures rows carry (the sweep's defaults memory.total_bytes,
# memory.model_states_bytes, communication.bytes_per_step, compute.model_flops_per_step, device_memory_bytes, and in
# simulate mode simulation.step_time_s, simulation.mfu, simulation.tokens_per_s), then other report figures.
FIELDS = {
    "model": ("model", ""),
    "model.name": ("model", ""),
    "model.seq_len": ("sequence length [tokens]", "", "sequence"),
    "model.layers": ("layers", ""),
    "model.hidden": ("hidden size", ""),
    "model.ffn": ("feed-forward size", ""),
    "model.heads": ("attention heads", ""),
    "model.kv_heads": ("key-value heads", ""),
    "model.vocab": ("vocabulary size", ""),
    "model.parameters": ("parameters", "billions"),
    "strategy": ("strategy", ""),
    "strategy.preset": ("strategy", ""),
    "strategy.dp": ("data-parallel degree", "", "dp"),
    "strategy.tp": ("tensor-parallel degree", "", "tp"),
    "strategy.pp": ("pipeline stages", "", "pp"),
    "strategy.cp": ("context-parallel degree", "", "cp"),
    "strategy.sp": ("sequence parallelism", ""),
    "strategy.devices": ("GPUs", ""),
    "strategy.schedule": ("pipeline schedule", "", "schedule"),
    "strategy.chunks": ("model chunks per GPU", ""),
    "strategy.microbatches": ("micro-batches per step", "", "micro-batches"),
    "strategy.collective": ("collective algorithm", ""),
    "strategy.bucket_bytes": ("gradient bucket", "MB"),
    "strategy.placement_short": ("placement", ""),
    "training.micro_batch": ("micro-batch size [sequences]", "", "micro-batch"),
    "training.global_batch": ("global batch [sequences]", "", "global batch"),
    "training.recompute": ("activation recomputation", "", "recompute"),
    "training.dtype": ("precision", ""),
    "training.optimizer": ("optimizer", ""),
    "cluster": ("cluster", ""),
    "cluster.preset": ("cluster", ""),
    "cluster.nodes": ("nodes", ""),
    "cluster.gpus_per_node": ("GPUs per node", ""),
    "cluster.fabric": ("fabric", ""),
    "cluster.nic_bw": ("NIC bandwidth", "GB/s"),
    "device_memory_bytes": ("GPU memory", "GB"),
    "memory.total_bytes": ("memory per GPU", "GB"),
    "memory.model_states_bytes": ("model-state memory per GPU", "GB"),
    "memory.parameters_bytes": ("parameter memory per GPU", "GB"),
    "memory.gradients_bytes": ("gradient memory per GPU", "GB"),
    "memory.optimizer_bytes": ("optimizer-state memory per GPU", "GB"),
    "memory.activations_bytes": ("activation memory per GPU", "GB"),
    "memory.buffers_bytes": ("buffer memory per GPU", "GB"),
    "memory.host_bytes": ("host memory per GPU", "GB"),
    "communication.bytes_per_step": ("bytes sent per GPU per step", "GB"),
    "communication.by_class.dp_grad_sync": ("gradient-sync bytes per GPU per step", "GB"),
    "communication.by_class.tp_collective": ("tensor-parallel bytes per GPU per step", "GB"),
    "communication.by_class.pp_p2p": ("pipeline send bytes per GPU per step", "GB"),
    "communication.by_class.zero_gather": ("ZeRO gather bytes per GPU per step", "GB"),
    "communication.by_class.cp_kv": ("context-parallel KV bytes per GPU per step", "GB"),
    "communication.by_class.embedding_sync": ("embedding-sync bytes per GPU per step", "GB"),
    "compute.model_flops_per_step": ("model FLOPs per step", "PFLOP"),
    "compute.hardware_flops_per_step": ("hardware FLOPs per step", "PFLOP"),
    "compute.hardware_flops_per_device_max": ("hardware FLOPs of the busiest GPU per step", "PFLOP"),
    "compute.tokens_per_step": ("tokens per step", ""),
    "simulation.step_time_s": ("step time", "s"),
    "simulation.mfu": ("MFU", "%"),
    "simulation.hfu": ("HFU", "%"),
    "simulation.tokens_per_s": ("throughput", "tokens/s"),
    "simulation.exposed_communication_s": ("exposed communication per step", "s"),
    "simulation.model_tflops_per_gpu": ("model TFLOP/s per GPU", "TFLOP/s"),
    "simulation.hardware_tflops_per_gpu": ("hardware TFLOP/s per GPU", "TFLOP/s"),
    "simulation.peak_memory_bytes.total": ("peak memory per GPU", "GB"),
    "simulation.memory_headroom.spare_bytes": ("spare memory per GPU", "GB"),
    "simulation.bytes_sent.total": ("bytes sent per step", "GB"),
    "simulation.wall_time_s": ("simulator wall time", "s"),
    "pipeline.microbatches": ("micro-batches per step", "", "micro-batches"),
    "pipeline.stages": ("pipeline stages", "", "pp"),
    "pipeline.schedule": ("pipeline schedule", ""),
    "pipeline.schedule_bubble_fraction_mean": ("schedule bubble", "%"),
    "pipeline.span_s": ("pipeline span", "s"),
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


def short_label(path, overrides=None):
    """The name of an axis in a panel title or the footnote: the --label override, the short name in FIELDS ("dp"),
    else the label without its unit."""
    if overrides and path in overrides:
        return overrides[path]
    if path in FIELDS and len(FIELDS[path]) > 2:
        return FIELDS[path][2]
    return label(path, unit=False)


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


# Selecting rows: --where AXIS OP VALUE; the orders a numeric axis takes besides "=". In WHERE_FORM the
# two-character operators come first, so that "<=" is not read as "<".
WHERE_OPS = {"<=": lambda c, v: c <= v, ">=": lambda c, v: c >= v, "<": lambda c, v: c < v,
             ">": lambda c, v: c > v}
WHERE_FORM = re.compile(r"\s*([^<>=\s][^<>=]*?)\s*(<=|>=|<|>|=)\s*(.*?)\s*")


class WhereError(ValueError):
    """A --where that names no axis of the rows or matches no row; the message names the values present."""


def parse_where(text):
    """(axis, operator, value text) of "strategy.pp=2", "strategy.pp=1,2" or "strategy.pp<=4"."""
    m = WHERE_FORM.fullmatch(text)
    if not m or not m.group(3):
        raise ValueError(f"--where {text}: expected AXIS=VALUE, AXIS=V1,V2, AXIS<=V, AXIS>=V, AXIS<V or AXIS>V, "
                         "e.g. --where strategy.pp=2")
    return m.group(1), m.group(2), m.group(3)


def value_text(value):
    """A value as --where and the messages write it: 4 (not 4.0), 0.5, true, zero3."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (np.integer, np.floating)):
        return str(value.item())
    return str(value)


def values_text(frame, column, most=12):
    """The values of a column, ordered: "1, 2, 4"; past `most` values, the first ones and a count."""
    values = [value_text(v) for v in ordered_values(frame, column)]
    if len(values) > most:
        return ", ".join(values[:most]) + f", ... ({len(values)} values)"
    return ", ".join(values)


def number_of(text, where):
    try:
        return float(text)
    except ValueError:
        raise WhereError(f"--where {where}: {text!r} is not a number; the axis is numeric") from None


def where_mask(frame, axis, op, raw):
    """The rows one --where keeps; a value that no row has, or an order on text values, is a WhereError."""
    where, column = f"{axis}{op}{raw}", frame[axis]
    present = f"{axis} has {values_text(frame, axis)}"
    if op != "=":
        if not numeric(frame, axis):
            raise WhereError(f"--where {where}: {axis} is not numeric ({present}); use {axis}=V1,V2")
        mask = WHERE_OPS[op](column, number_of(raw, where))
        if not mask.any():
            raise WhereError(f"--where {where}: no row has {axis}{op}{raw} ({present})")
        return mask
    texts = column.map(value_text).where(column.notna())
    # A value that is itself present is taken whole: JSON objects and lists hold commas.
    wanted = [raw] if raw in set(texts.dropna()) else [w.strip() for w in raw.split(",")]
    if numeric(frame, axis):
        hits = {w: column == number_of(w, where) for w in wanted}
    else:
        hits = {w: texts == w for w in wanted}
    missing = [w for w, hit in hits.items() if not hit.any()]
    if missing:
        raise WhereError(f"--where {where}: no row has {axis}={', '.join(missing)} ({present}); "
                         "pick values the rows have")
    mask = pd.Series(False, index=frame.index)
    for hit in hits.values():
        mask |= hit
    return mask


def unknown_axis(frame, axes, axis, where):
    known = "; ".join(f"{a} ({values_text(frame, a)})" for a in axes if a in frame) or "none"
    close = difflib.get_close_matches(axis, list(axes) + frame.attrs.get("figures", []), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return WhereError(f"--where {where}: the rows have no axis or figure {axis}{hint}; their axes: {known}")


def apply_where(frame, axes, wheres):
    """The rows every --where (axis, operator, value) keeps. Each is checked against all the rows, so a misspelt
    axis or value is refused rather than drawing nothing; their conjunction may still be empty, which is refused."""
    if not wheres:
        return frame
    mask = pd.Series(True, index=frame.index)
    for axis, op, raw in wheres:
        if axis not in frame or (axis not in axes and axis not in frame.attrs.get("figures", [])):
            raise unknown_axis(frame, axes, axis, f"{axis}{op}{raw}")
        mask &= where_mask(frame, axis, op, raw)
    if not mask.any():
        said = " and ".join(f"{a}{op}{v}" for a, op, v in wheres)
        raise WhereError(f"--where {said}: each matches rows, but no row matches all of them; drop one")
    return frame[mask]


# Reduction: what one point of a panel stands for when axes other than x, hue, col and row vary within it.
def cell_keys(args):
    return list(dict.fromkeys(k for k in (args.x, args.hue, args.col, args.row) if k is not None))


def reduced_axes(frame, y, keys, candidates):
    """The candidate axes that take more than one value among the rows of one (keys) cell with a y figure: those a
    point of y reduces. An axis tied to a key (a joint axis, e.g. dp and pp varied together) is not reduced."""
    data = frame.dropna(subset=[y])
    out = []
    for axis in candidates:
        if axis in keys or axis not in data or data.empty:
            continue
        if keys:
            most = data.groupby(keys, dropna=False, sort=False)[axis].nunique(dropna=False).max()
        else:
            most = data[axis].nunique(dropna=False)
        if most > 1:
            out.append(axis)
    return out


def reductions(frame, args):
    """[(figures, reduced axes)]: the figures of --y grouped by the axes their points reduce; empty when nothing is
    reduced or --agg none draws every row."""
    if args.agg == "none":
        return []
    candidates = list(frame.attrs.get("axes", []))
    if "sweep" in frame and frame["sweep"].nunique() > 1:
        candidates.append("sweep")  # --allow-mixed: two sweeps' rows can share a cell
    groups = {}
    for y in args.y:
        axes = tuple(reduced_axes(frame, y, cell_keys(args), candidates))
        if axes:
            groups.setdefault(axes, []).append(y)
    return [(ys, list(axes)) for axes, ys in groups.items()]


def words(items):
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def reduction_messages(frame, args):
    """(stderr warnings, figure footnote or None) naming each reduced axis, its values and the --agg."""
    found = reductions(frame, args)
    warnings, notes = [], []
    for ys, axes in found:
        data = frame.dropna(subset=[ys[0]])
        over = words(f"{a} ({values_text(data, a)})" for a in axes)
        warnings.append(f"{PROG}: warning: each point is the {args.agg} of {words(ys)} over {over}; fix them with "
                        "--where or show them with --hue/--col/--row")
        brief = words(f"{short_label(a, args.labels)} ({values_text(data, a)})" for a in axes)
        prefix = f"{words(label(y, args.labels, unit=False) for y in ys)}: " if len(found) > 1 else ""
        notes.append(f"{prefix}each point is the {args.agg} over {brief}")
    return warnings, ("; ".join(notes) + "." if notes else None)


# Drawing.
XAxis = collections.namedtuple("XAxis", "positions log ticks")  # positions: categorical value -> slot, else None
Panel = collections.namedtuple("Panel", "row col y facets")  # facets: ((axis, value), ...) the panel's rows share


def x_axis(frame, args):
    """The x axis every panel shares: slots of categorical values, or the log base (None: linear) and ticks."""
    ticks = ordered_values(frame, args.x)
    if not numeric(frame, args.x):
        return XAxis({v: k for k, v in enumerate(ticks)}, None, ticks)
    return XAxis(None, x_scale(frame, args.x, args.logx, args.linear), ticks)


def y_logs(frame, args, warn):
    """y -> whether its panels are logarithmic (decided on all its rows, so that its panels agree)."""
    out = {}
    for y in args.y:
        data = frame[y].dropna()
        out[y] = args.logy or (not args.linear and spans_decades(list(data)))
        if out[y] and (data <= 0).any():
            warn(f"{PROG}: {int((data <= 0).sum())} rows with {y} <= 0 left out of the log scale")
    return out


def in_display_units(frame, column):
    """The rows with a numeric axis divided into its display unit (bytes in GB, fractions in %)."""
    divisor = unit_of(column)[0]
    if divisor == 1.0 or column not in frame or not numeric(frame, column):
        return frame
    out = frame.copy()
    out[column] = out[column] / divisor
    return out


def draw_panel(ax, frame, args, y, colours, limit, xaxis, log_y):
    """One panel: a line (or scatter) per hue value in its colour, the GPU memory on memory figures."""
    divisor, _ = unit_of(y)
    data = frame.dropna(subset=[y])
    if log_y:
        data = data[data[y] > 0]
    for key, (xs, ys) in series(data, args.x, y, args.hue, args.agg).items():
        colour, marker = colours.get(key, (PALETTE[0], MARKERS[0]))
        xs = [xaxis.positions[v] for v in xs] if xaxis.positions else xs
        ys = [v / divisor for v in ys]
        if args.agg == "none":
            ax.scatter(xs, ys, color=colour, marker=marker, s=12, linewidths=0.6, label=str(key), gid="series")
        else:
            ax.plot(xs, ys, color=colour, marker=marker, label=str(key), gid="series")
    drew_limit = limit is not None and is_memory_figure(y)
    if drew_limit:
        ax.axhline(limit / divisor, linestyle="--", color="0.25", linewidth=1.0, zorder=1, gid="device_memory")
    ax.set_ylabel(label(y, args.labels))
    if xaxis.log:
        ax.set_xscale("log", base=xaxis.log)
        if len(xaxis.ticks) <= 12:
            ax.set_xticks(xaxis.ticks)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    if xaxis.positions:
        ax.set_xticks(list(xaxis.positions.values()))
        ax.set_xticklabels([str(v) for v in xaxis.positions], rotation=30 if len(xaxis.positions) > 4 else 0,
                           ha="right" if len(xaxis.positions) > 4 else "center")
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


def panels_of(frame, args, columns):
    """The panels in grid order. Without facets, one per --y, `columns` a row. With --col: a row per --y, a column
    per --col value; with --row: a row per --row value, a column per --y; with both (one --y): rows by --row,
    columns by --col."""
    if args.col is None and args.row is None:
        return [Panel(k // columns, k % columns, y, ()) for k, y in enumerate(args.y)]
    cols = ordered_values(frame, args.col) if args.col else []
    rows = ordered_values(frame, args.row) if args.row else []
    if args.row is None:
        return [Panel(i, j, y, ((args.col, v),)) for i, y in enumerate(args.y) for j, v in enumerate(cols)]
    if args.col is None:
        return [Panel(i, j, y, ((args.row, v),)) for i, v in enumerate(rows) for j, y in enumerate(args.y)]
    return [Panel(i, j, args.y[0], ((args.row, r), (args.col, c)))
            for i, r in enumerate(rows) for j, c in enumerate(cols)]


def facet_layout(size, rows, cols):
    """(width, panel height, font size, total height or None) of a grid of faceted panels: 4 x 3 in a panel on
    screen; at a paper width, panels no taller than about square (at least 1.4 in)."""
    if size is None:
        return 4.0 * cols, 3.0, 10, None
    width, panel_height, _, font, total = figure_layout(size, 1)
    if panel_height is not None:
        panel_height = min(panel_height, max(1.4, 0.9 * width / cols))
    return width, panel_height, font, total


def note_lines(note, width, font):
    """The footnote wrapped to the panels' width (the figure's less about half an inch of y labels), at 0.6 em a
    character, a generous mean for DejaVu Sans."""
    return textwrap.wrap(note, max(20, int((width - 0.5) * 72 / (0.6 * font)))) if note else []


def facet_rows(frame, facets):
    for axis, value in facets:
        frame = frame[frame[axis] == value]
    return frame


def decorate(ax, panel, args, shape, left):
    """Axis labels, shared tick labels and facet titles of one panel of a grid; left: the panel to its left."""
    n_rows, n_cols, columns = shape
    if not panel.facets:  # one panel per --y: x named under the last row, and under every panel side by side
        if panel.row * columns + panel.col + columns >= len(args.y) or columns > 1:
            ax.set_xlabel(label(args.x, args.labels))
        else:
            ax.tick_params(labelbottom=False)
        return
    if panel.row < n_rows - 1:  # the faceted grid's x label is drawn once below it (figure_grid)
        ax.tick_params(labelbottom=False)
    if left is not None and left.y == panel.y:
        ax.set_ylabel("")
        ax.tick_params(labelleft=False)
    values = dict(panel.facets)
    if args.col is not None and panel.row == 0:
        ax.set_title(f"{short_label(args.col, args.labels)} = {value_text(values[args.col])}")
    if args.row is not None and panel.col == n_cols - 1:
        ax.annotate(f"{short_label(args.row, args.labels)} = {value_text(values[args.row])}",
                    xy=(1.03, 0.5), xycoords="axes fraction", rotation=270, ha="left", va="center",
                    fontsize=plt.rcParams["axes.titlesize"])


def figure_shape(drawn, args):
    """(panels, columns, width, panel height, font size, total height or None) of the figure."""
    if args.col is None and args.row is None:
        width, panel_height, columns, font, total = figure_layout(args.size, len(args.y))
        panels = panels_of(drawn, args, columns)
    else:
        panels = panels_of(drawn, args, 1)
        if not panels:
            sys.exit(f"{PROG}: no row to draw has a value of {' or '.join(a for a in (args.col, args.row) if a)}")
        width, panel_height, font, total = facet_layout(args.size, panels[-1].row + 1, panels[-1].col + 1)
        columns = panels[-1].col + 1
    return panels, columns, width, panel_height, font, total


def drawable(frame, ys):
    """The rows with some --y figure; none is an error."""
    present = [y for y in ys if y in frame]
    drawn = frame[frame[present].notna().any(axis=1)] if present else frame.iloc[0:0]
    if drawn.empty:
        sys.exit(f"{PROG}: no row has {' or '.join(ys)} to draw (filtered and error rows carry no figures; "
                 "invalid rows only when they were analyzed)")
    return drawn


def build_figure(frame, args, warn=None):
    """The whole figure: a grid of panels, one legend above them, the reduction footnote below; returns the
    matplotlib Figure. Warns through warn (stderr by default) about what each point reduces."""
    warn = warn or (lambda m: print(m, file=sys.stderr))
    frame = in_display_units(frame, args.x)
    drawn = drawable(frame, args.y)
    warnings, note = reduction_messages(frame, args)
    for message in warnings:
        warn(message)
    panels, columns, width, panel_height, font, total = figure_shape(drawn, args)
    with plt.rc_context(rc_for(font)):
        # Only the hue values that have something to draw in some panel get a colour and a legend entry.
        colours = colour_map(ordered_values(drawn, args.hue)) if args.hue is not None else {}
        limit = memory_limit(frame, args.device_memory, warn)
        limit_label = (f"GPU memory ({format_bytes(limit)})"
                       if limit is not None and any(is_memory_figure(y) for y in args.y) else None)
        handles = legend_handles(colours, args, limit_label) if (colours or limit_label) else []
        lines = note_lines(None if args.no_note else note, width, font - 1)
        fig, cells = figure_grid(args, panels, width, panel_height, font, total, handles, lines)
        draw_grid(fig, cells, drawn, args, panels, columns, colours, limit, warn)
        if args.title:
            fig.suptitle(args.title)
        fig.get_layout_engine().set(w_pad=0.02, h_pad=0.02, hspace=0.03, wspace=0.03)
    return fig


def figure_grid(args, panels, width, panel_height, font, total, handles, lines):
    """The Figure and a function (row, column) -> grid cell of the panels, with the legend drawn in a row above
    them, and below them the x label of a faceted grid (once for all its columns) and the footnote."""
    title = label(args.hue, args.labels) if args.hue is not None else None
    cols, rows = legend_rows([h.get_label() for h in handles], width, font - 1)
    legend_h = (rows + (1 if title else 0)) * (font - 1) * 1.45 / 72 + 0.08 if handles else 0.0
    xlabel_h = font * 1.45 / 72 if panels[0].facets else 0.0
    note_h = len(lines) * (font - 1) * 1.3 / 72 + 0.04 if lines else 0.0
    n_rows, n_cols = panels[-1].row + 1, max(p.col for p in panels) + 1
    if total is None:
        total = n_rows * panel_height + legend_h + xlabel_h + note_h + (0.3 if args.title else 0)
    fig = plt.figure(figsize=(width, total), layout="constrained")
    panel_h = max(total - legend_h - xlabel_h - note_h, 0.5) / n_rows
    below = [h for h in (xlabel_h, note_h) if h]
    ratios = ([legend_h] if handles else []) + [panel_h] * n_rows + below
    grid = fig.add_gridspec(len(ratios), n_cols, height_ratios=ratios)
    if xlabel_h:
        text_row(fig, grid[len(ratios) - len(below), :], label(args.x, args.labels), "xlabel", "center",
                 plt.rcParams["axes.labelsize"], "black")
    first = 1 if handles else 0
    if handles:
        legend_ax = fig.add_subplot(grid[0, :])
        legend_ax.axis("off")
        legend_ax.legend(handles=handles, title=title, loc="center", ncol=cols, frameon=False,
                         borderaxespad=0, handlelength=2.2, columnspacing=1.2, borderpad=0)
    if lines:
        text_row(fig, grid[-1, :], "\n".join(lines), "note", "left", font - 1, "0.3")
    return fig, lambda r, c: grid[first + r, c]


def text_row(fig, cell, text, gid, align, size, colour):
    """Text in a row of the figure's grid of its own (so that the layout makes room for it)."""
    ax = fig.add_subplot(cell, gid=gid)
    ax.axis("off")
    ax.text(0.5 if align == "center" else 0, 0.5, text, ha=align, va="center", fontsize=size, color=colour,
            transform=ax.transAxes, gid=gid)


def draw_grid(fig, cells, frame, args, panels, columns, colours, limit, warn):
    """Draws every panel: facet panels share x with the first panel and y with the first panel of their --y."""
    xaxis, logs = x_axis(frame, args), y_logs(frame, args, warn)
    faceted = bool(panels[0].facets)
    n_rows, n_cols = panels[-1].row + 1, max(p.col for p in panels) + 1
    first_of_y, placed = {}, {}
    for panel in panels:
        if faceted:
            share_x, share_y = (placed[(0, 0)] if placed else None), first_of_y.get(panel.y)
        else:
            share_x, share_y = (placed[(0, 0)] if placed and columns == 1 else None), None
        ax = fig.add_subplot(cells(panel.row, panel.col), sharex=share_x, sharey=share_y)
        draw_panel(ax, facet_rows(frame, panel.facets), args, panel.y, colours, limit, xaxis, logs[panel.y])
        left = next((p for p in panels if p.row == panel.row and p.col == panel.col - 1), None)
        decorate(ax, panel, args, (n_rows, n_cols, columns), left)
        placed[(panel.row, panel.col)] = ax
        first_of_y.setdefault(panel.y, ax)


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
    p.add_argument("--col", metavar="AXIS", help="a column of panels per value of AXIS (the --y panels become rows)")
    p.add_argument("--row", metavar="AXIS", help="a row of panels per value of AXIS (the --y panels become columns)")
    p.add_argument("--where", action="append", default=[], metavar="AXIS=V",
                   help="keep the rows with AXIS=V, AXIS=V1,V2, AXIS<=V, AXIS>=V, AXIS<V or AXIS>V (repeatable: all "
                        "must hold)")
    p.add_argument("--agg", default="min", choices=["min", "max", "mean", "median", "none"],
                   help="reduces the rows of one point when axes other than --x/--hue/--col/--row vary (a warning "
                        "and a footnote name them); none draws every row")
    p.add_argument("--no-note", action="store_true", help="no footnote naming the reduced axes (the warning stays)")
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
        args.wheres = [parse_where(w) for w in args.where]
        args.labels = parse_labels(args.label)
        args.device_memory = parse_size(args.device_memory) if args.device_memory else None
        if args.size is not None:
            figure_layout(args.size, 1)
    except ValueError as e:
        p.error(str(e))
    for out in args.out:
        if os.path.splitext(out)[1].lower() not in FORMATS:
            p.error(f"--out {out}: the extension must be one of {', '.join(FORMATS)}")
    facet_conflicts(p, args)
    return args


def facet_conflicts(p, args):
    """Refuses facets that cannot be drawn: an axis used twice, or several --y with both --col and --row."""
    if args.col is not None and args.col == args.row:
        p.error(f"--col {args.col} and --row {args.row}: one axis; facet by two different axes")
    for name in ("col", "row"):
        value = getattr(args, name)
        if value is not None and value == args.x:
            p.error(f"--{name} {value} is also --x; facet by another axis")
    if args.col is not None and args.row is not None and len(args.y) > 1:
        p.error(f"--y given {len(args.y)} times with both --col and --row: with both facets draw one --y per "
                "figure, or drop --row (the --y panels then become rows) or --col (they become columns)")


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
    facets = [getattr(args, "col", None), getattr(args, "row", None)]
    varying = [a for a in axes if frame[a].nunique(dropna=True) > 1 and a not in facets]
    if args.x is None:
        candidates = [a for a in varying if numeric(frame, a)] or varying or axes
        args.x = candidates[0]
    if not args.y:
        args.y = ["simulation.step_time_s"] if "simulation.step_time_s" in frame else ["memory.total_bytes"]
    if args.hue is None:
        others = [a for a in varying if a != args.x and not numeric(frame, a)] or [a for a in varying if a != args.x]
        args.hue = others[0] if others else None
    for column in [args.x, args.hue] + facets + args.y:
        if column is not None and column not in frame:
            known = ", ".join(list(axes) + frame.attrs.get("figures", []))
            raise ResultsError(f"no column {column!r} in the results (columns: {known})")


def main(argv):
    args = parse_args(argv)
    try:
        frame, axes = load_frame(args.results, args.allow_mixed)
        frame = apply_where(frame, axes, args.wheres)
        defaults(frame, axes, args)
    except WhereError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except (ResultsError, OSError) as e:
        sys.exit(f"{PROG}: {e}")
    frame = select_status(frame, args.status)
    if frame.empty:
        sys.exit(f"{PROG}: no rows with status {' or '.join(sorted(STATUSES[args.status]))} to draw "
                 "(--status all draws ok and invalid rows)")
    fig = build_figure(frame, args)
    outputs = args.out or [os.path.splitext(args.results[0])[0] + ".png"]
    save(fig, outputs, rc_for(figure_layout(args.size, len(args.y))[3]))
    facets = "".join(f", {name} {axis}" for name, axis in (("columns by", args.col), ("rows by", args.row)) if axis)
    print(f"{PROG}: {len(frame)} rows, {args.y} against {args.x} by {args.hue}{facets} -> {', '.join(outputs)}",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
