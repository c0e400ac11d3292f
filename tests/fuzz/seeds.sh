#!/usr/bin/env bash
# Writes the seed corpus of tests/fuzz/fuzz_inputs into the folder given (created, emptied first): every JSON input
# of the repository (examples/, tests/data/, tests/golden/, docs/examples/, topology/profiles/) prefixed with the
# selector character of the parser that reads it, plus hand-written --set lines, boundary values and unit strings.
# The measurement files of topology/profiles/measurements/ are left out: they hold more points than the harness
# calibrates (kMaxCalibrationPoints).
# With TARGET fuzz_simulate, the seeds of tests/fuzz/fuzz_simulate instead: --set lines over its tiny experiment,
# among them the SimGrid settings that crashed or aborted SimGrid before cluster.simgrid_config was checked.
# Usage: bash tests/fuzz/seeds.sh OUT_DIR [TARGET]   (TARGET: fuzz_inputs, the default, or fuzz_simulate)
set -euo pipefail
out=${1:?usage: seeds.sh OUT_DIR [TARGET]}
target=${2:-fuzz_inputs}
cd "$(dirname "$0")/../.."
rm -rf "$out"
mkdir -p "$out"

if [ "$target" = fuzz_simulate ]; then
  # simulate_seed NAME: standard input as OUT_DIR/NAME.
  simulate_seed() { cat >"$out/$1"; }
  simulate_seed maxmin-precision-crash <<<'cluster.simgrid_config={"maxmin/precision": "-1"}'
  simulate_seed network-model-abort <<<'cluster.simgrid_config={"network/model": "Bogus"}'
  simulate_seed lv08-crosstraffic <<<'cluster.simgrid_config={"network/model": "LV08", "network/crosstraffic": "1"}'
  simulate_seed ptask <<<'cluster.simgrid_config={"host/model": "ptask_L07", "network/model": "SMPI"}'
  printf '%s\n' 'cluster.simgrid_config.network/TCP-gamma="4194304"' 'cluster.simgrid_config.network/model=IB' |
    simulate_seed tcp-gamma
  simulate_seed precision <<<'cluster.simgrid_config={"maxmin/precision": "1e-15", "surf/precision": "1e-2"}'
  printf '%s\n' 'cluster.simgrid_config.network/latency-factor="13.01"' \
    'cluster.simgrid_config.network/bandwidth-factor="0.97"' | simulate_seed factors
  simulate_seed full-unfolded <<<$'--fidelity=full\n--symmetry=off\ncluster.nodes=1\ncluster.gpus_per_node=8'
  simulate_seed analytic <<<$'--fidelity=analytic\nstrategy.schedule=gpipe'
  simulate_seed interleaved <<<$'strategy.schedule="interleaved"\nstrategy.chunks=2\ntraining.global_batch=4'
  simulate_seed fsdp <<<$'strategy={"preset": "fsdp", "dp": 8}\ncluster.fabric=rail-optimized'
  simulate_seed offload <<<$'strategy={"preset": "zero3", "dp": 8, "placement": {"optimizer": "offloaded"}}'
  simulate_seed links <<<$'cluster.comm_model=links\ncluster.oversubscription=2\ncluster.switch_radix=4'
  simulate_seed whole <examples/small-3d-1f1b.json
  echo "$(find "$out" -type f | wc -l) seeds in $out"
  exit 0
fi

# The selector characters of fuzz_inputs.cpp (kParsers).
experiment=0 set=1 sweep=2 hf=3 calibration=4 profile=5 units=6 results=7 trace=8

# seed SELECTOR NAME: the selector character then standard input, as OUT_DIR/SELECTOR-NAME.
seed() {
  { printf %s "$1"; cat; } >"$out/$1-$2"
}

# Which parser reads a JSON file, from the keys it holds.
selector_of() {
  if grep -q '"axes"' "$1"; then echo $sweep
  elif grep -q '"model_type"' "$1"; then echo $hf
  elif grep -q '"gemm_peak_efficiency"' "$1"; then echo $profile
  elif grep -qE '"(gemm|collectives|memory)": *\[' "$1"; then echo $calibration
  else echo $experiment
  fi
}

find examples tests/data tests/golden docs/examples topology/profiles -name '*.json' -not -path '*/expected/*' \
  -not -path '*/measurements/*' |
  sort | while read -r file; do
    selector=$(selector_of "$file")
    seed "$selector" "${file//\//_}" <"$file"
  done

# Profiler traces: the public test traces (the first 64 KB of their text, cut mid-JSON too) and the ROCm one whole.
for file in tests/data/profiler/hta/*.json.gz tests/data/profiler/hta/sampled/*.json.gz; do
  { gzip -dc "$file" || true; } | head -c 65536 | seed $trace "${file//\//_}"
done
gzip -dc tests/data/profiler/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz | seed $trace rocm-whole

# Sweep results: the golden rows, and two shards of one sweep parted by a form feed.
for file in tests/golden/*/expected/rows.jsonl; do
  head -c 20000 "$file" | seed $results "${file//\//_}"
done
printf '%s\n\f%s\n' \
  '{"index":0,"shard":"0/2","sweep":"0123456789abcdef","version":"0.19.0","points":2,"point":{"a":1},"status":"ok","x":1}' \
  '{"index":1,"shard":"1/2","sweep":"0123456789abcdef","version":"0.19.0","points":2,"point":{"a":2},"status":"filtered","reason":"filters.a"}' |
  seed $results shards

seed $set dp <<<'strategy.dp=4'
seed $set preset <<<'strategy.preset=zero3'
seed $set placement <<<'strategy.placement.gradients=sharded'
seed $set mesh <<<'strategy.mesh={"dp_shard": 2, "dp_replicate": 1, "tp": 2, "pp": 4}'
seed $set model <<<$'model=gpt-7.5b\nstrategy.tp=8\nstrategy.pp=1\ncluster.nodes=4'
seed $set schedule <<<$'strategy.schedule="interleaved"\nstrategy.chunks=2'
seed $set pipedream <<<$'strategy.schedule=pipedream\nstrategy.noam=2'
seed $set training <<<$'training.micro_batch=2\ntraining.recompute=full\ntraining.dtype="fp16"'
seed $set cluster <<<$'cluster={"preset": "dgx-h100", "nodes": 2, "nic_bw": "400Gbps"}'
seed $set list <<<'model.layers=[1, 2.5, null, true, "x"]'

# Boundary values a user can type: the extremes of the integer and double ranges, which random mutation rarely
# reaches, a --set value that is not UTF-8 (the shell passes any bytes) and an empty key.
seed $set int64-hidden <<<'model.hidden=9223372036854775807'
seed $set int64-batch <<<$'training.global_batch=9223372036854775806\ntraining.micro_batch=1'
seed $set int64-microbatches <<<$'strategy.microbatches=9223372036854775807\ntraining.global_batch=0'
seed $set int32-mesh <<<'strategy.mesh={"dp_shard": 2147483647, "dp_replicate": 2, "tp": 1, "pp": 1}'
seed $set int32-nodes <<<$'cluster.nodes=2147483647\ncluster.gpus_per_node=2147483647'
seed $set huge-double <<<$'strategy.bucket_bytes=1e308\ncluster.nic_bw=1e-300'
printf 'name=\xff\n' | seed $set not-utf8
# sweep_axis NAME AXIS: a sweep of the gpt-7.5b base over one axis written as JSON.
sweep_axis() {
  printf '{"base": {"model": "gpt-7.5b", "strategy": "dp"}, "axes": {"strategy.dp": %s}}\n' "$2" | seed $sweep "$1"
}
sweep_axis int64-step '{"from": 1, "to": 9223372036854775807, "step": 9223372036854775807}'
sweep_axis int64-negative-from '{"from": -9223372036854775807, "to": 9223372036854775807, "step": 4611686018427387904}'
seed $sweep empty-key <<<'{"base": {"model": "gpt-7.5b", "": {}}, "axes": {"strategy.schedule": ["gpipe"]}}'
seed $hf int64-gpt2 <<<'{"model_type": "gpt2", "n_layer": 2, "n_embd": 9223372036854775807, "n_head": 1,
  "vocab_size": 1, "n_positions": 1}'

# Units: a second character picks the parser (fuzz_units): 0 size, 1 bandwidth, 2 time, 3 FLOP/s, 4 --shard,
# 5 --rank-by, 6 --fidelity, 7 a --set value.
unit() {
  printf %s%s "$1" "$2" | seed $units "$1-$3"
}
unit 0 80GiB gib; unit 0 '1.5 TB' tb; unit 0 512MB mb; unit 0 0 zero
unit 1 400Gbps gbps; unit 1 '25 GB/s' gbs; unit 1 100Gb/s gbits
unit 2 2us us; unit 2 '1.5 ms' ms; unit 2 500ns ns
unit 3 312TFLOPS tflops; unit 3 '989 TFLOP/s' tflops-slash; unit 3 1.2PFLOPS pflops
unit 4 3/16 shard; unit 5 -simulation.mfu rank-desc; unit 5 simulation.step_time_s rank
unit 6 flow fidelity; unit 7 '{"a": [1, 2.5e9, true, null]}' object; unit 7 1e308 big
echo "$(find "$out" -type f | wc -l) seeds in $out"
