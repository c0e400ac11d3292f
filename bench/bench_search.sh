#!/usr/bin/env bash
# Wall time of `placesim search` over the whole layout space it enumerates (meshes with cp, presets, schedules,
# micro-batch sizes, recompute modes), pruned by the step-time bound, on the published configurations:
#
#   bench/bench_search.sh [--jobs N]
#
# Goals: Llama 3 70B on 512 H100 in <= 30 s on 2 cores; Llama 3 405B on 16,384 H100 in <= 2 min. Prints, per
# configuration, the wall time, the candidates, how many fit, were simulated and pruned, and the best plan.
# Environment: PLACESIM_BUILD (default: build/ in the checkout), BENCH_OUT (default $PLACESIM_BUILD/bench-search).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PLACESIM_BUILD:-$root/build}
out=${BENCH_OUT:-$build/bench-search}
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift ;;
    *) echo "usage: bench/bench_search.sh [--jobs N]" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target placesim >/dev/null
bin="$out/placesim"
cp "$build/placesim" "$bin"

echo "placesim search over the whole space ($(nproc) cores, --jobs $jobs, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-50s %7s %8s %10s %6s %9s %7s  %s\n' configuration GPUs "wall s" candidates fit simulated pruned "best plan (step s)"
# file, goal in seconds, label, extra flags: every preset, and the presets of the Megatron-Core stack alone.
cases=(
  "examples/whatif/llama3-70b-512gpu.json 30 all-presets"
  "examples/whatif/llama3-70b-512gpu.json 30 megatron-core --set stack=megatron-core-0.9"
  "bench/scale/llama3-405b-16384xh100.json 120 megatron-core --set stack=megatron-core-0.9"
)
for case in "${cases[@]}"; do
  set -- $case
  file=$1 goal=$2 label=$3
  shift 3
  name=$(basename "$file" .json)-$label
  start=$(date +%s.%N)
  "$bin" search "$root/$file" --quiet --jobs "$jobs" --top 1 --out "$out/$name.jsonl" "$@" >"$out/$name.txt" 2>&1 || true
  end=$(date +%s.%N)
  python3 - "$out/$name.txt" "$out/$name.jsonl" "$name" "$start" "$end" "$goal" <<'PY'
import json, re, sys
text, rows, name = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
wall, goal = float(sys.argv[5]) - float(sys.argv[4]), float(sys.argv[6])
m = re.search(r"(\d+) GPUs", text)
counts = re.search(r"(\d+) candidates: .* (\d+) fit\n.*?(\d+) simulated .*?, (\d+) pruned", text, re.S)
best = None
for line in open(rows):
    r = json.loads(line)
    if r.get("status") == "ok" and "simulation.step_time_s" in r and (best is None or r["simulation.step_time_s"] < best["simulation.step_time_s"]):
        best = r
plan = "-"
if best:
    s = best["point"]["strategy"]
    dp = s.get("dp") or s["mesh"]["dp_shard"] * s["mesh"]["dp_replicate"]
    plan = "%s dp %s tp %s pp %s cp %s %s mb %s %s (%.3f)" % (s["preset"], dp, s["tp"], s["pp"], s.get("cp", 1),
        s["schedule"] + (" x%d" % s["chunks"] if s.get("chunks") else ""), best["point"]["training.micro_batch"],
        best["point"]["training.recompute"], best["simulation.step_time_s"])
c = counts.groups() if counts else ("?",) * 4
print("%-50s %7s %8.1f %10s %6s %9s %7s  %s%s" % (name, m.group(1) if m else "?", wall, c[0], c[1], c[2], c[3], plan,
      "" if wall <= goal else "   (over the %g s goal)" % goal))
PY
done
