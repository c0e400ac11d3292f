#!/usr/bin/env bash
# One-iteration `placesim simulate` at scale and the trace size of one pipeline: wall time and
# peak memory of the whole process (/usr/bin/time -v), SimGrid activities + kernel timers, and events per second.
#
#   bench/bench_simulate.sh [--llama-flow] [--no-traces | --traces-only]
#
#   GPT-3 175B on 1,024 A100 (examples/gpt3-175b-3d.json: TP8 PP8 DP16, 1F1B, global batch 1536), flow fidelity;
#   Llama-3 405B on 16,384 H100 (examples/llama3-405b-16k.json: TP8 PP16 DP128, global batch 2048, sequence 8192),
#     analytic fidelity, and flow fidelity with --llama-flow;
#   traces (unless --no-traces): GPT-3 gzipped with --trace-devices dp0+tp0 (one pipeline, 8 GPUs) in coarse and
#     fine detail, fine with one compute event per layer (--layer-group 1), and every GPU in coarse detail: file
#     size, wall time, and the validator's verdict (trace_check).
#
# events/s = (activities + timers) / the report's simulation.wall_time_s (the simulation alone: platform, run);
# the process wall time adds parsing, expand(), the report and the trace. Outputs go to $BENCH_OUT (default
# build/bench): NAME.report.json, NAME.time (time -v), NAME.log, and the traces.
# Environment: PLACESIM_BUILD (default: build/ in the checkout), BENCH_OUT.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PLACESIM_BUILD:-$root/build}
out=${BENCH_OUT:-$build/bench}
llama_flow=0
traces=1
simulations=1
for arg in "$@"; do
  case "$arg" in
    --llama-flow) llama_flow=1 ;;
    --no-traces) traces=0 ;;
    --traces-only) simulations=0 ;;
    *) echo "usage: bench/bench_simulate.sh [--llama-flow] [--no-traces | --traces-only]" >&2; exit 2 ;;
  esac
done
[ -x /usr/bin/time ] || { echo "bench_simulate: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
mkdir -p "$out"
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target placesim trace_check >/dev/null

# The value of one "Label: value" line of a time -v file.
time_field() { sed -n "s/^[[:space:]]*$2: //p" "$1"; }
# Seconds from time -v's "h:mm:ss" or "m:ss.ss".
to_seconds() { python3 -c "import sys; p = [float(x) for x in sys.argv[1].split(':')]; print(sum(v * 60 ** i for i, v in enumerate(reversed(p))))" "$1"; }

# run NAME EXPERIMENT [simulate flags...]: one simulate under time -v, then one line of figures.
run() {
  local name=$1 experiment=$2
  shift 2
  /usr/bin/time -v -o "$out/$name.time" "$build/placesim" simulate "$root/$experiment" --report "$out/$name.report.json" \
    "$@" >"$out/$name.log" 2>&1 || { cat "$out/$name.log" "$out/$name.time" >&2; echo "bench_simulate: $name failed" >&2; exit 1; }
  local wall rss
  wall=$(to_seconds "$(time_field "$out/$name.time" 'Elapsed (wall clock) time (h:mm:ss or m:ss)')")
  rss=$(time_field "$out/$name.time" 'Maximum resident set size (kbytes)')
  python3 - "$out/$name.report.json" "$name" "$wall" "$rss" <<'EOF'
import json, sys
report, name, wall, rss_kb = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
sim = json.load(open(report))["simulation"]
events = sim["activities"] + sim["timers"]
print(f"{name:<22} wall {wall:7.1f} s  peak RSS {rss_kb / 1024 ** 2:6.2f} GiB  simulate {sim['wall_time_s']:7.1f} s  "
      f"activities {sim['activities']:>11,}  timers {sim['timers']:>10,}  events/s {events / sim['wall_time_s']:>10,.0f}  "
      f"(per process second {events / wall:>10,.0f})  step {sim['step_time_s']:.3f} s  fidelity {sim['fidelity']}  "
      f"layer group {sim['layer_group']}")
EOF
}

# trace NAME [simulate flags...]: the GPT-3 run with a trace, then the trace's size and the validator's verdict.
trace() {
  local name=$1 file="$out/$1.json.gz"
  shift
  run "$name" examples/gpt3-175b-3d.json "$@" --trace "$file"
  local start end verdict
  start=$(date +%s.%N)
  verdict=$("$build/trace_check" "$file" | tr '\n' ' ') || { echo "bench_simulate: $file is not a valid trace: $verdict" >&2; exit 1; }
  end=$(date +%s.%N)
  python3 -c "import sys; print(f'{sys.argv[1]:<22} trace {int(sys.argv[2]) / 1e6:7.2f} MB gzipped ({int(sys.argv[6]) / 1e6:.1f} MB plain); valid ({sys.argv[3].strip()}), checked in {float(sys.argv[5]) - float(sys.argv[4]):.1f} s')" \
    "$name" "$(stat -c %s "$file")" "$verdict" "$start" "$end" "$(gzip -dc "$file" | wc -c)"
}

echo "placesim simulate, one training step ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
if [ "$simulations" = 1 ]; then
  run gpt3-1024-flow examples/gpt3-175b-3d.json --fidelity flow
  run llama-16k-analytic examples/llama3-405b-16k.json --fidelity analytic
  if [ "$llama_flow" = 1 ]; then run llama-16k-flow examples/llama3-405b-16k.json --fidelity flow; fi
fi
if [ "$traces" = 1 ]; then
  trace gpt3-trace-coarse --trace-devices dp0+tp0 --trace-detail coarse
  trace gpt3-trace-fine --trace-devices dp0+tp0 --trace-detail fine
  trace gpt3-trace-layer1-fine --trace-devices dp0+tp0 --trace-detail fine --layer-group 1
  trace gpt3-trace-all-coarse --trace-devices all --trace-detail coarse
fi
