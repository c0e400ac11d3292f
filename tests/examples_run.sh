#!/usr/bin/env bash
# Every user-facing example a README reader runs (examples/*.json and examples/<topic>/*.json, not the validation,
# convergence, verify, sweep or calibration inputs, which their own tests run) must simulate as shipped: a refusal
# (memory, size limits) or an input error here means the example teaches a command that fails. Examples without a
# cluster are analyze examples: they must analyze. Usage: tests/examples_run.sh PLACESIM [REPO_ROOT]
set -u
placesim=$1
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
failed=0
count=0
while IFS= read -r f; do
  count=$((count + 1))
  if grep -q '"cluster"' "$f"; then verb=(simulate "$f" --fidelity analytic --quiet); else verb=(analyze "$f"); fi
  if ! out=$("$placesim" "${verb[@]}" 2>&1 >/dev/null); then
    echo "FAIL: placesim ${verb[*]}"
    echo "$out" | tail -3
    failed=$((failed + 1))
  fi
done < <(find "$root/examples" -maxdepth 2 -name '*.json' -not -path '*/validation*' -not -path '*/convergence/*' \
           -not -path '*/verify/*' -not -path '*/sweeps/*' -not -name 'calibrate-*' | sort)
echo "$count examples, $failed failed"
[ "$count" -gt 0 ] && [ "$failed" -eq 0 ]
