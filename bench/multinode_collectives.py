#!/usr/bin/env python3
"""Measured vs simulated NCCL collectives across nodes: nccl-tests points of multi-node runs against the time
placesim's simulation gives the same collective on the same cluster preset.

Each point of the measurement file (default topology/profiles/measurements/multinode-nccl.json) names a cluster
preset, a node count, the collective (allgather, reducescatter, allreduce) and nccl-tests' size and bus bandwidth.
For each point the script writes a one-collective experiment -- an opaque model of size/2 bf16 parameters over
dp = every GPU, gradients bucketed whole: `zero2` for an all-gather (the updated parameters) or a reduce-scatter (the
gradients, bf16), `dp` for an all-reduce -- simulates it with `--trace`, and reads the collective's duration off the
trace (the slowest rank's). It prints both bus bandwidths and their ratio; nothing is fitted. The simulated figure
is a component check of the inter-node collective model (ring, per-step latency, the fabric's bus efficiency,
rails), not of NCCL's algorithm choice: placesim runs every inter-node collective as a ring, where NCCL may pick a
tree or NVLS-tree for an all-reduce.

Usage: bench/multinode_collectives.py [build/placesim] [--points FILE]
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The 8-GPU node presets of `placesim presets` (a point names one; gb200-nvl72 racks and selene are not offered).
GPUS_PER_NODE = {"dgx-a100": 8, "dgx-b200": 8, "dgx-h100": 8, "hgx-h800": 8}


def gpus_per_node(point):
    if point["cluster"] not in GPUS_PER_NODE:
        raise SystemExit(f"point {point}: cluster {point['cluster']!r} is not one of {sorted(GPUS_PER_NODE)}")
    return GPUS_PER_NODE[point["cluster"]]


def experiment(point):
    gpus = point["nodes"] * gpus_per_node(point)
    kind = point["kind"]
    params = point["bytes"] // 2
    return {
        "name": f"{kind}-{point['nodes']}nodes-{point['bytes']}",
        "model": {"parameters": params},
        "training": {"global_batch": gpus, "micro_batch": 1, "dtype": "bf16", "grad_dtype": "bf16"},
        "strategy": {"preset": "dp" if kind == "allreduce" else "zero2", "dp": gpus,
                     "bucket_bytes": float(point["bytes"])},
        "cluster": {"preset": point["cluster"], "nodes": point["nodes"]},
    }


def simulated_seconds(placesim, point):
    prefix = {"allgather": "allgather zero_gather", "reducescatter": "reducescatter dp_grad_sync",
              "allreduce": "allreduce dp_grad_sync"}[point["kind"]]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "e.json")
        trace = os.path.join(tmp, "t.json")
        json.dump(experiment(point), open(path, "w"))
        subprocess.run([placesim, "simulate", path, "--trace", trace], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        events = json.load(open(trace))
        events = events["traceEvents"] if isinstance(events, dict) else events
        durations = [e["dur"] for e in events if e.get("ph") == "X" and e.get("name", "").startswith(prefix)]
        if not durations:
            raise SystemExit(f"no '{prefix}' event in the trace of {experiment(point)['name']}")
        return max(durations) * 1e-6


def bus_factor(kind, ranks):
    return 2 * (ranks - 1) / ranks if kind == "allreduce" else (ranks - 1) / ranks


def main(argv):
    placesim = next((a for a in argv if a.endswith("placesim")), os.path.join(ROOT, "build", "placesim"))
    points_file = argv[argv.index("--points") + 1] if "--points" in argv else os.path.join(
        ROOT, "topology", "profiles", "measurements", "multinode-nccl.json")
    data = json.load(open(points_file))
    print("| source | cluster | nodes | collective | size | measured busbw GB/s | simulated busbw GB/s | simulated / measured |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for p in data["points"]:
        ranks = p["nodes"] * gpus_per_node(p)
        seconds = simulated_seconds(placesim, p)
        simulated = p["bytes"] / seconds * bus_factor(p["kind"], ranks) / 1e9
        ratio = simulated / p["busbw_GBps"]
        ratios.append(ratio)
        print(f"| {p['source_key']} | {p['cluster']} | {p['nodes']} | {p['kind']} | {p['bytes'] / 2**20:.0f} MiB | "
              f"{p['busbw_GBps']:.1f} | {simulated:.1f} | {ratio:.2f} |")
    print()
    print(f"{len(ratios)} points: simulated / measured bus bandwidth from {min(ratios):.2f} to {max(ratios):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
