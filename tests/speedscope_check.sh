#!/usr/bin/env bash
# Real-viewer check (TESTING-NOTES.md): imports a placesim Chrome trace into speedscope 1.25.0 running in headless
# Chromium, asserts the import succeeded with the expected number of threads, and saves a screenshot.
#
#   tests/speedscope_check.sh [TRACE.json[.gz]]
#
# Without an argument it builds placesim and simulates examples/small-3d-1f1b.json (16 GPUs, dp 2 x tp 2 x pp 4,
# 1F1B, one compute event per layer) with `placesim simulate --trace`; any other placesim trace can be passed
# instead. Installs what is missing: Debian's chromium (apt-get) and npm speedscope@1.25.0 into $BUILD/viewer. The
# trace is validated first (bench/trace_check.cpp), which also gives the expected thread count N: speedscope must
# title the page "... (1/N)".
# Outputs in $BUILD/viewer: trace.png (speedscope), dom.html, and timings on stdout.
# Every external step has a time limit (SPEEDSCOPE_TIMEOUT seconds per browser run, default 120); the HTTP server
# this script starts is stopped by its pid on any exit.
# Environment: PLACESIM_BUILD (default: build/ in the checkout), SPEEDSCOPE_TIMEOUT.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PLACESIM_BUILD:-$root/build}
viewer=$build/viewer
mkdir -p "$viewer"
t0=$(date +%s.%N)
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f} s')" "$1" "$2"; }
fail() { echo "speedscope_check: FAILED: $*" >&2; exit 1; }
limit=${SPEEDSCOPE_TIMEOUT:-120}
# timeout signals the command's whole process group, so chromium's helper processes end with it.
bounded() { timeout --kill-after=10 "$@"; }

# --- viewer: chromium and speedscope, installed once ---
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  bounded 300 apt-get update -qq
  bounded 600 apt-get install -y -qq chromium >/dev/null
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "installing npm (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  bounded 300 apt-get update -qq
  bounded 600 apt-get install -y -qq npm >/dev/null
fi
app=$viewer/node_modules/speedscope/dist/release/index.html
if [ ! -f "$app" ]; then
  echo "installing speedscope@1.25.0 (npm) into $viewer"
  (cd "$viewer" && bounded 300 npm install --no-save --no-audit --no-fund --loglevel=error speedscope@1.25.0 >/dev/null)
fi
[ -f "$app" ] || fail "speedscope did not install: $app is missing"
t_installed=$(date +%s.%N)

# --- the trace, validated ---
trace=${1:-}
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
if [ -z "$trace" ]; then
  cmake --build "$build" --target placesim trace_check >/dev/null
  trace=$viewer/small-3d-1f1b.json
  "$build/placesim" simulate "$root/examples/small-3d-1f1b.json" --layer-group 1 --trace "$trace" \
    --svg "$viewer/small-3d-1f1b.svg" --report "$viewer/small-3d-1f1b.report.json" >"$viewer/simulate.log" ||
    { cat "$viewer/simulate.log" >&2; fail "placesim simulate failed"; }
else
  cmake --build "$build" --target trace_check >/dev/null
fi
[ -f "$trace" ] || fail "no trace file $trace"
check=$("$build/trace_check" "$trace") || { echo "$check" >&2; fail "$trace is not a valid trace"; }
threads=$(echo "$check" | awk '$1 == "threads" {print $2}')
[ "${threads:-0}" -gt 0 ] || fail "$trace has no thread with slices"
served=$viewer/served-trace.json  # speedscope reads plain JSON from a URL
if [[ "$trace" == *.gz ]]; then gzip -dc "$trace" >"$served"; else cp "$trace" "$served"; fi
t_trace=$(date +%s.%N)

# --- a loopback server and a throwaway browser profile, both removed on any exit ---
profile=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$profile"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # a signal exits normally, so the EXIT trap still stops the server
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$viewer" >"$viewer/http.log" 2>&1 &
server=$!
base=http://127.0.0.1:$port
for _ in $(seq 100); do
  python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "$base/served-trace.json" \
    2>/dev/null && break
  kill -0 "$server" 2>/dev/null || fail "the HTTP server exited (see $viewer/http.log)"
  sleep 0.1
done
profile_url=$(python3 -c "import urllib.parse, sys; print(urllib.parse.quote(sys.argv[1], safe=''))" \
  "$base/served-trace.json")
url="$base/node_modules/speedscope/dist/release/index.html#profileURL=$profile_url"
browser=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
  --disable-component-update --disable-sync --user-data-dir="$profile" --virtual-time-budget=5000)

# --- import: the page must name the first thread and count N threads ---
# The page's console goes to chromium.log: speedscope warns there when slices of a thread do not nest as it reads
# them ("Tried to end ..." / "... still open at end of profile"), which would draw them wrongly.
bounded "$limit" "${browser[@]}" --enable-logging=stderr --v=0 --dump-dom "$url" >"$viewer/dom.html" \
  2>"$viewer/chromium.log" || fail "chromium --dump-dom failed or took over $limit s (see $viewer/chromium.log)"
grep -q "(1/$threads)" "$viewer/dom.html" || fail "speedscope did not show (1/$threads); see $viewer/dom.html"
grep -q "Importing as Trace Event Format profile" "$viewer/chromium.log" ||
  fail "speedscope did not import $trace as a Chrome trace (see $viewer/chromium.log)"
misnested=$(grep -c -e "Tried to end" -e "still open at end of profile" "$viewer/chromium.log" || true)
[ "$misnested" -eq 0 ] || fail "speedscope misread the nesting of slices $misnested times; see $viewer/chromium.log"
title=$(grep -o "[^<>]*(pid [0-9]*), [^<>]*(tid [0-9]*)" "$viewer/dom.html" | sed -n 1p)
[ -n "$title" ] || fail "speedscope shows no '<process> (pid P), <thread> (tid T)' title"
t_import=$(date +%s.%N)

# --- a picture to look at ---
rm -f "$viewer/trace.png"
bounded "$limit" "${browser[@]}" --screenshot="$viewer/trace.png" --window-size=1400,700 "$url" >/dev/null \
  2>>"$viewer/chromium.log" || fail "chromium --screenshot failed or took over $limit s (see $viewer/chromium.log)"
[ -s "$viewer/trace.png" ] || fail "no screenshot written"
t_done=$(date +%s.%N)

echo "speedscope imported $trace: '$title' (1/$threads)"
echo "screenshot: $viewer/trace.png"
echo "time: installs $(elapsed "$t0" "$t_installed"), trace $(elapsed "$t_installed" "$t_trace"),"\
     "import $(elapsed "$t_trace" "$t_import"), screenshot $(elapsed "$t_import" "$t_done"), total $(elapsed "$t0" "$t_done")"
