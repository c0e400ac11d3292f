#!/usr/bin/env python3
"""Predicted vs published end-to-end figures for every row of examples/validation/published.json.

Runs `placesim simulate <file> --fidelity analytic` for each row and prints a Markdown table with the signed error of
the prediction (positive: placesim predicts faster than published) and the step time the prediction misses (published
step minus placesim's, in seconds and per micro-batch of a data-parallel rank in ms: a gap of about the same size
across runs that differ only in their kernels is a cost outside the kernels, one that scales with the step is their
speed), then mean absolute and worst error per software stack and over all rows.
A row placesim refuses (memory, say) is printed with the refusal and counted apart. A table whose rows carry "frozen"
(the test table, examples/validation-test) also prints each row's error as it was when the row was collected.
With --residuals FILE it runs the development tables (examples/validation and examples/validation2024; never the
test table) and writes, per stack family and accelerator generation, every row's ln(published step / predicted step):
the data placesim's prediction intervals are computed from (workloads/stack/residuals.json).
Usage: bench/validation_table.py [build/placesim] [--table DIR] [--only SUBSTRING] [--set PATH=VALUE ...]
       bench/validation_table.py [build/placesim] --residuals workloads/stack/residuals.json
(--table: the folder of a published.json and its experiment files, default examples/validation, the 2021-22 Megatron-LM
set; examples/validation2024 holds the 2023-25 stacks; each --set is passed to every simulate, e.g. to try another
accelerator profile file).
"""
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def simulate(placesim, path, sets):
    """placesim's report for one experiment file, or the refusal it printed (a string)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        extra = [arg for s in sets for arg in ("--set", s)]
        # --force: the 530B and 1T rows exceed simulate's default size estimate (they need 7-10 GB, see docs).
        done = subprocess.run([placesim, "simulate", path, "--fidelity", "analytic", "--force", "--report", report.name]
                              + extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        return json.load(open(report.name))


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


def summary(label, errs, refused=0):
    mean = sum(abs(e) for e in errs) / len(errs) if errs else float("nan")
    worst = max(errs, key=abs) if errs else float("nan")
    within = sum(1 for e in errs if abs(e) <= 20)
    refusals = f", {refused} refused" if refused else ""
    return (f"{label}: {len(errs)} rows, mean absolute error {mean:.1f}%, worst {worst:+.1f}%, {within} within 20%"
            f"{refusals}")


DEVELOPMENT_TABLES = ("examples/validation", "examples/validation2024")


def residuals(placesim, out):
    """Every simulated row of the development tables as ln(published step / predicted step), grouped by the stack
    family and the accelerator generation placesim reports for it."""
    groups = {}
    for table_dir in DEVELOPMENT_TABLES:
        folder = os.path.join(ROOT, table_dir)
        for row in json.load(open(os.path.join(folder, "published.json")))["rows"]:
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
    placesim = next((a for a in argv if a.endswith("placesim") and "=" not in a and not a.endswith("validation")),
                    os.path.join(ROOT, "build", "placesim"))
    if "--residuals" in argv:
        residuals(placesim, argv[argv.index("--residuals") + 1])
        return
    only = argv[argv.index("--only") + 1] if "--only" in argv else ""
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set" and i + 1 < len(argv)]
    folder = argv[argv.index("--table") + 1] if "--table" in argv else os.path.join("examples", "validation")
    folder = folder if os.path.isabs(folder) else os.path.join(ROOT, folder)
    table = json.load(open(os.path.join(folder, "published.json")))
    frozen = any("frozen" in row for row in table["rows"])
    print("| experiment file | software stack | metric | published | predicted | error | step missed (s) "
          "| per micro-batch (ms) |" + (" error when collected |" if frozen else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|" if frozen else ""))
    by_stack, refused, by_family, before = {}, {}, {}, []
    covered, inside = 0, 0  # rows with a 90 % interval, and those whose published step falls in it
    for row in table["rows"]:
        if only not in row["file"]:
            continue
        report = simulate(placesim, os.path.join(folder, row["file"]), sets)
        then = row.get("frozen", {})
        then_cell = ""
        if frozen:
            then_cell = (" refused |" if then.get("refused") else f" {then['error_percent']:+.1f}% |"
                         if then.get("error_percent") is not None else " |")
            if then.get("error_percent") is not None:
                before.append(then["error_percent"])
        family = row.get("stack_id", row["stack"]).split(":")[0]
        if isinstance(report, str):
            refused[row["stack"]] = refused.get(row["stack"], 0) + 1
            by_family.setdefault(family, ([], []))[1].append(row["file"])
            print(f"| {row['file']} | {row['stack']} | {row['metric']} | {row['published']} | refused: {report} "
                  f"| | | |{then_cell}")
            continue
        predicted = report["simulation"][row["metric"]]
        err = error_percent(row["metric"], predicted, row["published"])
        by_stack.setdefault(row["stack"], []).append(err)
        by_family.setdefault(family, ([], []))[0].append(err)
        published_s = published_step(row["metric"], report, row["published"])
        interval = report["simulation"].get("interval", {})
        if interval.get("available"):
            covered += 1
            inside += interval["step_time_low_s"] <= published_s <= interval["step_time_high_s"]
        missed = published_s - report["simulation"]["step_time_s"]
        per_microbatch = 1000 * missed / report["strategy"]["microbatches"]
        print(f"| {row['file']} | {row['stack']} | {row['metric']} | {row['published']} | {predicted:.2f} "
              f"| {err:+.1f}% | {missed:+.3f} | {per_microbatch:+.1f} |{then_cell}")
    every = [e for errs in by_stack.values() for e in errs]
    print()
    for stack, errs in by_stack.items():
        print(summary(stack, errs, refused.get(stack, 0)))
    for stack, count in refused.items():
        if stack not in by_stack:
            print(f"{stack}: 0 rows simulated, {count} refused")
    if any("stack_id" in row for row in table["rows"]):
        for family, (errs, files) in sorted(by_family.items()):
            print(summary("family " + family, errs, len(files)))
    print(summary("all rows", every, sum(refused.values())))
    if covered:
        print(f"90 % intervals: {covered} rows have one, {inside} of them ({100 * inside / covered:.0f} %) hold the "
              f"published step")
    if frozen:
        print(summary("all rows when collected (" + table["rows"][0]["frozen"]["commit"] + ")", before,
                      sum(1 for row in table["rows"] if row.get("frozen", {}).get("refused"))))


if __name__ == "__main__":
    main(sys.argv[1:])
