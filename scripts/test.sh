#!/usr/bin/env bash
# Builds every target (installing what is missing: scripts/setup.sh builds the placesim program alone) and runs the
# whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
