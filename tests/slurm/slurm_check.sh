#!/usr/bin/env bash
# A real Slurm in CI (docs/slurm.md): starts a single-host Slurm cluster (munged, slurmctld, slurmd) in a
# temporary folder, runs a simulate-mode sweep as a 4-task array job, kills one task mid-shard, checks that the
# merge fails naming the missing points, resumes, and checks that the merged results are byte-identical to the
# same sweep run on one machine.
#
#   tests/slurm/slurm_check.sh
#
# Installs Debian's slurm-wlm and munge when missing (apt-get). Needs root (slurmd runs jobs as root). Every
# daemon it starts is stopped by its pid on any exit, after cancelling the jobs still queued; the temporary folder
# is removed unless SLURM_CHECK_KEEP=1. Every external step has a time limit.
# Environment: PLACESIM_BUILD (default: build/ in the checkout), SLURM_CHECK_KEEP.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${PLACESIM_BUILD:-$root/build}
t0=$(date +%s)

say() { echo "slurm_check: $*"; }
pass() { echo "slurm_check: PASS: $*"; }
# timeout signals the command's whole process group; --kill-after for a command that ignores SIGTERM.
bounded() { timeout --kill-after=5 "$@"; }

# --- 1. Slurm and munge, installed once ---
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null ||
   ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  bounded 300 apt-get update -qq
  bounded 600 apt-get install -y -qq slurm-wlm munge >/dev/null
fi
for tool in slurmctld slurmd sbatch squeue scancel sinfo scontrol munged; do
  command -v "$tool" >/dev/null ||
    { echo "slurm_check: FAIL: $tool is missing after installing slurm-wlm and munge" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "slurm_check: FAIL: needs root (slurmd runs the jobs as root here)" >&2; exit 1; }
[ -x "$build/placesim" ] ||
  { echo "slurm_check: FAIL: no placesim at $build/placesim (run scripts/test.sh first)" >&2; exit 1; }

# --- the temporary folder, the daemons' pids and the cleanup that stops them ---
tmp=$(mktemp -d /tmp/placesim-slurm.XXXXXX)
# munged wants every directory above its socket searchable by all ("Socket is inaccessible: execute permissions for
# all required"), and none writable by others.
chmod 0755 "$tmp"
munged_pid="" ctld_pid="" slurmd_pid=""
conf=$tmp/slurm.conf
export SLURM_CONF=$conf

stop_pid() {  # stop_pid PID NAME: SIGTERM, up to 10 s, then SIGKILL
  local pid=$1 i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "slurm_check: $2 (pid $pid) ignored SIGTERM; killing it" >&2
    kill -9 "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
# Job steps outlive slurmd (slurmstepd daemonizes), so jobs are cancelled first; a process of ours still left is
# found by the SLURM_CONF of this run in its environment.
stop_jobs() {
  [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null || return 0
  local i
  bounded 15 scancel --quiet --user=root >/dev/null 2>&1 || true
  for i in $(seq 50); do [ -z "$(bounded 10 squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
}
environ_has() { local pid=$1; shift; { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -q "$@"; }
stop_leftovers() {
  local p pid
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = $$ ] && continue
    if ! { environ_has "$pid" -xF "SLURM_CONF=$conf" && environ_has "$pid" '^SLURM_JOB_ID='; }; then continue; fi
    echo "slurm_check: killing leftover job process $pid" >&2
    kill -9 "$pid" 2>/dev/null || true
  done
}
cleanup() {
  local rc=$?
  trap - EXIT
  stop_jobs
  stop_pid "$slurmd_pid" slurmd
  stop_leftovers
  stop_pid "$ctld_pid" slurmctld
  stop_pid "$munged_pid" munged
  if [ "${SLURM_CHECK_KEEP:-0}" = 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # a signal exits normally, so the EXIT trap still stops the daemons

show_logs() {
  local f
  for f in "$tmp"/log/*.out "$tmp"/log/*.log "$tmp"/sweep/out/*.log; do
    [ -f "$f" ] || continue
    echo "----- tail of $f -----" >&2
    tail -n 25 "$f" >&2
  done
  echo "----- squeue -----" >&2
  bounded 10 squeue >&2 2>&1 || true
}
fail() { echo "slurm_check: FAIL: $*" >&2; show_logs; exit 1; }
# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s until it succeeds, or fails naming WHAT.
wait_for() {
  local limit=$1 what=$2 deadline
  shift 2
  deadline=$(($(date +%s) + limit))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "timed out after ${limit} s waiting for $what"
    sleep 0.2
  done
}

# --- 2. a single-host cluster: munged, slurmctld and slurmd, all in $tmp ---
mkdir -p "$tmp"/munge "$tmp"/log "$tmp"/state "$tmp"/spool "$tmp"/run "$tmp"/bin
chmod 0755 "$tmp"/munge
# A key of this run's own, so the check neither needs nor touches /etc/munge or a munged already running.
dd if=/dev/urandom of="$tmp"/munge/munge.key bs=1024 count=1 status=none
chmod 0400 "$tmp"/munge/munge.key
socket=$tmp/munge/munge.socket
munged -F --socket="$socket" --key-file="$tmp"/munge/munge.key --log-file="$tmp"/log/munged.log \
  --pid-file="$tmp"/munge/munged.pid --seed-file="$tmp"/munge/munged.seed >"$tmp"/log/munged.out 2>&1 &
munged_pid=$!
munge_up() {
  bounded 5 munge --socket="$socket" -n </dev/null 2>/dev/null | bounded 5 unmunge --socket="$socket" >/dev/null 2>&1
}
wait_for 20 "munged to answer on $socket" munge_up

# Ports of their own, so a Slurm already running on the machine (6817/6818) or another run of this check is no matter.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ctld_port=$(free_port)
slurmd_port=$(free_port)
# CR_CPU: every CPU is a consumable, so 1-CPU array tasks run side by side (one per CPU).
cat >"$conf" <<EOF
# Written by tests/slurm/slurm_check.sh: a one-machine cluster for the CI check (docs/slurm.md).
ClusterName=placesim-ci
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
MailProg=/bin/true
MinJobAge=600
NodeName=localhost CPUs=$(nproc) RealMemory=500 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$conf" >"$tmp"/log/slurmctld.out 2>&1 &
ctld_pid=$!
slurmd -D -N localhost -f "$conf" >"$tmp"/log/slurmd.out 2>&1 &
slurmd_pid=$!
node_idle() {
  kill -0 "$ctld_pid" 2>/dev/null || fail "slurmctld exited: $(tail -n 5 "$tmp"/log/slurmctld.out)"
  kill -0 "$slurmd_pid" 2>/dev/null || fail "slurmd exited: $(tail -n 5 "$tmp"/log/slurmd.out)"
  [ "$(bounded 10 sinfo -h -n localhost -o %T 2>/dev/null)" = idle ]
}
wait_for 60 "sinfo to show the node idle" node_idle
pass "single-host cluster up in $(($(date +%s) - t0)) s (slurmctld port $ctld_port, slurmd port $slurmd_port," \
  "$(nproc) CPUs, $conf)"

# --- 3. the scenario: a sweep as an array job, one task killed mid-shard, a failed merge, a resume ---
# The binary is copied so that a rebuild of the checkout during the run cannot change it under the jobs.
cp "$build/placesim" "$tmp"/bin/placesim
placesim=$tmp/bin/placesim
help=$(bounded 30 "$placesim" sweep --help) || fail "$build/placesim does not run (copied to $placesim)"
grep -q -- '--slurm' <<<"$help" || fail "placesim sweep has no --slurm (see placesim sweep --help)"
work=$tmp/sweep
out=$work/out
mkdir -p "$out"
# 2 x 3 x 4 = 24 points in simulate mode. The last axis varies fastest and has 4 values, so shard i of 4 holds the
# points with the i-th global batch: shard 1 gets the 768-sample batches (0.3-0.7 s a point), the others 0.1 s
# points, so task 1 is still running when it has written its first row.
cat >"$work"/sweep.json <<'JSON'
{
  "description": "tests/slurm/slurm_check.sh: shard 1 of 4 holds the slow points (global_batch 768)",
  "mode": "simulate",
  "base": {"model": {"layers": 8, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256},
           "training": {"global_batch": 32, "micro_batch": 1},
           "strategy": {"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4, "schedule": "1f1b"},
           "cluster": {"preset": "dgx-a100", "nodes": 2}},
  "axes": {"strategy.schedule": ["1f1b", "gpipe"], "model.layers": [8, 12, 16],
           "training.global_batch": [32, 768, 64, 128]}
}
JSON
tasks=4
points=$(bounded 30 "$placesim" sweep "$work"/sweep.json --count | awk '{print $1; exit}') ||
  fail "placesim sweep --count failed"
[ "$points" = 24 ] || fail "the check's sweep should have 24 points, placesim sweep --count says '$points'"
declare -a expected
for i in $(seq 0 $((tasks - 1))); do
  expected[i]=$(bounded 30 "$placesim" sweep "$work"/sweep.json --count --shard "$i/$tasks" | awk '{print $3}') ||
    fail "placesim sweep --count --shard $i/$tasks failed"
done

t_one=$(date +%s)
(cd "$work" && bounded 300 "$placesim" sweep sweep.json --out one.jsonl --quiet) || fail "the one-machine sweep failed"
[ "$(wc -l <"$work"/one.jsonl)" = "$points" ] || fail "one.jsonl has $(wc -l <"$work"/one.jsonl) rows, not $points"
grep -q '"status":"ok"' "$work"/one.jsonl || fail "no point of the one-machine sweep simulated ok"
pass "one-machine sweep: $points points in $(($(date +%s) - t_one)) s"

script=$out/results.sbatch
results=$out/results.jsonl
merge_log=$out/results.merge.log
shard_file() { echo "$out/results.shard-$1.jsonl"; }
gen=$(cd "$work" && bounded 30 "$placesim" sweep sweep.json --out "$results" --slurm --array-size "$tasks" \
  --cpus-per-task 1 2>&1) || fail "placesim sweep --slurm failed: $gen"
[ -f "$script" ] || fail "placesim sweep --slurm did not write $script: $gen"
grep -qx "#SBATCH --array=0-$((tasks - 1))" "$script" || fail "$script has no '#SBATCH --array=0-$((tasks - 1))'"
grep -qx '#SBATCH --cpus-per-task=1' "$script" || fail "$script has no '#SBATCH --cpus-per-task=1'"
pass "placesim sweep --slurm wrote $(basename "$script"): $(tr '\n' ' ' <<<"$gen")"

rows() { local f; f=$(shard_file "$1"); if [ -f "$f" ]; then wc -l <"$f"; else echo 0; fi; }
# squeue lists an ended job (for MinJobAge) when asked for it by id, so a task's state says whether it still runs.
task_state() { bounded 10 squeue -h -t all -j "$1" -o %T 2>/dev/null | head -n 1; }
task_active() {
  case $(task_state "$1") in PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED) return 0 ;; *) return 1 ;; esac
}
task_ended() { ! task_active "$1"; }
queue_empty() { [ -z "$(bounded 10 squeue -h -o %i 2>/dev/null)" ]; }
# The merge jobs so far, oldest first: "id state exit". Without accounting (no sacct) an ended job's state and exit
# code are kept by slurmctld for MinJobAge and shown by scontrol.
merge_jobs() {
  bounded 10 scontrol -o show job 2>/dev/null | grep ' JobName=placesim-merge ' |
    sed -n 's/^JobId=\([0-9]*\) .* JobState=\([A-Z_]*\) .* ExitCode=\([0-9:]*\) .*$/\1 \2 \3/p' | sort -n || true
}
submit() { (cd "$work" && bounded 30 sbatch --parsable "$script"); }

# --- the first run: a task cancelled mid-shard, so the merge must fail ---
t_run=$(date +%s)
jid=$(submit) || fail "sbatch $script failed"
say "submitted array job $jid ($tasks tasks of 1 CPU)"
victim=""
declare -A tried=()
deadline=$(($(date +%s) + 120))
while [ -z "$victim" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "no task could be cancelled mid-shard within 120 s"
  queue_empty && fail "the whole array finished before a task could be cancelled mid-shard (make shard 1 slower)"
  # Task 1 holds the slow points; another task is cancelled only if task 1 finished before the cancel reached it.
  if [ -z "${tried[1]:-}" ] && task_active "${jid}_1"; then candidates=1; else candidates="0 2 3"; fi
  for t in $candidates; do
    [ -n "${tried[$t]:-}" ] && continue
    r=$(rows "$t")
    if ! { [ "$r" -ge 1 ] && [ "$r" -lt "${expected[t]}" ] && [ "$(task_state "${jid}_$t")" = RUNNING ]; }; then
      continue
    fi
    bounded 10 scancel "${jid}_$t" || fail "scancel ${jid}_$t failed"
    tried[$t]=1
    wait_for 60 "task ${jid}_$t to end" task_ended "${jid}_$t"
    r=$(rows "$t")
    if [ "$r" -lt "${expected[t]}" ]; then
      victim=$t
      pass "cancelled task ${jid}_$t mid-shard: $r of ${expected[t]} rows written ($(task_state "${jid}_$t"))"
    else
      say "task ${jid}_$t finished its shard before the cancel reached it; cancelling another task"
    fi
    break
  done
  sleep 0.05
done
wait_for 120 "the array and the first merge to end" queue_empty
[ "$(merge_jobs | wc -l)" = 1 ] || fail "the array job should submit one merge, scontrol shows: $(merge_jobs)"
read -r merge1 state1 exit1 < <(merge_jobs)
[ -f "$merge_log" ] || fail "the first merge (job $merge1) wrote no log $merge_log"
cp "$merge_log" "$out"/first-merge.log  # the resumed merge appends its own lines
[ "$state1" = FAILED ] || fail "the first merge (job $merge1) should fail, it is $state1 (exit $exit1)"
grep -q missing "$merge_log" || fail "the first merge's log does not say 'missing'"
missing=$(comm -13 <(sed -n 's/^{"index":\([0-9]*\),.*}$/\1/p' "$(shard_file "$victim")" | sort) \
  <(seq "$victim" "$tasks" $((points - 1)) | sort) | sort -n)
grep -qw "$(head -n 1 <<<"$missing")" "$merge_log" ||
  fail "the first merge's log does not name the first missing index, $(head -n 1 <<<"$missing")"
grep -qF "$(shard_file "$victim")" "$merge_log" ||
  fail "the first merge's log does not name the incomplete shard's file $(shard_file "$victim")"
[ ! -f "$results" ] || fail "the failed merge wrote $results"
pass "first merge (job $merge1) failed naming the missing indices ($(tr '\n' ' ' <<<"$missing")); its log:"
sed 's/^/    /' "$merge_log"

# --- the resume: the same script again ---
jid2=$(submit) || fail "sbatch $script (resume) failed"
say "resubmitted $(basename "$script"): array job $jid2"
wait_for 120 "the resumed array and its merge to end" queue_empty
[ "$(merge_jobs | wc -l)" = 2 ] || fail "the resumed array should submit one new merge, scontrol shows: $(merge_jobs)"
read -r merge2 state2 exit2 < <(merge_jobs | tail -n 1)
[ "$state2" = COMPLETED ] || fail "the second merge (job $merge2) is $state2 (exit $exit2)"
[ -f "$results" ] || fail "the second merge wrote no $results"
cmp "$results" "$work"/one.jsonl || fail "$results differs from the one-machine one.jsonl"
pass "resumed: array $jid2 and merge $merge2; results.jsonl is byte-identical to the one-machine sweep" \
  "($points rows; both runs $(($(date +%s) - t_run)) s)"
pass "Slurm check in $(($(date +%s) - t0)) s"
