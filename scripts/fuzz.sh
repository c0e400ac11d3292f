#!/usr/bin/env bash
# Fuzzes placesim with libFuzzer (tests/fuzz/): fuzz_inputs its input parsers, fuzz_simulate the simulate path through
# SimGrid (a forked child per input). Installs clang and libFuzzer when missing (Debian packages), builds the fuzz
# targets with clang and ASan + UBSan into build-fuzz/, writes each target's seed corpus (tests/fuzz/seeds.sh), and
# runs every target for an equal share of SECONDS (default 150: 75 s each).
# Exits non-zero on any finding (crash, uncaught non-InputError exception, leak, UB, timeout, out of memory); the
# input that caused it is left in build-fuzz/findings/<target>/ (emptied at the start of each run). The corpus grows
# in build-fuzz/corpus/<target>/ across runs.
# Usage: bash scripts/fuzz.sh [SECONDS] [extra libFuzzer arguments, e.g. -fork=2 -ignore_crashes=1]
# Reproduce a finding: build-fuzz/tests/fuzz/<target> build-fuzz/findings/<target>/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-150}
shift $(($# > 0 ? 1 : 0))

# The fuzz build configures the whole project (CMake finds every dependency) but compiles only tests/fuzz.
packages=(clang libclang-rt-14-dev cmake make pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev catch2
          zlib1g-dev)
source scripts/install-missing.sh
install_missing "${packages[@]}"

ccache_launcher
# Debug keeps assertions; tests/fuzz/CMakeLists.txt adds -O1 and the sanitizers.
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DPLACESIM_FUZZ=ON \
  "${launcher[@]}" >/dev/null
targets=()
for src in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
start=$(date +%s)
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
echo "fuzz build: $(($(date +%s) - start)) s"

rm -rf build-fuzz/seeds
for t in "${targets[@]}"; do bash tests/fuzz/seeds.sh "build-fuzz/seeds/$t" "$t"; done
rm -rf build-fuzz/findings build-fuzz/run
mkdir -p build-fuzz/run build-fuzz/logs
# Leaks are findings; UB halts with a stack (the build makes it fatal too).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
share=$((seconds / ${#targets[@]}))
status=0
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/findings/$t"
  log=build-fuzz/logs/$t.log
  echo "fuzzing $t for $share s (log: $log)"
  # An empty working directory: relative paths an input names (model.hf_config, ...) resolve to nothing. The
  # harness's scratch files go to its TMPDIR, under the folder each run empties (fork mode leaves them behind).
  (cd build-fuzz/run && mkdir -p tmp && export TMPDIR=$PWD/tmp &&
    "../tests/fuzz/$t" -max_total_time="$share" -timeout=10 -rss_limit_mb=2048 -max_len=12000 \
      -dict=../../tests/fuzz/json.dict -artifact_prefix="../findings/$t/" -print_final_stats=1 \
      "../corpus/$t" "../seeds/$t" "$@") >"$log" 2>&1 || status=1
  grep -E '^(Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb|INFO: exiting)' "$log" || true
  grep -E '^#[0-9]+' "$log" | tail -1 || true
  if [ -n "$(ls -A "build-fuzz/findings/$t")" ]; then
    status=1
    echo "FINDINGS of $t (inputs in build-fuzz/findings/$t/):"
    ls -l "build-fuzz/findings/$t"
    grep -E '^(==[0-9]+== ?ERROR|SUMMARY|.*runtime error:|  what\(\):)' "$log" | sed -E 's/^==[0-9]+==/==/' |
      sort | uniq -c | head -20 || true
  fi
done
exit "$status"
