#!/usr/bin/env python3
"""Predicted vs published end-to-end figures for every row of a validation table (examples/validation, the 2021-22
Megatron-LM set; examples/validation2024, the 2023-25 stacks; examples/validation-test, the held-out test table).

Runs `placesim simulate <file> --fidelity analytic --force` for each row of the table's published.json and reports the
signed error of the prediction (positive: placesim predicts faster than published) and the step time the prediction
misses (published step minus placesim's, in seconds and per micro-batch of a data-parallel rank in ms: a gap of about
the same size across runs that differ only in their kernels is a cost outside the kernels, one that scales with the
step is their speed). A row placesim refuses (memory, say) is shown with the refusal and counted apart. A table whose
rows carry "frozen" (the test table) also shows each row's error as it was when the row was collected.

Modes:
  (default)               one table as text: every row, then mean absolute and worst error per stack and overall.
  --markdown NAME         one of docs/validation.md's tables as Markdown (NAME from BLOCKS below, or 'list'): a
                          table's rows or its groups' statistics, the summary, the layer cases, or a what-if (WHATIFS:
                          rows re-run with --set changes beside their errors as published).
  --check-doc FILE        regenerate every table between `<!-- table: NAME -->` and `<!-- /table -->` in FILE; exit 1
                          and print a diff when one drifted. --write-doc FILE rewrites them instead.
  --residuals FILE        run the development tables (never the test table) and write, per stack family and
                          accelerator generation, every row's ln(published step / predicted step): the data placesim's
                          prediction intervals are computed from (workloads/stack/residuals.json).
Usage: bench/validation_table.py [build/placesim] [--table DIR] [--only SUBSTRING] [--set PATH=VALUE ...]
       bench/validation_table.py [build/placesim] --markdown NAME | --check-doc FILE | --write-doc FILE
       bench/validation_table.py [build/placesim] --residuals workloads/stack/residuals.json
(--table: the folder of a published.json and its experiment files, default examples/validation; each --set is passed
to every simulate, e.g. to try another accelerator profile file). A full --check-doc runs about 260 simulations (the
three tables, the layer cases, the what-ifs): 4-7 minutes on 2 cores, at most about 3 GB of memory per simulation.
"""
import argparse
import difflib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVELOPMENT_TABLES = ("examples/validation", "examples/validation2024")
TEST_TABLE = "examples/validation-test"
TABLES = DEVELOPMENT_TABLES + (TEST_TABLE,)


# Running the rows.

def load_json(path):
    with open(path) as f:
        return json.load(f)


def simulate(placesim, path, sets):
    """placesim's report for one experiment file, or the refusal it printed (a string)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        extra = [arg for s in sets for arg in ("--set", s)]
        # --force: a row larger than simulate's default size estimate is still run (the largest took 3.2 GB here).
        done = subprocess.run([placesim, "simulate", path, "--fidelity", "analytic", "--force", "--report", report.name]
                              + extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        return load_json(report.name)


def error_percent(metric, predicted, published):
    # A throughput that is too high and a step time that is too low are both optimistic: positive.
    if metric == "step_time_s":
        return 100 * (published / predicted - 1)
    return 100 * (predicted / published - 1)


def published_step(metric, report, published):
    """The published run's step time: given, or placesim's step scaled by the throughput ratio (a throughput metric
    is inversely proportional to the step at the same work per step)."""
    sim = report["simulation"]
    if metric == "step_time_s":
        return published
    return sim["step_time_s"] * sim[metric] / published


def mesh_text(strategy):
    """The parallel mesh of a report's strategy: 'tp 8, pp 8 (3 chunks), dp 1', with cp and ep where above 1."""
    pp = f"pp {strategy['pp']}"
    if strategy.get("chunks", 1) > 1:
        pp += f" ({strategy['chunks']} chunks)"
    elif strategy["pp"] > 1 and strategy.get("schedule") not in ("1f1b", "interleaved"):
        pp += f" ({strategy['schedule']})"
    parts = [f"tp {strategy['tp']}", pp, f"dp {strategy['dp']}"]
    parts += [f"{axis} {strategy[axis]}" for axis in ("cp", "ep") if strategy.get(axis, 1) > 1]
    return ", ".join(parts)


def accelerator_text(accelerator):
    """The accelerator's profile name, with its power limit where one below the rated power is set."""
    limit = accelerator.get("power_limit_w")
    below = limit and limit < accelerator.get("tdp_w", limit + 1)
    return accelerator["name"] + (f" at {limit:.0f} W" if below else "")


def row_result(row, report):
    """One row of published.json and placesim's report for it (or its refusal) as the tables show it."""
    result = {"file": row["file"], "stack": row["stack"], "family": row.get("stack_id", "").split(":")[0],
              "metric": row["metric"], "published": row["published"], "gpus": row.get("gpus")}
    if "frozen" in row:
        result["frozen"] = row["frozen"]
    if isinstance(report, str):
        result["refused"] = report
        return result
    sim, strategy = report["simulation"], report["strategy"]
    published_s = published_step(row["metric"], report, row["published"])
    missed = published_s - sim["step_time_s"]
    interval = sim.get("interval", {})
    inside = None
    if interval.get("available"):
        inside = interval["step_time_low_s"] <= published_s <= interval["step_time_high_s"]
    predicted = sim[row["metric"]]
    result.update(predicted=predicted, error=error_percent(row["metric"], predicted, row["published"]),
                  missed_s=missed, missed_per_microbatch_ms=1000 * missed / strategy["microbatches"],
                  gpus=strategy["devices"], accelerator=accelerator_text(report["cluster"]["accelerator"]),
                  mesh=mesh_text(strategy), in_interval=inside)
    return result


def run_table(placesim, table_dir, sets=(), only="", select=""):
    """Every row of table_dir/published.json whose file name contains `only` and matches the regular expression
    `select`, simulated with the `sets`."""
    folder = table_dir if os.path.isabs(table_dir) else os.path.join(ROOT, table_dir)
    rows = load_json(os.path.join(folder, "published.json"))["rows"]
    return [row_result(row, simulate(placesim, os.path.join(folder, row["file"]), sets))
            for row in rows if only in row["file"] and re.search(select, row["file"])]


# One transformer layer: the five cases of Korthikanti et al. Table 4 (tests/data/reference/korthikanti-table4.json,
# in its order) simulated as korthikanti-22b-layer.json with the case's recompute and sequence parallelism.
LAYER = "layer"
LAYER_EXPERIMENT = "examples/validation/korthikanti-22b-layer.json"
LAYER_REFERENCE = "tests/data/reference/korthikanti-table4.json"
LAYER_CASES = (("none", False), ("none", True), ("full", False), ("selective", False), ("selective", True))


def layer_results(placesim):
    """Per case: the published forward and backward ms and the report's simulation.layer_times (or the refusal)."""
    results = []
    for row, (recompute, sp) in zip(load_json(os.path.join(ROOT, LAYER_REFERENCE))["rows"], LAYER_CASES):
        sets = [f"training.recompute={recompute}", f"strategy.sp={'true' if sp else 'false'}"]
        report = simulate(placesim, os.path.join(ROOT, LAYER_EXPERIMENT), sets)
        if isinstance(report, str):
            raise RuntimeError(f"{LAYER_EXPERIMENT} with {' '.join(sets)} was refused: {report}")
        layer = report["simulation"]["layer_times"][0]
        results.append({"case": row["case"], "settings": f"{recompute}, {'SP' if sp else 'no SP'}",
                        "published_forward_ms": row["forward_ms"], "published_backward_ms": row["backward_ms"],
                        "forward_ms": 1000 * layer["forward_s"], "backward_ms": 1000 * layer["backward_s"]})
    return results


def layer_markdown(results):
    """Published and simulated forward and backward ms of each case, and simulated / published - 1."""
    rows = [[r["case"], r["settings"], r["published_forward_ms"], f"{r['forward_ms']:.2f}",
             percent(100 * (r["forward_ms"] / r["published_forward_ms"] - 1)), r["published_backward_ms"],
             f"{r['backward_ms']:.2f}", percent(100 * (r["backward_ms"] / r["published_backward_ms"] - 1))]
            for r in results]
    return markdown_table(["case", "recompute, SP", "published forward ms", "simulated forward ms", "difference",
                           "published backward ms", "simulated backward ms", "difference"], rows)


# Published figures outside the tables' statistics (configuration partly assumed): rows in published.json's form.
EXTRA = "extra"
EXTRA_ROWS = [
    {"file": "korthikanti-gpt-530b.json", "stack": "Megatron-LM 2022", "metric": "mfu", "published": 0.542},
]


def extra_results(placesim):
    folder = os.path.join(ROOT, "examples", "validation")
    return [row_result(row, simulate(placesim, os.path.join(folder, row["file"]), [])) for row in EXTRA_ROWS]


# Statistics.

def stats(results):
    """Rows simulated and refused, mean absolute and worst error, rows within 20 %, rows placesim predicts faster than
    published (optimistic), and the 90 % intervals: how many rows have one and how many of those hold the published
    step."""
    errs = [r["error"] for r in results if "error" in r]
    intervals = [r["in_interval"] for r in results if r.get("in_interval") is not None]
    return {"rows": len(errs), "refused": len(results) - len(errs), "optimistic": sum(1 for e in errs if e > 0),
            "mean": sum(abs(e) for e in errs) / len(errs) if errs else float("nan"),
            "worst": max(errs, key=abs) if errs else float("nan"),
            "within": sum(1 for e in errs if abs(e) <= 20),
            "covered": len(intervals), "inside": sum(intervals)}


def frozen_stats(results):
    """The same statistics of the errors the rows had when they were collected (their 'frozen' field)."""
    then = [{"error": r["frozen"]["error_percent"]} if r["frozen"].get("error_percent") is not None else {}
            for r in results if "frozen" in r and r["frozen"].get("commit")]
    return stats(then)


def summary(label, errs, refused=0):
    """One line of the text mode's per-stack summary."""
    s = stats([{"error": e} for e in errs] + [{}] * refused)
    refusals = f", {refused} refused" if refused else ""
    return (f"{label}: {s['rows']} rows, mean absolute error {s['mean']:.1f}%, worst {s['worst']:+.1f}%, "
            f"{s['within']} within 20%{refusals}")


# The groups of each table's rows in docs/validation.md: (label, test on a row of published.json). Every row must fall
# in exactly one group of its table; AGGREGATES are unions of groups.

def _stack(*words, without=(), file=""):
    return lambda row: (all(w in row["stack"] for w in words) and not any(w in row["stack"] for w in without)
                        and file in row["file"])


GROUPS = {
    "examples/validation": [
        ("korthikanti", "Korthikanti et al. 2022, Table 5 (Megatron-LM 2022, the code of the layer calibration)",
         _stack("Megatron-LM 2022")),
        ("narayanan", "Narayanan et al. 2021, Table 1 (Megatron-LM 2021-04)", _stack("Megatron-LM 2021")),
    ],
    "examples/validation2024": [
        ("nemo", "NeMo / Megatron-Core recipes (dgxc-benchmarking v24.11), bf16", _stack("NeMo 24", without=("FP8",))),
        ("nemo-fp8", "the same NeMo recipes in FP8 (Transformer Engine)", _stack("NeMo 24", "FP8")),
        ("mcore", "Megatron-Core README r0.8.0 (values read from an image; micro-batch, chunks, recompute assumed)",
         _stack("Megatron-Core r0.8.0")),
        ("nemotron", "Nemotron-4 pre-training (micro-batch, chunks, recompute assumed)", _stack("Nemotron-4")),
        ("megascale", "Megatron-LM 2023, MegaScale's baseline (A100, RoCE; micro-batch, memory assumed)",
         _stack("MegaScale")),
        ("llama3", "the Llama 3 paper's 405B pre-training (gradients sharded; micro-batch assumed)",
         _stack("Llama 3 405B")),
        ("tt", "torchtitan bf16: FSDP2, FSDP2 + TP", _stack("torchtitan", without=("Float8", "CP"))),
        ("tt-fp8", "torchtitan Float8: FSDP2, FSDP2 + TP", _stack("torchtitan", "Float8", without=("PP", "CP"))),
        ("tt-3d", "torchtitan Float8: FSDP2 + TP + PP (405B, 512 H100)", _stack("torchtitan", "PP", without=("CP",))),
        ("tt-cp", "torchtitan context parallel: FSDP2 + CP (8B, 8 H100)", _stack("torchtitan", "FSDP2 + CP")),
        ("tt-4d", "torchtitan context parallel: FSDP2 + TP + PP + CP (405B, 512 H100)",
         _stack("torchtitan", "PP + CP")),
        ("foundry", "MosaicML llm-foundry (FSDP1)", _stack("llm-foundry")),
        ("fms-a100", "IBM fms-fsdp on A100 (FSDP1 / HSDP)", _stack("fms-fsdp", file="a100")),
        ("fms-h100", "IBM fms-fsdp on H100 (interconnect and GPU variant assumed)", _stack("fms-fsdp", file="h100")),
        ("olmo", "OLMo-core bf16 (FSDP2, one node)", _stack("OLMo-core", without=("Float8",))),
        ("olmo-fp8", "OLMo-core Float8", _stack("OLMo-core", "Float8")),
    ],
}
AGGREGATES = {
    "examples/validation2024": [
        ("Megatron stacks (NeMo, Megatron-Core, Nemotron-4, MegaScale, Llama 3 paper)",
         ("nemo", "nemo-fp8", "mcore", "nemotron", "megascale", "llama3")),
        ("every setting from the source (NeMo recipes, torchtitan without CP, llm-foundry)",
         ("nemo", "nemo-fp8", "tt", "tt-fp8", "tt-3d", "foundry")),
        ("PyTorch FSDP without context parallelism (torchtitan, llm-foundry, fms-fsdp, OLMo-core)",
         ("tt", "tt-fp8", "tt-3d", "foundry", "fms-a100", "fms-h100", "olmo", "olmo-fp8")),
        ("PyTorch FSDP2 without context parallelism (torchtitan, OLMo-core)",
         ("tt", "tt-fp8", "tt-3d", "olmo", "olmo-fp8")),
        ("context parallel (torchtitan)", ("tt-cp", "tt-4d")),
    ],
}
FAMILY_LABELS = {
    "nemo": "NeMo 25.02-26.06, Megatron-Bridge (`nemo`)",
    "megatron-deepspeed": "Megatron-DeepSpeed: BLOOM and its benchmarks, MT-NLG (`megatron-deepspeed`)",
    "deepspeed-zero": "DeepSpeed ZeRO-3 on Azure (`deepspeed-zero`)",
    "nanotron": "nanotron, Ultra-Scale Playbook benchmarks (`nanotron`)",
    "other": "others: OPT, LLaMA, BloombergGPT, GLM-130B, FlashAttention, InternLM, SageMaker (`other:`)",
}


def grouped(table_dir, results, rows):
    """[(key, label, results)] of a table: its GROUPS, or the test table's stack families. `rows` are published.json's
    rows (a result is matched to its row by file name)."""
    if table_dir not in GROUPS:
        families = list(dict.fromkeys(r["family"] for r in results))
        return [(f, FAMILY_LABELS.get(f, f), [r for r in results if r["family"] == f]) for f in families]
    groups = [(key, label, []) for key, label, _ in GROUPS[table_dir]]
    by_file = {row["file"]: row for row in rows}
    for result in results:
        row = by_file[result["file"]]
        hits = [i for i, (_, _, test) in enumerate(GROUPS[table_dir]) if test(row)]
        if len(hits) != 1:
            raise ValueError(f"{table_dir}/published.json row '{row['file']}' (stack '{row['stack']}') falls in "
                             f"{len(hits)} groups of GROUPS['{table_dir}'] in bench/validation_table.py, not one: "
                             "add or narrow a group's test so that it falls in exactly one")
        groups[hits[0]][2].append(result)
    return groups


# Markdown.

METRIC_LABELS = {"step_time_s": "step s", "tokens_per_s": "tokens/s", "hardware_tflops_per_gpu": "TFLOP/s/GPU",
                 "model_tflops_per_gpu": "model TFLOP/s/GPU", "mfu": "MFU"}


def format_published(metric, value):
    """A published figure as given (tokens/s, often a per-GPU figure times the GPUs, to the token)."""
    return f"{value:,.0f}" if metric == "tokens_per_s" else f"{value:,}"


def format_value(metric, value):
    """A predicted figure at the precision the tables print it."""
    if metric == "tokens_per_s":
        return f"{value:,.0f}"
    if metric == "mfu":
        return f"{value:.3f}"
    if metric == "step_time_s":
        return f"{value:.2f}" if value >= 1 else f"{value:.3f}"
    return f"{value:.1f}"


def percent(value):
    return "" if value is None or math.isnan(value) else f"{value:+.1f} %"


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]) + "\n"


def short_refusal(text):
    """The refusal's first clause: 'memory: the model does not fit: the simulated peak of a device is 209 GB'."""
    return re.split(r" \(|;", text, maxsplit=1)[0]


def row_cells(r, frozen):
    """A row of a row table; the predicted figure and the error come last (tests/test_validation.cpp reads them)."""
    name = r["file"][:-5] if r["file"].endswith(".json") else r["file"]
    then = []
    if frozen:
        f = r.get("frozen", {})
        then = ["added later" if not f.get("commit") else "refused" if f.get("refused")
                else percent(f.get("error_percent"))]
    if "refused" in r:
        return ([name, r["gpus"] or "", "", METRIC_LABELS[r["metric"]], format_published(r["metric"], r["published"]),
                 "", ""] + then
                + ["refused: " + short_refusal(r["refused"]), ""])
    return ([name, f"{r['gpus']:,} {r['accelerator']}", r["mesh"], METRIC_LABELS[r["metric"]],
             format_published(r["metric"], r["published"]), f"{r['missed_s']:+.3f}",
             f"{r['missed_per_microbatch_ms']:+.0f}"] + then
            + [format_value(r["metric"], r["predicted"]), percent(r["error"])])


def rows_markdown(groups, frozen_commit=None):
    """Every row, in the order of the groups (the groups table names them)."""
    header = ["experiment file", "GPUs", "mesh", "metric", "published", "missed per step (s)",
              "per micro-batch (ms)"] + ([f"error at {frozen_commit}"] if frozen_commit else []) + ["predicted",
                                                                                                    "error"]
    rows = [row_cells(r, frozen_commit is not None) for _, _, results in groups for r in results]
    return markdown_table(header, rows)


def mean_cell(s):
    return f"{s['mean']:.1f} %" if s["rows"] else ""


def stats_cells(results):
    s = stats(results)
    rows = f"{s['rows']}" + (f" + {s['refused']} refused" if s["refused"] else "")
    return [rows, mean_cell(s), percent(s["worst"]), s["within"], s["optimistic"]]


def groups_markdown(groups, aggregates=(), frozen_commit=None):
    """Per group: rows, mean absolute error, worst, within 20 % (and the same when collected, for the test table);
    then the aggregates (unions of groups, by key) and all rows."""
    header = ["rows of", "rows", "mean absolute error", "worst", "within 20 %", "optimistic"]
    if frozen_commit:
        header += [f"mean absolute error at {frozen_commit}", f"within 20 % at {frozen_commit}"]
    everything = [r for _, _, results in groups for r in results]
    by_key = {key: results for key, _, results in groups}
    lines = [(label, results) for _, label, results in groups if results]
    lines += [(label, [r for key in members for r in by_key[key]]) for label, members in aggregates
              if any(by_key[key] for key in members)]
    lines.append(("**all**", everything))
    rows = []
    for label, results in lines:
        cells = [label] + stats_cells(results)
        if frozen_commit:
            then = frozen_stats(results)
            cells += [mean_cell(then) + (f" ({then['refused']} refused)" if then["refused"] else ""),
                      then["within"]]
        rows.append(cells)
    return markdown_table(header, rows)


TABLE_ROLES = {"examples/validation": "development", "examples/validation2024": "development",
               TEST_TABLE: "test (held out)"}


def summary_markdown(results_by_table):
    """One line per table: its role, rows, mean absolute and worst error, rows within 20 % and optimistic, and how
    many of the rows with a 90 % interval hold the published step."""
    rows = []
    for table_dir, results in results_by_table.items():
        s = stats(results)
        inside = f"{s['inside']} of {s['covered']}" if s["covered"] else "none has one"
        rows.append([f"`{table_dir}`", TABLE_ROLES.get(table_dir, "")] + stats_cells(results) + [inside])
    return markdown_table(["table", "role", "rows", "mean absolute error", "worst", "within 20 %", "optimistic",
                           "published step inside the 90 % interval"], rows)


# The Markdown blocks of docs/validation.md, by name: (tables they need, builder of the text from their results).

def _frozen_commit(results):
    return next((r["frozen"]["commit"] for r in results if "frozen" in r and r["frozen"].get("commit")), None)


def _rows_block(table_dir):
    return ([table_dir], lambda res: rows_markdown(grouped(table_dir, res[table_dir], published_rows(table_dir)),
                                                   _frozen_commit(res[table_dir])))


def _groups_block(table_dir):
    return ([table_dir], lambda res: groups_markdown(grouped(table_dir, res[table_dir], published_rows(table_dir)),
                                                     AGGREGATES.get(table_dir, ()), _frozen_commit(res[table_dir])))


def _accelerator_block(table_dir):
    def build(res):
        accelerator = {row["file"]: row.get("accelerator", "") for row in published_rows(table_dir)}
        names = list(dict.fromkeys(accelerator[r["file"]] for r in res[table_dir]))
        groups = [(n, f"`{n}`", [r for r in res[table_dir] if accelerator[r["file"]] == n]) for n in names]
        return groups_markdown(groups, (), _frozen_commit(res[table_dir]))
    return [table_dir], build


BLOCKS = {
    "layer": ([LAYER], lambda res: layer_markdown(res[LAYER])),
    "extra-rows": ([EXTRA], lambda res: rows_markdown([("extra", "Korthikanti et al. 2022, abstract", res[EXTRA])])),
    "summary": (TABLES, lambda res: summary_markdown({t: res[t] for t in TABLES})),
    "validation-groups": _groups_block("examples/validation"),
    "validation-rows": _rows_block("examples/validation"),
    "validation2024-groups": _groups_block("examples/validation2024"),
    "validation2024-rows": _rows_block("examples/validation2024"),
    "validation-test-groups": _groups_block(TEST_TABLE),
    "validation-test-accelerators": _accelerator_block(TEST_TABLE),
    "validation-test-rows": _rows_block(TEST_TABLE),
}


# What-ifs: rows of a table (file names matching a regular expression) simulated with --set changes, each error beside
# the row's error as published; by group (the table's GROUPS) where by_group is true.
WHATIFS = {
    "whatif-megascale": ("examples/validation2024", r"^megascale-", False, [
        ("A800 NVLink", ("cluster.preset=hgx-a800",)),
        ("InfiniBand between nodes", ("cluster.comm.inter_node=ib-hdr",)),
        ("1F1B", ("strategy.schedule=1f1b", "strategy.chunks=1"))]),
    "whatif-fms-fsdp-network": ("examples/validation2024", r"^fms-fsdp-.*xh100", False, [
        ("half the assumed NIC bandwidth", ("cluster.nic_bw=100Gb/s",))]),
    "whatif-cp": ("examples/validation2024", r"^torchtitan-llama31-.*-cp\d", False, [
        ("Megatron-Core's CP costs", ("strategy.cp_impl=te",))]),
    "whatif-cudnn-attention": ("examples/validation2024", r"^(nemo-|megatron-core-|nemotron4-)", True, [
        ("cuDNN's attention", ("training.attention_kernel=cudnn",))]),
    "whatif-param-gather-overlap": ("examples/validation2024", r"^nemo-", True, [
        ("the parameter gather in the next forward", ("strategy.param_gather_overlap=true",))]),
}


def variant_header(label, sets):
    return f"with {label} (`" + " ".join("--set " + s for s in sets) + "`)"


def whatif_rows_markdown(base, variants):
    """Each row's error as published and with each variant ([(label, sets, results)], rows in base's order), then the
    mean absolute errors."""
    header = ["experiment file", "error"] + [variant_header(label, sets) for label, sets, _ in variants]
    rows = [[r["file"][:-5], percent(r.get("error"))] + [percent(v[i].get("error")) for _, _, v in variants]
            for i, r in enumerate(base)]
    rows.append(["mean absolute error"] + [mean_cell(stats(results))
                                           for results in [base] + [v for _, _, v in variants]])
    return markdown_table(header, rows)


def whatif_groups_markdown(table_dir, base, variants):
    """The mean absolute error of each group of `table_dir` that holds rows of `base`, as published and with each
    variant."""
    rows = published_rows(table_dir)
    header = ["rows of", "rows", "mean absolute error"] + [variant_header(label, sets) for label, sets, _ in variants]
    lines = []
    for results in [base] + [v for _, _, v in variants]:
        groups = [(label, members) for _, label, members in grouped(table_dir, results, rows) if members]
        lines.append(groups + [("**all**", results)])
    table = [[label, len(members), mean_cell(stats(members))] + [mean_cell(stats(line[i][1])) for line in lines[1:]]
             for i, (label, members) in enumerate(lines[0])]
    return markdown_table(header, table)


def _whatif_block(name):
    table_dir, select, by_group, variants = WHATIFS[name]
    keys = [(table_dir, sets, select) for _, sets in variants]

    def build(res):
        base = [r for r in res[table_dir] if re.search(select, r["file"])]
        done = [(label, sets, res[key]) for (label, sets), key in zip(variants, keys)]
        return whatif_groups_markdown(table_dir, base, done) if by_group else whatif_rows_markdown(base, done)
    return [table_dir] + keys, build


BLOCKS.update({name: _whatif_block(name) for name in WHATIFS})


def published_rows(table_dir):
    return load_json(os.path.join(ROOT, table_dir, "published.json"))["rows"]


def build_blocks(names, run):
    """The Markdown of each named block. run(table_dir) gives a table's results, run(table_dir, sets, select) those of
    the rows a what-if selects with its --set changes; each is called once."""
    unknown = [n for n in names if n not in BLOCKS]
    if unknown:
        raise ValueError(f"unknown table name(s) {', '.join(unknown)}: use one of {', '.join(BLOCKS)}")
    results = {}
    for name in names:
        for key in BLOCKS[name][0]:
            if key not in results:
                results[key] = run(key) if isinstance(key, str) else run(*key)
    return {name: BLOCKS[name][1](results) for name in names}


MARKER = re.compile(r"(<!-- table: ([\w-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def regenerate_doc(text, run):
    """The document with every marked table regenerated, and the names of the tables whose text changed."""
    names = list(dict.fromkeys(m.group(2) for m in MARKER.finditer(text)))
    blocks = build_blocks(names, run)
    changed = sorted({m.group(2) for m in MARKER.finditer(text) if m.group(3) != blocks[m.group(2)]})
    return MARKER.sub(lambda m: m.group(1) + blocks[m.group(2)] + m.group(4), text), changed


def check_doc(path, run, write):
    """0 when every marked table of `path` is what run() gives (or, with write, after rewriting them), 1 otherwise."""
    with open(path) as f:
        text = f.read()
    started = time.time()
    new, changed = regenerate_doc(text, run)
    print(f"{path}: {len(MARKER.findall(text))} tables regenerated in {time.time() - started:.0f} s", file=sys.stderr)
    if write:
        if new != text:
            with open(path, "w") as f:
                f.write(new)
        print(f"{path}: rewrote {', '.join(changed) or 'nothing'}", file=sys.stderr)
        return 0
    if not changed:
        return 0
    sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), path, "regenerated"))
    print(f"{path}: tables {', '.join(changed)} drifted; run bench/validation_table.py PLACESIM --write-doc {path}",
          file=sys.stderr)
    return 1


# Text mode and residuals.

def print_text(results, frozen):
    """Every row (with the error when collected, for the test table), then the per-stack, per-family and overall
    summaries."""
    print("| experiment file | software stack | metric | published | predicted | error | step missed (s) "
          "| per micro-batch (ms) |" + (" error when collected |" if frozen else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|" if frozen else ""))
    for r in results:
        then = ""
        if frozen:
            f = r.get("frozen", {})
            then = " refused |" if f.get("refused") else (f" {f['error_percent']:+.1f}% |"
                                                           if f.get("error_percent") is not None else " |")
        if "refused" in r:
            print(f"| {r['file']} | {r['stack']} | {r['metric']} | {r['published']} | refused: {r['refused']} "
                  f"| | | |{then}")
            continue
        print(f"| {r['file']} | {r['stack']} | {r['metric']} | {r['published']} | {r['predicted']:.2f} "
              f"| {r['error']:+.1f}% | {r['missed_s']:+.3f} | {r['missed_per_microbatch_ms']:+.1f} |{then}")
    print()
    for key, prefix in (("stack", ""), ("family", "family ")):
        for value in dict.fromkeys(r[key] for r in results if r[key]):
            members = [r for r in results if r[key] == value]
            errs = [r["error"] for r in members if "error" in r]
            refused = len(members) - len(errs)
            print(summary(prefix + value, errs, refused) if errs else f"{prefix}{value}: 0 rows simulated, "
                  f"{refused} refused")
    print(summary("all rows", [r["error"] for r in results if "error" in r], sum(1 for r in results if "refused" in r)))
    s = stats(results)
    if s["covered"]:
        print(f"90 % intervals: {s['covered']} rows have one, {s['inside']} of them "
              f"({100 * s['inside'] / s['covered']:.0f} %) hold the published step")
    if frozen:
        then = frozen_stats(results)
        print(summary(f"all rows when collected ({_frozen_commit(results)})",
                      [r["frozen"]["error_percent"] for r in results if r["frozen"].get("error_percent") is not None],
                      then["refused"]))


def residuals(placesim, out):
    """Every simulated row of the development tables as ln(published step / predicted step), grouped by the stack
    family and the accelerator generation placesim reports for it."""
    groups = {}
    for table_dir in DEVELOPMENT_TABLES:
        folder = os.path.join(ROOT, table_dir)
        for row in load_json(os.path.join(folder, "published.json"))["rows"]:
            report = simulate(placesim, os.path.join(folder, row["file"]), [])
            if isinstance(report, str):
                continue
            interval = report["simulation"]["interval"]
            if not interval["family"] or not interval["generation"]:
                continue
            err = error_percent(row["metric"], report["simulation"][row["metric"]], row["published"])
            key = (interval["family"], interval["generation"])
            groups.setdefault(key, []).append((table_dir + "/" + row["file"], math.log(1 + err / 100)))
    doc = {"description": "ln(published step / predicted step) of every simulated row of the development tables "
                          "(" + ", ".join(DEVELOPMENT_TABLES) + "), per stack family and accelerator generation: "
                          "the residuals placesim's 90 % prediction intervals come from (traces/report/Interval.hpp). "
                          "Written by bench/validation_table.py --residuals; the test table is never used.",
           "groups": [{"family": f, "generation": g, "rows": [r for r, _ in rows],
                       "log_ratios": [round(v, 6) for _, v in rows]}
                      for (f, g), rows in sorted(groups.items())]}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for (f, g), rows in sorted(groups.items()):
        print(f"{f} on {g}: {len(rows)} rows")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("placesim", nargs="?", default=os.path.join(ROOT, "build", "placesim"))
    parser.add_argument("--table", default="examples/validation")
    parser.add_argument("--only", default="")
    parser.add_argument("--set", action="append", default=[], dest="sets", metavar="PATH=VALUE")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--markdown", metavar="NAME")
    mode.add_argument("--check-doc", metavar="FILE")
    mode.add_argument("--write-doc", metavar="FILE")
    mode.add_argument("--residuals", metavar="FILE")
    args = parser.parse_args(argv)
    def run(table_dir, sets=(), select=""):
        if table_dir in (LAYER, EXTRA):
            return (layer_results if table_dir == LAYER else extra_results)(args.placesim)
        return run_table(args.placesim, table_dir, list(args.sets) + list(sets), args.only, select)
    if args.residuals:
        residuals(args.placesim, args.residuals)
    elif args.markdown == "list":
        print("\n".join(BLOCKS))
    elif args.markdown:
        sys.stdout.write(build_blocks([args.markdown], run)[args.markdown])
    elif args.check_doc or args.write_doc:
        return check_doc(args.check_doc or args.write_doc, run, bool(args.write_doc))
    else:
        results = run(args.table)
        print_text(results, any("frozen" in r for r in results))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ValueError as error:  # an unknown table name, or a published row in no group: the message says the fix
        sys.exit(f"bench/validation_table.py: {error}")
