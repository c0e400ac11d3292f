#!/usr/bin/env bash
# Builds placesim and placesim_tests with AddressSanitizer and UndefinedBehaviorSanitizer (g++, -O1, frame pointers,
# UB fatal) into build-asan/ and runs the whole test suite there (CTest, as scripts/test.sh does for build/).
# Exits non-zero when a test fails; a sanitizer report fails the test that triggered it (its output is in
# build-asan/ctest.log). Extra arguments go to ctest, e.g. `bash scripts/sanitize.sh -R golden`.
#
# SimGrid: placesim starts no SimGrid actors (every activity is started and continued from maestro's callbacks), so
# SimGrid never switches stacks in these runs and ASan needs no fiber annotations (Debian's libsimgrid itself is not
# instrumented). Were actors ever added, their raw/ucontext stack switches would confuse ASan's stack bookkeeping:
# run them on threads then (SimGrid's contexts/factory:thread) rather than silencing ASan.
# Leaks: LeakSanitizer checks every test process at exit (detect_leaks=1). It needs to stop the process's threads
# with ptrace, which some containers deny ("LeakSanitizer has encountered a fatal error"); only there set
# ASAN_OPTIONS=detect_leaks=0.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/install-missing.sh
install_missing "${placesim_packages[@]}"

ccache_launcher
# Debug keeps assertions; -O1 makes the suite fast enough under the sanitizers while keeping stacks readable.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DPLACESIM_SANITIZE=ON \
  "${launcher[@]}" >/dev/null
start=$(date +%s)
cmake --build build-asan -j"$(nproc)" --target placesim placesim_tests
echo "sanitizer build: $(($(date +%s) - start)) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1:strict_init_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
start=$(date +%s)
status=0
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" "$@" >build-asan/ctest.log 2>&1 || status=$?
echo "sanitizer ctest: $(($(date +%s) - start)) s (log: build-asan/ctest.log)"
tail -n 40 build-asan/ctest.log
grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' build-asan/ctest.log | sort | uniq -c || true
exit "$status"
