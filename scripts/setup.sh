#!/usr/bin/env bash
# Installs what is missing (Debian packages), builds the placesim program in Release into build/ (only that target:
# scripts/test.sh builds the rest).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-missing.sh
install_missing "${placesim_packages[@]}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target placesim
