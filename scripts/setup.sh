#!/usr/bin/env bash
# Installs what is missing (Debian packages), builds placesim in Release into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(build-essential cmake pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev catch2 zlib1g-dev
          python3-matplotlib python3-pandas)
source scripts/install-missing.sh
install_missing "${packages[@]}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
