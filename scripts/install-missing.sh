#!/usr/bin/env bash
# Sourced by the set-up scripts: install_missing PACKAGE... installs, with apt-get, those of the Debian packages
# named that are not installed yet (quietly; prints what it installs). Needs root when something is missing.
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
