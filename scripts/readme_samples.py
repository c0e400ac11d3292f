#!/usr/bin/env python3
"""README.md's sample outputs, generated from the binary.

Each sample is a fenced block between `<!-- sample: NAME -->` and `<!-- /sample -->` in README.md. A command sample
runs its commands as the README shows them (`build/placesim` is the binary given, `python3` this interpreter) in a
scratch folder that sees the repository's examples/, docs/, traces/ and scripts/, and writes each command as
`$ COMMAND` followed by its output (stdout and stderr) abridged by the sample's rule: the lines its `keep` expression
matches, each cut to its `width`. A file sample writes a file of the repository as it is. Host timings are masked
(`simulated in … s`) so the block depends only on the binary.
Usage: scripts/readme_samples.py [build/placesim] [--check]
(--check: exit 1 when README.md differs from what the binary gives, the test tests/python/test_docs.py runs)."""
import difflib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
LINKED = ["examples", "docs", "traces", "scripts"]  # what the commands read, seen from the scratch folder
BEGIN = re.compile(r"^<!-- sample: ([a-z0-9-]+) -->$")
END = "<!-- /sample -->"
# Host-dependent text and what it becomes: the wall time of a simulation or a sweep, the CPUs a sweep used.
MASKS = [(re.compile(r"simulated in [0-9.]+ s"), "simulated in … s"),
         (re.compile(r"in [0-9.]+ s with [0-9]+ jobs"), "in … s with … jobs")]


@dataclass
class Command:
    line: str        # as the README shows it
    exit_code: int = 0


@dataclass
class Sample:
    name: str
    commands: list = field(default_factory=list)
    keep: str = ""       # keep an output line whose text (less its indent) this regular expression matches; "" all
    width: int = 0       # cut longer lines to this many characters, ending " ..."; 0 keeps them whole
    file: str = ""       # a file sample: this file of the repository, verbatim
    fence: str = "text"


SUMMARY = r"simulated step:|step time|MFU|tokens / s|90 % interval|peak memory / GPU|headroom|analytic vs simulated"
SAMPLES = [
    Sample("first-command",
           [Command("build/placesim simulate --trace gpt3.trace.json.gz --trace-devices dp0+tp0 --svg gpt3.svg")],
           keep=r"placesim|mesh dp|memory per device|parameters|gradients|optimizer|activations|total \(bound\)|"
                r"sent per device|dp_grad_sync|tp_collective|pp_p2p|" + SUMMARY +
                r"|pipeline idle|schedule bubble|simulated in|wrote",
           width=118),
    Sample("experiment-file", file="examples/llama3-8b-fsdp.json", fence="json"),
    Sample("experiment-run", [Command("build/placesim simulate examples/llama3-8b-fsdp.json --quiet")],
           keep=SUMMARY + r"|stack  |memory.total_bytes", width=118),
    Sample("what-if",
           [Command("build/placesim simulate examples/whatif/llama3-70b-512gpu.json --fidelity analytic "
                    "--set cluster.preset=dgx-b200 --quiet")],
           keep=SUMMARY + r"|sent / GPU|warning: overlap", width=118),
    Sample("timeline",
           [Command("build/placesim simulate examples/small-3d-1f1b.json --trace small.trace.json.gz "
                    "--trace-devices dp0 --svg small.svg --quiet")],
           keep=r"simulated step:|step time|pipeline idle|schedule bubble|wrote", width=118),
    Sample("sweep",
           [Command("build/placesim sweep docs/examples/schedule-sweep.json --out results.jsonl"),
            Command("python3 traces/sweep/plot_sweep.py results.jsonl --x strategy.microbatches --hue "
                    "strategy.schedule --y simulation.tokens_per_s --y memory.activations_bytes --out fig.png")]),
    Sample("search",
           [Command("build/placesim search examples/whatif/llama3-70b-1t-tokens.json --cp 1,2,4,8 "
                    "--set run.gpu_hour_usd=2.5 --top 1"),
            Command("build/placesim search examples/whatif/llama3-70b-1t-tokens.json --cp 1,2,4,8 "
                    "--set cluster.preset=dgx-b200 --set cluster.nodes=32 --set run.gpu_hour_usd=4 --top 1"),
            Command("build/placesim search examples/whatif/llama3-70b-1t-tokens.json --cp 1,2,4,8 "
                    "--set cluster.preset=gb200-nvl72 --set cluster.nodes=4 --set run.gpu_hour_usd=5 --top 1"),
            Command("build/placesim simulate examples/whatif/llama3-70b-1t-tokens.json --set run.gpu_hour_usd=2.5 "
                    "--quiet")],
           keep=r"placesim search|\d+ candidates|\d+ the same|rank|\d+ +megatron|days:|time to train|"
                r"goodput|energy|cost "),
    Sample("check-verify",
           [Command("build/placesim check examples/verify/gradients-sharded-optimizer-replicated.json", 2),
            Command("build/placesim verify examples/verify/hsdp-llama3-8b.json")],
           keep=r"placesim check|verify:|checker:|gradients|optimizer|parameters|elements moved|stage|verdict:"),
]


def abridge(text, sample):
    """The output as shown: masked, only the lines the sample keeps, each cut to its width."""
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    lines = text.rstrip("\n").split("\n")
    kept = [line for line in lines if not sample.keep or re.match(sample.keep, line.lstrip())]
    return [line if not sample.width or len(line) <= sample.width else line[:sample.width - 4] + " ..." for line in kept]


def scratch_folder(placesim, where):
    """A folder where the README's relative paths work: the repository's inputs linked, build/placesim the binary,
    python3 this interpreter (on PATH)."""
    for name in LINKED:
        os.symlink(os.path.join(ROOT, name), os.path.join(where, name))
    os.makedirs(os.path.join(where, "build"))
    os.symlink(os.path.abspath(placesim), os.path.join(where, "build", "placesim"))
    bin_dir = os.path.join(where, ".bin")
    os.makedirs(bin_dir)
    os.symlink(sys.executable, os.path.join(bin_dir, "python3"))
    return dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), LC_ALL="C.UTF-8")


def run_sample(sample, placesim):
    if sample.file:
        with open(os.path.join(ROOT, sample.file), encoding="utf-8") as f:
            return f.read().rstrip("\n").split("\n")
    lines = []
    with tempfile.TemporaryDirectory(prefix="readme-samples-") as where:
        env = scratch_folder(placesim, where)
        for command in sample.commands:
            done = subprocess.run(["bash", "-c", command.line], cwd=where, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, encoding="utf-8", timeout=300)
            if done.returncode != command.exit_code:
                raise SystemExit(f"readme_samples.py: sample {sample.name}: `{command.line}` exited "
                                 f"{done.returncode}, expected {command.exit_code}; its output:\n{done.stdout}")
            lines += ([""] if lines else []) + ["$ " + command.line] + abridge(done.stdout, sample)
    return lines


def render(readme, placesim):
    """README.md with every sample block rewritten; refuses a marker without a sample and a sample without one."""
    by_name = {s.name: s for s in SAMPLES}
    out, seen, lines, i = [], [], readme.split("\n"), 0
    while i < len(lines):
        out.append(lines[i])
        match = BEGIN.match(lines[i])
        i += 1
        if not match:
            continue
        name = match.group(1)
        if name not in by_name:
            raise SystemExit(f"readme_samples.py: README.md names sample '{name}', which SAMPLES does not define; "
                             f"add it to scripts/readme_samples.py or remove the marker")
        end = lines.index(END, i)
        sample = by_name[name]
        out += ["```" + sample.fence] + run_sample(sample, placesim) + ["```"]
        seen.append(name)
        i = end
    missing = [s.name for s in SAMPLES if s.name not in seen]
    if missing:
        raise SystemExit(f"readme_samples.py: README.md has no block for sample(s) {', '.join(missing)}; add "
                         f"'<!-- sample: NAME -->' and '{END}' lines where each belongs")
    return "\n".join(out)


def main(argv):
    placesim = next((a for a in argv if not a.startswith("--")), os.path.join(ROOT, "build", "placesim"))
    with open(README, encoding="utf-8") as f:
        readme = f.read()
    text = render(readme, placesim)
    if "--check" in argv:
        if text == readme:
            return 0
        sys.stdout.writelines(difflib.unified_diff(readme.splitlines(True), text.splitlines(True), "README.md",
                                                   "README.md as the binary gives it"))
        print("README.md's samples drifted: run scripts/readme_samples.py build/placesim")
        return 1
    with open(README, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
