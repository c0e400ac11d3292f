"""Running the placesim binary: finding it, turning keyword options into its flags, and its errors into
PlacesimError. Standard library only."""
import json
import os
import shutil
import subprocess
import tempfile

from ._results import read_results, require_pandas

# <repo>/scripts/placesim/_runner.py -> <repo>/build/placesim
_REPO_BINARY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            "build", "placesim")


class PlacesimError(RuntimeError):
    """The binary failed. str(error) is its error message; returncode is its exit code (2 = bad input, e.g. an
    unknown field or an invalid strategy; 1 = some sweep points ended in error); stderr its whole error output."""

    def __init__(self, message, returncode=None, command=None, stderr=""):
        super().__init__(message)
        self.message, self.returncode, self.command, self.stderr = message, returncode, command, stderr

    @property
    def bad_input(self):
        return self.returncode == 2


def find_binary():
    """The placesim executable: $PLACESIM_BIN, else <repo>/build/placesim next to this package, else `placesim`
    on PATH."""
    env = os.environ.get("PLACESIM_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise PlacesimError(f"PLACESIM_BIN={env} is not an executable file")
        return env
    if os.path.isfile(_REPO_BINARY) and os.access(_REPO_BINARY, os.X_OK):
        return _REPO_BINARY
    on_path = shutil.which("placesim")
    if on_path:
        return on_path
    raise PlacesimError(f"no placesim binary: set PLACESIM_BIN to one, or build it with `bash scripts/setup.sh` "
                        f"(it builds {_REPO_BINARY}), or put placesim on PATH")


def _flags(options):
    """CLI flags of keyword options: device_memory="80GiB" -> --device-memory 80GiB, force=True -> --force,
    set={"strategy.dp": 8} or set=["strategy.dp=8"] -> --set strategy.dp=8 (repeated); None and False are left out."""
    flags = []
    for name, value in options.items():
        flag = "--" + name.rstrip("_").replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            flags.append(flag)
        elif name.rstrip("_") == "set" and isinstance(value, dict):
            for path, v in value.items():
                flags += [flag, f"{path}={v if isinstance(v, str) else json.dumps(v)}"]
        elif isinstance(value, (list, tuple)):
            for v in value:
                flags += [flag, str(v)]
        else:
            flags += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return flags


def _error_message(stderr, returncode):
    """The error lines of placesim's stderr, each with the indented lines that follow it (a file's list of errors),
    or its last three lines when none says "error:"."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    errors = []
    for line in lines:
        if "error:" in line:
            errors.append(line)
        elif errors and line[:1].isspace() and errors[-1] is not None:
            errors.append(line)
        else:
            errors.append(None)
    errors = [line for line in errors if line is not None]
    return "\n".join(errors or lines[-3:]) or f"placesim exited with code {returncode}"


def run(args, input=None, cwd=None, allow_codes=(0,)):
    """Runs `placesim ARGS...` and returns its CompletedProcess (text); raises PlacesimError when the exit code is
    not in allow_codes."""
    command = [find_binary()] + [os.fspath(a) for a in args]
    done = subprocess.run(command, input=input, capture_output=True, text=True, cwd=cwd)
    if done.returncode not in allow_codes:
        raise PlacesimError(_error_message(done.stderr, done.returncode), done.returncode, command, done.stderr)
    return done


def _experiment_input(experiment):
    """('-', JSON text) for a dict; (path, None) for a file name."""
    if isinstance(experiment, dict):
        return "-", json.dumps(experiment)
    if isinstance(experiment, (str, bytes, os.PathLike)):
        return os.fspath(experiment), None
    raise TypeError(f"experiment must be a dict (an experiment as a file holds it) or a file name, not "
                    f"{type(experiment).__name__}")


def _report(done, command):
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise PlacesimError(f"{command}: the report is not JSON ({e})", done.returncode, command, done.stderr) from None


def analyze(experiment, **options):
    """The analytic report of an experiment (a dict as `placesim analyze` reads one, or a file name) as a dict.
    Options are analyze's flags: model=, model_hf=, strategy=, set={path: value}, device_memory="80GiB"."""
    source, text = _experiment_input(experiment)
    return _report(run(["analyze", source] + _flags(options), input=text), "placesim analyze")


def simulate(experiment, fidelity="flow", **options):
    """The simulated report of one training step (dict). Options are simulate's flags: trace="step.json",
    svg=, symmetry="off", layer_group=, force=True, reproducible=True, set=, device_memory=, ..."""
    source, text = _experiment_input(experiment)
    args = ["simulate", source, "--report", "-", "--fidelity", fidelity, "--quiet"] + _flags(options)
    return _report(run(args, input=text), "placesim simulate")


def sweep(base, axes, mode="analyze", figures=None, filters=None, jobs=None, fidelity=None, out=None, **options):
    """Evaluates every point of the grid `axes` ({"strategy.dp": [1, 2, 4], ...}, ranges as in a sweep file) over
    the experiment `base` and returns the rows as a pandas DataFrame (one column per axis and figure, plus index,
    status and reason). A sweep file is written to a temporary directory, so paths inside base must be absolute.
    out= keeps the JSONL results there (overwritten). Options are sweep's flags: device_memory=, simulator=, ...
    Points that end in error keep status "error"; bad input raises PlacesimError. Without pandas it raises
    ModuleNotFoundError, saying what to install, before running anything."""
    require_pandas("sweep")
    spec = {"base": base, "axes": axes, "mode": mode}
    if figures is not None:
        spec["figures"] = list(figures)
    if filters is not None:
        spec["filters"] = filters
    if fidelity is not None:
        spec["fidelity"] = fidelity
    with tempfile.TemporaryDirectory(prefix="placesim-sweep-") as tmp:
        sweep_file = os.path.join(tmp, "sweep.json")
        with open(sweep_file, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        results = os.fspath(out) if out is not None else os.path.join(tmp, "results.jsonl")
        args = ["sweep", sweep_file, "--out", results, "--force", "--quiet"]
        if jobs is not None:
            args += ["--jobs", str(jobs)]
        run(args + _flags(options), allow_codes=(0, 1))
        return read_results(results)
