#!/usr/bin/env bash
# Analytic against flow fidelity: every example, every configuration of bench/scale/ and the
# NIC-shared cases of tests/data/nic-shared/, each simulated at both fidelities (folded, --force); prints each step
# time, the gap and the analytic NIC overlap, then the worst gap. Goal: within 5 % everywhere.
#
#   bench/fidelity_gap.sh [EXPERIMENT.json ...]      (default: the sets above)
# Environment: PLACESIM_BUILD (default: build/ in the checkout).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PLACESIM_BUILD:-$root/build}
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target placesim >/dev/null
bin=$(mktemp /tmp/placesim-fidelity-XXXXXX)
cp "$build/placesim" "$bin"
chmod +x "$bin"
trap 'rm -f "$bin"' EXIT
if [ $# -eq 0 ]; then
  set -- "$root"/examples/gpt3-175b-3d.json "$root"/examples/llama3-*.json "$root"/examples/small-3d-1f1b.json \
    "$root"/examples/zero3-7.5b.json "$root"/examples/long-context/*.json "$root"/bench/scale/*.json \
    "$root"/tests/data/nic-shared/*.json
fi
worst=0
for f in "$@"; do
  line=$(python3 - "$bin" "$f" <<'PY'
import json, subprocess, sys
bin, f = sys.argv[1], sys.argv[2]
def run(fidelity):
    out = subprocess.run([bin, "simulate", f, "--quiet", "--force", "--report", "-", "--fidelity", fidelity],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)["simulation"]
a, b = run("analytic"), run("flow")
if a is None or b is None:
    print(f"{f}: not simulated (see placesim simulate {f})")
else:
    gap = 100 * (a["step_time_s"] / b["step_time_s"] - 1)
    print(f"{gap:+.2f} {f.split('/')[-2] + '/' + f.split('/')[-1]:<58} analytic {a['step_time_s']:9.4f} s  flow {b['step_time_s']:9.4f} s  "
          f"gap {gap:+6.2f} %  NIC overlap {a['analytic_nic_overlap_s']:.3f} s")
PY
)
  case "$line" in
    *"not simulated"*) echo "$line" ;;
    *) gap=${line%% *}; echo "${line#* }"
       worst=$(python3 -c "import sys; print(max(abs(float(sys.argv[1])), float(sys.argv[2])))" "$gap" "$worst") ;;
  esac
done
echo "worst gap: $worst %"
