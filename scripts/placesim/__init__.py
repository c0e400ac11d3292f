"""Python entry point to placesim: run the binary on experiment dicts and read sweep results.

    import sys; sys.path.insert(0, "<repo>/scripts")      # or PYTHONPATH=<repo>/scripts
    import placesim
    report = placesim.analyze({"model": "llama3-8b", "training": {"global_batch": 64, "micro_batch": 1},
                               "strategy": {"preset": "zero1", "dp": 8}})
    report["memory"]["total_bytes"]
    rows = placesim.sweep(base, {"strategy.dp": [8, 16, 32]})       # a pandas DataFrame

The core needs only the standard library; sweep() and read_results() import pandas (Debian's python3-pandas, in
/usr/bin/python3) and without it raise ModuleNotFoundError before running anything. The binary is $PLACESIM_BIN,
else <repo>/build/placesim, else placesim on PATH. See docs/python.md.
"""
from ._results import META_KEYS, ResultsError, read_results
from ._runner import PlacesimError, analyze, find_binary, run, simulate, sweep

__all__ = ["analyze", "simulate", "sweep", "read_results", "run", "find_binary", "PlacesimError", "ResultsError",
           "META_KEYS"]
