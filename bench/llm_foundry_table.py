#!/usr/bin/env python3
"""Predicted vs published throughput for the bf16 and FP8 rows of MosaicML llm-foundry's benchmark tables.

The rows are examples/validation2024/llm-foundry-table.csv: the tables 'H100 80GB BF16 (Large Scale, >= 128 GPUs)',
'H100 80GB BF16', 'A100 80GB with 1600 Gbps node-node interconnect (RoCE)' and 'H100 80GB FP8' of mosaicml/llm-foundry
scripts/train/benchmarking/README.md at commit 5e85bd6 (2024-01-06), copied column by column. Each row becomes an
experiment the way a user would write it from the table and the repository of that commit:

- the model: MPT (scripts/train/yamls/pretrain/mpt-<size>.yaml: d_model, n_heads, n_layers, expansion_ratio 4, vocab
  50368; MPTConfig defaults: learned positions, biases, tied embeddings, no dropout, LayerNorm, GeLU) = family gpt
  without dropout, at the row's sequence length;
- micro-batch, global batch (GradAccum x MicroBatchSize x GPUs when the table's global batch is not a multiple),
  activation checkpointing (recompute full), MP mode (DEFAULT: gradients reduced in fp32, placesim's default; PURE:
  bf16), sharding (FULL_SHARD: the fsdp preset; SHARD_GRAD_OP: zero2, parameters gathered once per step), and
  Composer's FSDP being PyTorch's FSDP1 (strategy.flat_params: the gathered flat buffer used in place, the gradients
  concatenated into the flat gradient before the reduce-scatter);
- attention: attn_impl triton, submit_benchmarks.py's default, set into every run (training.attention_kernel triton);
- the loss: ComposerMPTCausalLM's default loss_fn fused_crossentropy, flash-attn's CrossEntropyLoss on the 16-bit
  logits (llmfoundry/models/mpt/modeling_mpt.py; training.loss_kernel fused);
- FP8 (precision amp_fp8): submit_benchmarks.py runs Transformer Engine's linears (model fc_type te, TE v0.10) with
  the same Triton attention: training.fp8 with Transformer Engine's delayed scaling (training.fp8_scaling delayed;
  the fsdp preset's default is torchao's tensorwise);
- the cluster: DGX H100 nodes (the H100 tables name no interconnect: assumed) or DGX A100 nodes with 8 x 200 Gb/s
  RoCE (the A100 table's 1600 Gbps node-node interconnect).

Nothing is fitted to these rows. Runs `placesim simulate --fidelity analytic` for each (two at a time), prints a
Markdown table with the signed error (positive: placesim predicts more tokens/s than published), then the mean
absolute and worst error per table, per sequence-length band and over all rows, then, over the runs published on both
H100 and A100 (same model, sequence and GPU count), how far placesim's H100/A100 per-GPU ratio is from the published.

Usage: bench/llm_foundry_table.py [build/placesim] [--only SUBSTRING] [--attention-kernel fused|flash1|triton]
(--attention-kernel: what-if with another attention kernel than the one the runs used).
"""
import concurrent.futures
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "examples", "validation2024", "llm-foundry-table.csv")
# d_model, n_heads, n_layers of scripts/train/yamls/pretrain/mpt-<size>.yaml at commit 5e85bd6.
SHAPES = {"125m": (768, 12, 12), "350m": (1024, 16, 24), "760m": (1536, 12, 24), "1b": (2048, 16, 24),
          "3b": (2560, 20, 32), "7b": (4096, 32, 32), "13b": (5120, 40, 40), "30b": (7168, 56, 48),
          "70b": (8192, 64, 80)}


def experiment(row, attention_kernel):
    hidden, heads, layers = SHAPES[row["model"]]
    gpus, mb, ga, gb = (int(row[k]) for k in ("gpus", "micro_batch", "grad_accum", "global_batch"))
    a100 = row["gpu"].startswith("a100")
    training = {"global_batch": gb if gb % (mb * gpus) == 0 else mb * ga * gpus, "micro_batch": mb,
                "dtype": "bf16", "recompute": "full" if row["activation_checkpointing"] == "True" else "none",
                "attention_kernel": attention_kernel, "loss_kernel": "fused"}
    if row["mp_mode"] == "PURE":
        training["grad_dtype"] = "bf16"
    if row["precision"] == "amp_fp8":
        training["fp8"] = True
        training["fp8_scaling"] = "delayed"
    cluster = {"preset": "dgx-a100" if a100 else "dgx-h100", "nodes": max(1, gpus // 8)}
    if a100:
        cluster["comm"] = {"inter_node": "roce-200g"}
    fp8 = "-fp8" if row["precision"] == "amp_fp8" else ""
    return {"name": f"mpt-{row['model']}-{row['seq_len']}-{gpus}x{'a100' if a100 else 'h100'}{fp8}",
            "model": {"family": "gpt", "layers": layers, "hidden": hidden, "heads": heads, "vocab": 50368,
                      "seq_len": int(row["seq_len"]), "dropout": False},
            "training": training,
            "strategy": {"preset": "fsdp" if row["sharding"] == "FULL_SHARD" else "zero2", "dp": gpus,
                         "flat_params": True},
            "cluster": cluster}


def simulate(placesim, folder, index, exp):
    path = os.path.join(folder, f"{index:03d}.json")
    report = path + ".report"
    json.dump(exp, open(path, "w"))
    run = subprocess.run([placesim, "simulate", path, "--fidelity", "analytic", "--report", report],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:  # refused (e.g. does not fit): reported as such, never dropped silently
        return run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"exit {run.returncode}"
    return json.load(open(report))["simulation"]["tokens_per_s"]


def band(seq):
    return "seq <= 1k" if seq <= 1024 else "seq 2k-4k" if seq <= 4096 else "seq 8k-16k" if seq <= 16384 else \
        "seq 32k-64k"


def pairs(rows, chosen, predicted):
    """The same run on H100 and on A100: 16-bit rows of equal model, sequence and GPU count, one in an H100 table and
    one in the A100 table (a key with more than one row on a GPU is skipped). The software, model and parallelism
    cancel in the ratio of per-GPU tokens/s, which leaves the two accelerators' profiles; printed is how far
    placesim's ratio is from the published one (positive: placesim puts H100 further ahead)."""
    by_key = {}
    for i in chosen:
        r = rows[i]
        if r["precision"] == "amp_fp8" or isinstance(predicted[i], str):
            continue
        gpu = "h100" if r["gpu"].startswith("h100") else "a100"
        by_key.setdefault((r["model"], int(r["seq_len"]), int(r["gpus"])), {}).setdefault(gpu, []).append(i)
    found = []
    for (model, seq, gpus), on in by_key.items():
        if len(on.get("h100", [])) != 1 or len(on.get("a100", [])) != 1:
            continue
        h, a = on["h100"][0], on["a100"][0]
        published = float(rows[h]["tokens_per_s"]) / float(rows[a]["tokens_per_s"])
        found.append((seq, 100 * (predicted[h] / predicted[a] / published - 1)))
    if not found:
        return
    print()
    for label, sel in (("every pair", lambda seq: True), ("seq <= 2k", lambda seq: seq <= 2048),
                       ("seq >= 4k", lambda seq: seq >= 4096)):
        devs = sorted(d for seq, d in found if sel(seq))
        if not devs:
            continue
        mean = sum(devs) / len(devs)
        mean_abs = sum(abs(d) for d in devs) / len(devs)
        print(f"H100 / A100 per-GPU ratio, same run on both ({label}): {len(devs)} pairs, placesim's ratio "
              f"{mean:+.1f}% from the published on average (mean absolute {mean_abs:.1f}%, {devs[0]:+.1f}% to "
              f"{devs[-1]:+.1f}%)")


def main(argv):
    placesim = next((a for a in argv if a.endswith("placesim")), os.path.join(ROOT, "build", "placesim"))
    only = argv[argv.index("--only") + 1] if "--only" in argv else ""
    kernel = argv[argv.index("--attention-kernel") + 1] if "--attention-kernel" in argv else "triton"
    rows = [r for r in csv.DictReader(open(TABLE))]
    exps = [experiment(r, kernel) for r in rows]
    chosen = [i for i, e in enumerate(exps) if only in e["name"]]
    with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(2) as pool:
        predicted = dict(zip(chosen, pool.map(lambda i: simulate(placesim, folder, i, exps[i]), chosen)))
    print("| row | table | GPUs | micro-batch x accum | recompute | published tokens/s | predicted | error |")
    print("|---|---|---|---|---|---|---|---|")
    groups = {}
    refused = []
    for i in chosen:
        r, e = rows[i], exps[i]
        published = float(r["tokens_per_s"])
        if isinstance(predicted[i], str):
            refused.append(f"{e['name']} ({r['table']}): {predicted[i]}")
            print(f"| {e['name']} | {r['table']} | {r['gpus']} | {r['micro_batch']} x {r['grad_accum']} | "
                  f"{e['training']['recompute']} | {int(published):,} | refused | - |")
            continue
        err = 100 * (predicted[i] / published - 1)
        fp8 = r["precision"] == "amp_fp8"
        table = ("H100" if r["gpu"].startswith("h100") else "A100") + (" FP8" if fp8 else "")
        for key in (table, f"{table} {band(int(r['seq_len']))}", "all rows") + (() if fp8 else ("all bf16 rows",)):
            groups.setdefault(key, []).append(err)
        print(f"| {e['name']} | {r['table']} | {r['gpus']} | {r['micro_batch']} x {r['grad_accum']} | "
              f"{e['training']['recompute']} | {int(published):,} | {predicted[i]:,.0f} | {err:+.1f}% |")
    print()
    bands = ["seq <= 1k", "seq 2k-4k", "seq 8k-16k", "seq 32k-64k"]
    keys = [k for t in ("H100", "A100", "H100 FP8") for k in [t] + [f"{t} {b}" for b in bands] if k in groups]
    keys += [k for k in ("all bf16 rows", "all rows") if k in groups]
    for key in keys:
        errs = groups[key]
        mean = sum(abs(x) for x in errs) / len(errs)
        worst = max(errs, key=abs)
        within = sum(1 for x in errs if abs(x) <= 20)
        print(f"{key}: {len(errs)} rows, mean absolute error {mean:.1f}%, worst {worst:+.1f}%, "
              f"{within} within 20%")
    pairs(rows, chosen, predicted)
    if refused:
        print(f"\n{len(refused)} rows refused (counted in no mean above):")
        for line in refused:
            print(f"  {line}")


if __name__ == "__main__":
    main(sys.argv[1:])
