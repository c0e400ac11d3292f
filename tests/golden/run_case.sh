#!/usr/bin/env bash
# Runs one golden case, in the spirit of SimGrid's .tesh files: tests/golden/<case>/ holds the inputs, a file `args`
# (one line: the placesim command's arguments; $OUT names a fresh output folder) and expected/, whose files are the
# expected stdout (`stdout`) and output files (by name, written under $OUT). The case passes when every expected file
# is byte-identical to what the command produced and the command exited 0 (or the code in `exit_code`).
#   run_case.sh PLACESIM CASE_DIR [--update]   (--update rewrites expected/ from this run)
set -euo pipefail
placesim=$1
case_dir=$2
mode=${3:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$case_dir"
read -r line < args
expected_rc=0
[ -f exit_code ] && read -r expected_rc < exit_code
args=${line//\$OUT/$out}
set +e
# shellcheck disable=SC2086  # the args line is split into words on purpose
"$placesim" $args > "$out/stdout" 2> "$out/stderr"
rc=$?
set -e
# The output folder is new on every run: name it $OUT in what the command printed.
sed -i "s|$out|\$OUT|g" "$out/stdout" "$out/stderr"
if [ "$rc" != "$expected_rc" ]; then
  echo "golden $(basename "$case_dir"): exit code $rc, expected $expected_rc; stderr:"
  cat "$out/stderr"
  exit 1
fi
if [ "$mode" = "--update" ]; then
  mkdir -p expected
  for f in expected/*; do [ -e "$f" ] && cp "$out/$(basename "$f")" "$f"; done
  [ -e expected/stdout ] || cp "$out/stdout" expected/stdout
  exit 0
fi
status=0
for f in expected/*; do
  name=$(basename "$f")
  if [ ! -e "$out/$name" ]; then
    echo "golden $(basename "$case_dir"): the command wrote no $name"
    status=1
  elif ! cmp -s "$f" "$out/$name"; then
    echo "golden $(basename "$case_dir"): $name differs from the expected file:"
    diff "$f" "$out/$name" | head -40
    status=1
  fi
done
exit $status
