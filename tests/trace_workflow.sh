#!/usr/bin/env bash
# The trace workflow of docs/calibration.md, as shipped: a stand-in node's simulated profiler trace calibrates to the
# committed examples/trace/profiles/node-calibration.json (the same fitted figures), compare runs on it, and the
# calibrated 1,024-GPU example simulates. Usage: tests/trace_workflow.sh PLACESIM [REPO_ROOT]
set -eu
placesim=$1
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$placesim" simulate "$root/examples/trace/stand-in-node.json" --profiler-trace "$tmp/rank0.json.gz" --quiet >/dev/null
"$placesim" calibrate --trace "$tmp/rank0.json.gz" "$root/examples/trace/llama3-8b-node.json" \
  --out "$tmp/node-calibration.json" >/dev/null 2>&1
"$placesim" compare "$tmp/rank0.json.gz" "$root/examples/trace/llama3-8b-node.json" --svg "$tmp/compare.svg" \
  --out "$tmp/compare.json" >/dev/null 2>&1
"$placesim" simulate "$root/examples/trace/llama3-8b-1024.json" --fidelity analytic --quiet >/dev/null
python3 - "$tmp/node-calibration.json" "$root/examples/trace/profiles/node-calibration.json" <<'PY'
import json, sys
fresh, shipped = (json.load(open(p)) for p in sys.argv[1:3])
def same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)
    return a == b
for section in ("compute", "comm", "training"):
    if not same(fresh.get(section), shipped.get(section)):
        sys.exit(f"examples/trace/profiles/node-calibration.json: its {section} differs from what the commands of "
                 f"docs/calibration.md fit now; re-run them (From one node's profiler trace to a cluster)")
PY
echo "trace workflow: ok"
