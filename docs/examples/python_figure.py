#!/usr/bin/python3
"""A paper figure from a Python sweep: what ZeRO's stages cost Llama 3 8B per GPU as data parallelism grows.

    /usr/bin/python3 docs/examples/python_figure.py [OUT.png|OUT.pdf ...]   (default: docs/examples/python_figure.png)

Sweeps the strategy presets dp, zero1, zero2, zero3 x data-parallel degree 1..256 analytically (one `placesim sweep`,
a fraction of a second), then with pandas: (a) memory per GPU against the 80 GB of an H100, (b) bytes each GPU
sends per step relative to plain data parallelism at the same degree. The global batch stays 256 sequences, so
fewer GPUs means more micro-batches of gradient accumulation per step, and ZeRO-2/3 partition the gradients: they
reduce-scatter them after every micro-batch instead of once per step.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

import matplotlib  # noqa: E402
import matplotlib.ticker  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import placesim  # noqa: E402

GPU_MEMORY = 80e9  # H100 SXM
PRESETS = {"dp": "data parallel", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3"}
STYLE = {"dp": ("#000000", "o"), "zero1": ("#0072B2", "s"), "zero2": ("#009E73", "^"), "zero3": ("#D55E00", "D")}

base = {"model": "llama3-8b",
        "training": {"global_batch": 256, "micro_batch": 1, "recompute": "selective"},
        "strategy": {"preset": "dp"}}
rows = placesim.sweep(base, {"strategy.preset": list(PRESETS), "strategy.dp": {"from": 1, "to": 256, "times": 2}},
                      figures=["memory.total_bytes", "communication.bytes_per_step"],
                      device_memory="80GB")
rows = rows.rename(columns={"strategy.preset": "preset", "strategy.dp": "dp", "memory.total_bytes": "memory",
                            "communication.bytes_per_step": "sent"})

# Bytes sent relative to plain data parallelism at the same dp (dp = 1 sends nothing).
plain = rows[rows["preset"] == "dp"].set_index("dp")["sent"]
rows["relative"] = rows["sent"] / rows["dp"].map(plain)

plt.rcParams.update({"font.size": 8, "axes.labelsize": 8, "legend.fontsize": 7, "xtick.labelsize": 7,
                     "ytick.labelsize": 7, "lines.linewidth": 1.2, "lines.markersize": 3.5, "pdf.fonttype": 42})
fig, (memory, sent) = plt.subplots(1, 2, figsize=(7, 2.6), layout="constrained")
for preset, name in PRESETS.items():
    colour, marker = STYLE[preset]
    mine = rows[rows["preset"] == preset].sort_values("dp")
    memory.plot(mine["dp"], mine["memory"] / 1e9, color=colour, marker=marker, label=name)
    shared = mine[mine["dp"] > 1]
    sent.plot(shared["dp"], shared["relative"], color=colour, marker=marker, label=name)
memory.axhline(GPU_MEMORY / 1e9, color="0.3", linestyle="--", linewidth=1, label="GPU memory (80 GB)")
memory.set_ylabel("memory per GPU [GB]")
sent.set_ylabel("bytes sent per GPU per step\nrelative to data parallel")
sent.set_yscale("log")
sent.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
for ax, tag in ((memory, "(a)"), (sent, "(b)")):
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 4, 16, 64, 256])
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("data-parallel degree (global batch 256)")
    ax.grid(True, alpha=0.3, linewidth=0.5)
    ax.set_title(tag, loc="left", fontsize=8)
memory.legend(frameon=False, loc="upper right", bbox_to_anchor=(1, 0.92))

fits = rows[rows["status"] == "ok"].groupby("preset")["dp"].min()
print("smallest data-parallel degree that fits in 80 GB:",
      ", ".join(f"{PRESETS[p]} {int(fits[p])}" if p in fits else f"{PRESETS[p]} none" for p in PRESETS))
for out in sys.argv[1:] or [os.path.join(HERE, "python_figure.png")]:
    fig.savefig(out, dpi=200, metadata={"CreationDate": None} if out.endswith(".pdf") else None)
    print("wrote", out)
