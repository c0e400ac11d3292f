#!/usr/bin/env bash
# Sourced by the set-up scripts: install_missing PACKAGE... installs, with apt-get, those of the Debian packages
# named that are not installed yet (quietly; prints what it installs). Needs root when something is missing.
# The packages placesim builds and runs with (scripts/setup.sh, the sanitizer build).
placesim_packages=(build-essential cmake pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev catch2
                   zlib1g-dev python3-matplotlib python3-pandas)

# ccache_launcher: sets the array `launcher` to the CMake arguments that compile through ccache when it is installed.
ccache_launcher() {
  launcher=()
  if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
}

install_missing() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}
