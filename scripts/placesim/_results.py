"""Reading `placesim sweep` results (JSONL rows) — standard library only; pandas is imported by read_results alone.

A row is {"index": N, "point": {axis path: value}, "status": ..., <figure path>: number, ...}. Rows
also carry "sweep" (a hash of the sweep file), "version", "points", "shard" (only in --shard i/N files),
"device_memory" (only with --device-memory) and "device_memory_bytes"; older rows lack them, and everything here
works with both — but not with both mixed (rows with and without a sweep hash are refused unless allow_mixed).
"""
import json
import os
import sys

# Row keys that describe the point or the run rather than being a figure of its report.
META_KEYS = ("index", "shard", "sweep", "version", "points", "device_memory", "fidelity", "status", "reason",
             "device_memory_bytes")


_PY_MIXED = "allow_mixed=True in Python"


class ResultsError(ValueError):
    """Results files that cannot be combined or read; the message names the files."""


class Loaded:
    """The rows of results files: records (dicts, axes flattened in), the axis paths in sweep order, and the
    figure paths in the order first seen."""

    def __init__(self, records, axes, figures):
        self.records, self.axes, self.figures = records, axes, figures

    def columns(self):
        """index, the axes, the run's metadata keys that occur, then the figures."""
        present = set().union(*(r.keys() for r in self.records)) if self.records else set()
        meta = [k for k in META_KEYS if k in present and k != "index"]
        return ["index"] + self.axes + meta + self.figures


def _file_identity(path):
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except OSError:
        return os.path.realpath(path)


def _warn_stderr(message):
    print(message, file=sys.stderr)


def _numbered_lines(path):
    """(line number, line) of a text file, streamed; a file that is not UTF-8 is a ResultsError naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            yield from enumerate(f, 1)
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not a UTF-8 JSONL file (a gzipped or binary file?)") from None


def load(paths, allow_mixed=False, warn=_warn_stderr, prog="placesim"):
    """Reads results files into a Loaded, each real file once and each point once.

    A file given twice (also through another path or a link) is read once; a row whose (sweep, index, point) was
    already read (overlapping shards, a file and its merge) is dropped; both are reported through warn. Rows of
    different sweeps — different "sweep" hashes, or for older rows without one, different points at one index —
    raise ResultsError naming both files, unless allow_mixed (then the "sweep" column tells them apart)."""
    records, axes, figures = [], [], []
    seen_files, seen_rows = {}, {}
    sweep_of = {}  # sweep hash -> the first file holding it
    kind_of = {}  # whether rows carry a sweep hash -> the first file with such rows
    dropped = 0
    for path in paths:
        identity = _file_identity(path)
        if identity in seen_files:
            warn(f"{prog}: {path} is the same file as {seen_files[identity]}; read once")
            continue
        seen_files[identity] = path
        for number, line in _numbered_lines(path):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ResultsError(f"{path}:{number}: not a JSON line ({e})") from None
            if not isinstance(row, dict) or "index" not in row:
                raise ResultsError(f"{path}:{number}: not a sweep row (no \"index\")")
            point = row.pop("point", {}) or {}
            sweep = row.get("sweep")
            if not allow_mixed:
                kind_of.setdefault(sweep is not None, path)
                if len(kind_of) > 1:
                    raise ResultsError(
                        f"{kind_of[True]} holds rows with a sweep hash (placesim 0.19 or later) and "
                        f"{kind_of[False]} rows without one: they cannot be checked to be of one sweep; plot them "
                        f"separately, or pass --allow-mixed ({_PY_MIXED}) to combine them")
            if sweep is not None and not allow_mixed:
                sweep_of.setdefault(sweep, path)
                if len(sweep_of) > 1:
                    other, other_path = next((h, p) for h, p in sweep_of.items() if h != sweep)
                    raise ResultsError(
                        f"{other_path} and {path} hold rows of different sweeps (sweep {other} and {sweep}); "
                        f"plot them separately, or pass --allow-mixed ({_PY_MIXED}) to combine them")
            point_key = json.dumps(point, sort_keys=True)
            key = (sweep, row["index"])
            if key in seen_rows:
                earlier_point, earlier_path = seen_rows[key]
                if earlier_point == point_key:
                    dropped += 1
                    continue
                if not allow_mixed:
                    raise ResultsError(
                        f"{earlier_path} and {path} hold different points at index {row['index']}: rows of "
                        f"different sweeps; plot them separately, or pass --allow-mixed ({_PY_MIXED})")
                key = (sweep, row["index"], point_key)
                if key in seen_rows:
                    dropped += 1
                    continue
            seen_rows[key] = (point_key, path)
            for axis in point:
                if axis not in axes:
                    axes.append(axis)
            record = {k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in point.items()}
            for k, v in row.items():
                if k not in META_KEYS and k not in figures and k not in point:
                    figures.append(k)
                record[k] = v
            records.append(record)
    if dropped:
        warn(f"{prog}: dropped {dropped} duplicate row{'s' if dropped != 1 else ''} (same sweep and index)")
    records.sort(key=lambda r: (str(r.get("sweep", "")), r["index"]))
    return Loaded(records, axes, figures)


def require_pandas(caller):
    """pandas, imported. Without it, a ModuleNotFoundError (name "pandas") saying what to install: `caller` returns a
    DataFrame, so it calls this before doing any work."""
    try:
        import pandas
    except ImportError as e:
        raise ModuleNotFoundError(
            f"placesim.{caller}() returns a pandas DataFrame, but {sys.executable} cannot import pandas ({e}): "
            f"install Debian's python3-pandas (apt-get install python3-pandas) and run under /usr/bin/python3, "
            f"which has it", name="pandas") from None
    return pandas


def frame_of(loaded):
    """A pandas DataFrame of the Loaded rows, one column per axis and figure; frame.attrs["axes"] lists the axes."""
    pd = require_pandas("read_results")
    frame = pd.DataFrame.from_records(loaded.records, columns=loaded.columns())
    frame.attrs["axes"] = list(loaded.axes)
    frame.attrs["figures"] = list(loaded.figures)
    return frame


def read_results(*paths, allow_mixed=False):
    """The rows of `placesim sweep` results files (shards may be given together) as a pandas DataFrame: columns
    index, the axis paths, the run's metadata (status, reason, sweep, ...) and the figure paths; sorted by index.
    Raises ResultsError for files of different sweeps unless allow_mixed."""
    require_pandas("read_results")
    if len(paths) == 1 and isinstance(paths[0], (list, tuple)):
        paths = tuple(paths[0])
    if not paths:
        raise ResultsError("read_results: no results files given")
    return frame_of(load([os.fspath(p) for p in paths], allow_mixed=allow_mixed))
