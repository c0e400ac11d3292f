#!/usr/bin/env python3
"""The README's what-if of an imperfect cluster: Llama 3 405B on 16,384 H100 (examples/llama3-405b-16k.json) with 0,
1 and 16 slow nodes and with 30 % of the spine taken by other jobs, simulated at the default (flow) fidelity: symmetry
folding simulates the blocks the slow nodes touch apart, so each row takes seconds.

Prints a Markdown table of the step time and tokens/s; with --write it replaces the table in README.md (between the
imperfect markers); with --check it exits 1 when that table differs from what this binary gives (CTest's
docs/imperfect_table runs it).
Usage: scripts/imperfect_table.py [build/placesim] [--write | --check]
"""
import json
import os
import subprocess
import sys
import tempfile

from whatif_table import table_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPERIMENT = "examples/llama3-405b-16k.json"
# Node n holds the 8 tensor-parallel GPUs of pipeline stage n // 128 in data-parallel replica n % 128.
ONE = {"node 17": 0.8}
SIXTEEN = {f"node {17 + 128 * stage}": 0.8 for stage in range(16)}
CASES = [
    ("a healthy cluster", {}),
    ("node 17 at 0.8x (stage 0 of replica 17)", {"cluster.slow": ONE}),
    ("16 nodes at 0.8x (every stage of replica 17)", {"cluster.slow": SIXTEEN}),
    ("30 % of every leaf uplink and spine port taken by other jobs", {"cluster.background_load": 0.3}),
]
BEGIN, END = "<!-- imperfect:begin -->", "<!-- imperfect:end -->"


def simulate(placesim, sets):
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        args = [placesim, "simulate", os.path.join(ROOT, EXPERIMENT), "--quiet",
                "--report", report.name]
        for field, value in sets.items():
            args += ["--set", field + "=" + json.dumps(value)]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.load(open(report.name))["simulation"]


def table(placesim):
    lines = ["| Llama 3 405B on 16,384 H100 | step time | tokens/s |", "|---|---|---|"]
    for label, sets in CASES:
        s = simulate(placesim, sets)
        lines.append(f"| {label} | {s['step_time_s']:.3f} s | {s['tokens_per_s']:,.0f} |")
    return "\n".join(lines) + "\n"


def main(argv):
    return table_main(argv, table, os.path.join(ROOT, "README.md"), (BEGIN, END),
                      "README.md's imperfect-cluster table")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
