#!/usr/bin/env bash
# Installs what is missing (Debian packages), builds placesim in Release into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(build-essential cmake pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev catch2 zlib1g-dev
          python3-matplotlib python3-pandas)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
