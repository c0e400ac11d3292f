#!/usr/bin/env bash
# Simulation cost of published configurations (bench/scale/*.json): wall time and peak memory of one
# `placesim simulate` each (/usr/bin/time -v), with symmetry folding (the default), and with --full also a full
# expansion (--symmetry off --force) for the ratio, each under a time and memory cap.
#
#   bench/bench_scale.sh [--full] [--cap-seconds S] [--cap-gb G]
#
# Goals: every configuration up to 16,384 GPUs <= 60 s and <= 4 GB at default fidelity; <= 1,024 GPUs <= 10 s; the
# 1,024-GPU GPT of ASTRA-sim's workload shape at full fidelity <= 2.5 s. Outputs go to $BENCH_OUT (default
# build/bench-scale): NAME[.full].report.json, .time, .log.
# Environment: PLACESIM_BUILD (default: build/ in the checkout), BENCH_OUT.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PLACESIM_BUILD:-$root/build}
out=${BENCH_OUT:-$build/bench-scale}
full=0
cap_s=1200
cap_gb=16
while [ $# -gt 0 ]; do
  case "$1" in
    --full) full=1 ;;
    --cap-seconds) cap_s=$2; shift ;;
    --cap-gb) cap_gb=$2; shift ;;
    *) echo "usage: bench/bench_scale.sh [--full] [--cap-seconds S] [--cap-gb G]" >&2; exit 2 ;;
  esac
  shift
done
[ -x /usr/bin/time ] || { echo "bench_scale: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
mkdir -p "$out"
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target placesim >/dev/null
# A copy, so that rebuilding the checkout during a long run does not change the binary under it.
bin="$out/placesim"
cp "$build/placesim" "$bin"

# run NAME LABEL [simulate flags...]: one simulate under time -v and the caps; prints "wall rss_kb step" or "killed".
run() {
  local name=$1 label=$2
  shift 2
  local status=0
  ( ulimit -v $((cap_gb * 1024 * 1024)); exec timeout "$cap_s" /usr/bin/time -v -o "$out/$label.time" "$bin" simulate \
      "$root/bench/scale/$name.json" --quiet --report "$out/$label.report.json" "$@" ) >"$out/$label.log" 2>&1 || status=$?
  if [ "$status" != 0 ]; then
    echo "failed (exit $status after the cap of ${cap_s} s / ${cap_gb} GB or an error: $(tail -c 300 "$out/$label.log" | tr '\n' ' '))"
    return
  fi
  python3 - "$out/$label.time" "$out/$label.report.json" <<'EOF'
import json, re, sys
t = open(sys.argv[1]).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1)
wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
s = json.load(open(sys.argv[2]))["simulation"]
print(wall, rss, s["step_time_s"], s["symmetry"]["simulated_devices"], s["symmetry"]["blocks"], s["fidelity"])
EOF
}

echo "placesim simulate at scale ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)); caps ${cap_s} s, ${cap_gb} GB"
printf '%-44s %7s %9s %8s %9s %12s %10s' configuration GPUs fidelity "wall s" "peak GB" "step s" "simulated"
[ "$full" = 1 ] && printf ' %12s %9s %8s %9s' "full wall s" "peak GB" "ratio" "step diff"
echo
for entry in llama3-70b-fsdp-64xh100:flow llama3-70b-fsdp-64xh100:analytic mpt-70b-fsdp-512xh100:flow \
  gpt-80l-1024xa100:flow gpt-80l-1024xa100:full \
  gpt3-175b-interleaved-1024xa100:flow gpt3-175b-interleaved-2048xh100:flow gpt3-175b-interleaved-3072xa100:flow \
  gpt3-175b-interleaved-12288xa100:analytic gpt3-175b-interleaved-12288xa100:flow llama3-405b-16384xh100:flow \
  llama3-405b-interleaved-16384xh100:flow; do
  name=${entry%%:*}
  fidelity=${entry##*:}
  gpus=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['strategy']; print(s.get('dp',1)*s.get('tp',1)*s.get('pp',1)*s.get('cp',1))" "$root/bench/scale/$name.json")
  folded=$(run "$name" "$name.$fidelity" --fidelity "$fidelity")
  if [[ "$folded" == failed* ]]; then
    printf '%-44s %7s %9s %s\n' "$name" "$gpus" "$fidelity" "$folded"
    continue
  fi
  read -r wall rss step sim blocks _ <<<"$folded"
  printf '%-44s %7s %9s %8.1f %9.2f %12.4f %10s' "$name" "$gpus" "$fidelity" "$wall" "$(echo "$rss / 1048576" | bc -l)" \
    "$step" "$sim/$gpus"
  if [ "$full" = 1 ]; then
    unfolded=$(run "$name" "$name.$fidelity.full" --fidelity "$fidelity" --symmetry off --force)
    if [[ "$unfolded" == failed* ]]; then
      printf '  %s' "$unfolded"
    else
      read -r fwall frss fstep _ <<<"$unfolded"
      printf ' %12.1f %9.2f %7.0fx %+8.4f%%' "$fwall" "$(echo "$frss / 1048576" | bc -l)" \
        "$(echo "$fwall / $wall" | bc -l)" "$(echo "100 * ($step - $fstep) / $fstep" | bc -l)"
    fi
  fi
  echo
done

# An imperfect cluster: one node of the 16,384-GPU Llama 3 405B run at 0.8x; its block is simulated apart beside one
# untouched block, the others folded; the step without the straggler, which simulate also reports, runs folded in a
# child process.
for fidelity in analytic flow; do
  label=llama3-405b-16384xh100.slow-node.$fidelity
  r=$(run llama3-405b-16384xh100 "$label" --fidelity "$fidelity" --set 'cluster.slow={"node 17": 0.8}')
  if [[ "$r" == failed* ]]; then
    printf '%-44s %7s %9s %s\n' "llama3-405b-16384xh100 + node 17 at 0.8x" 16384 "$fidelity" "$r"
    continue
  fi
  read -r wall rss step sim blocks _ <<<"$r"
  printf '%-44s %7s %9s %8.1f %9.2f %12.4f %10s\n' "llama3-405b-16384xh100 + node 17 at 0.8x" 16384 "$fidelity" \
    "$wall" "$(echo "$rss / 1048576" | bc -l)" "$step" "$sim/16384"
done
