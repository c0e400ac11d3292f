#!/usr/bin/env python3
"""The what-if table of docs/whatif.md: Llama 3 70B and 405B on 512 GPUs of each built-in accelerator generation.

Simulates examples/whatif/*.json (analytic fidelity) on each cluster below and prints a Markdown table of the step
time, tokens/s, MFU and peak memory, with the accelerator profile's sources and what it does not measure. With
--write it replaces the table in docs/whatif.md (between the whatif markers); with --check it exits 1 when that
table differs from what this binary gives (CTest's docs/whatif_table runs it).
Usage: scripts/whatif_table.py [build/placesim] [--write | --check]
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPERIMENTS = ["examples/whatif/llama3-70b-512gpu.json", "examples/whatif/llama3-405b-512gpu.json"]
# (label, cluster): 512 GPUs each; GB200 racks hold 64 of their 72 GPUs in the job (8 racks).
CLUSTERS = [
    ("H100 (DGX H100)", {"preset": "dgx-h100", "nodes": 64}),
    ("H200 (DGX H200)", {"preset": "dgx-h200", "nodes": 64}),
    ("B200 (DGX B200)", {"preset": "dgx-b200", "nodes": 64}),
    ("GB200 (8 NVL72 racks, 64 GPUs each)",
     {"preset": "gb200-nvl72", "nodes": 8, "gpus_per_node": 64, "nics_per_node": 64}),
    ("MI300X (8-GPU Infinity Fabric mesh)", {"preset": "amd-mi300x", "nodes": 64}),
]
BEGIN, END = "<!-- whatif:begin -->", "<!-- whatif:end -->"


def simulate(placesim, path, cluster):
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        subprocess.run([placesim, "simulate", os.path.join(ROOT, path), "--fidelity", "analytic", "--report",
                        report.name, "--set", "cluster=" + json.dumps(cluster)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.load(open(report.name))


def profile_note(accelerator):
    """The profile's measurement file, its number of sources and what it does not measure."""
    profile = json.load(open(os.path.join(ROOT, "topology", "profiles", accelerator + ".json")))
    missing = [n["component"] for n in profile.get("not_measured", [])]
    text = f"`measurements/{accelerator}.json`, {len(profile['sources'])} sources"
    return text + ("; not measured: " + ", ".join(missing) if missing else "")


def table(placesim):
    lines = ["| model | accelerator | step time | tokens/s | MFU | peak memory / device | profile |",
             "|---|---|---|---|---|---|---|"]
    for path in EXPERIMENTS:
        model = json.load(open(os.path.join(ROOT, path)))["model"]["preset"]
        for label, cluster in CLUSTERS:
            r = simulate(placesim, path, cluster)
            s = r["simulation"]
            acc = r["cluster"]["accelerator"]["name"]
            peak = s["peak_memory_bytes"]["total"]
            lines.append(f"| {model} | {label} | {s['step_time_s']:.2f} s | {s['tokens_per_s']:,.0f} | "
                         f"{100 * s['mfu']:.1f} % | {peak / 1e9:.1f} / {r['device_memory_bytes'] / 1e9:.1f} GB | "
                         f"{profile_note(acc)} |")
    return "\n".join(lines) + "\n"


def table_main(argv, table, doc_path, markers, what):
    """Prints table(placesim); with --write replaces the text between `markers` in doc_path, with --check exits 1 when
    it differs (naming `what` and the script that writes it)."""
    placesim = next((a for a in argv if not a.startswith("--")), os.path.join(ROOT, "build", "placesim"))
    text = table(placesim)
    doc = open(doc_path).read()
    if "--write" not in argv and "--check" not in argv:
        print(text, end="")
        return 0
    start, end = doc.index(markers[0]) + len(markers[0]) + 1, doc.index(markers[1])
    if "--check" in argv:
        if doc[start:end] != text:
            print(f"{what} differs from this binary's ({os.path.basename(sys.argv[0])} --write):")
            print(text)
            return 1
        return 0
    open(doc_path, "w").write(doc[:start] + text + doc[end:])
    return 0


def main(argv):
    return table_main(argv, table, os.path.join(ROOT, "docs", "whatif.md"), (BEGIN, END),
                      "docs/whatif.md's what-if table")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
