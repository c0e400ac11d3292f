#!/usr/bin/python3
"""PipeDream against LocalSGD at equal simulated time, with confidence intervals over seeds.

Reads the --jsonl output of one or more `placesim converge-sweep` runs (each a labelled experiment), takes every
(objective, S, schedule) cell at its tuned step size (the row marked "chosen"), and prints a Markdown table of the
final objective minus f* per seed: mean +- the 95 % confidence half-width (Student t over the seeds), for PipeDream and
LocalSGD, and the paired difference PipeDream - LocalSGD (same seed = same objective instance and batches) with its
interval; the winner is named only when that interval excludes 0. With --figure it draws the means with their
intervals against S, one panel per experiment (needs Debian's python3-matplotlib: run with /usr/bin/python3).

    scripts/convergence_ci.py LABEL=FILE.jsonl [LABEL=FILE.jsonl ...] [--figure OUT.svg]

The step size is tuned on the same seeds that are reported (as converge-sweep does), which biases every mean
slightly low; the paired interval compares the two schedules on identical instances.
"""
import json
import math
import sys

# Two-sided 95 % Student t quantiles by degrees of freedom (n - 1).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 19: 2.093, 24: 2.064, 29: 2.045}


def t95(df):
    if df in T95:
        return T95[df]
    return T95[max(k for k in T95 if k <= df)] if df < 30 else 1.96


def interval(values):
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, t95(n - 1) * sd / math.sqrt(n)


def chosen_cells(path):
    cells = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if not row["chosen"]:
                continue
            gaps = [loss - ref for loss, ref in zip(row["final_loss_per_seed"], row["reference_minimum_per_seed"])]
            cells[(row["stages"], row["schedule"])] = {"gaps": gaps, "log2_step": row["log2_step"],
                                                       "objective": row["objective"]}
    return cells


def fmt(mean, half):
    return f"{mean:.4g} ± {half:.2g}"


def table(label, cells):
    stages = sorted({s for s, _ in cells})
    out = [f"**{label}** — final f − f*, mean ± 95 % CI over {len(next(iter(cells.values()))['gaps'])} seeds "
           "(tuned γ); paired difference PipeDream − LocalSGD", "",
           "| S | PipeDream | LocalSGD | PipeDream − LocalSGD | better |", "|---|---|---|---|---|"]
    for s in stages:
        pd, ls = cells.get((s, "pipedream")), cells.get((s, "localsgd"))
        if not pd or not ls:
            continue
        m1, h1 = interval(pd["gaps"])
        m2, h2 = interval(ls["gaps"])
        md, hd = interval([a - b for a, b in zip(pd["gaps"], ls["gaps"])])
        better = "PipeDream" if md + hd < 0 else "LocalSGD" if md - hd > 0 else "neither (CI spans 0)"
        out.append(f"| {s} | {fmt(m1, h1)} (2^{pd['log2_step']}) | {fmt(m2, h2)} (2^{ls['log2_step']}) | "
                   f"{fmt(md, hd)} | {better} |")
    return "\n".join(out)


def figure(experiments, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(experiments), figsize=(4.2 * len(experiments), 3.4), squeeze=False)
    for ax, (label, cells) in zip(axes[0], experiments):
        for schedule, colour in (("pipedream", "#1f77b4"), ("localsgd", "#d62728")):
            stages = sorted(s for s, sc in cells if sc == schedule)
            means, halves = zip(*(interval(cells[(s, schedule)]["gaps"]) for s in stages))
            ax.errorbar(stages, means, yerr=halves, marker="o", capsize=3, color=colour, label=schedule)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("stages S")
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("final f − f* (mean, 95 % CI)")
    axes[0][0].legend(fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


def main(argv):
    experiments, out = [], None
    args = iter(argv)
    for a in args:
        if a == "--figure":
            out = next(args)
        else:
            label, path = a.rsplit("=", 1)
            experiments.append((label, chosen_cells(path)))
    if not experiments:
        print(__doc__)
        return 2
    for label, cells in experiments:
        print(table(label, cells))
        print()
    if out:
        figure(experiments, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
