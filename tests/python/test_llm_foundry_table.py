"""bench/llm_foundry_table.py: the experiments it writes from examples/validation2024/llm-foundry-table.csv are the
ones written by hand for the nine llm-foundry rows of examples/validation2024 (the same settings, field by field), and
it simulates and prints them. Run from the repository root with the binary in PLACESIM_BIN (CTest sets it) or built in
build/:  PLACESIM_BIN=build/placesim /usr/bin/python3 -m unittest -v tests/python/test_llm_foundry_table.py"""
import contextlib
import csv
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "llm_foundry_table.py")
FOLDER = os.path.join(REPO, "examples", "validation2024")
spec = importlib.util.spec_from_file_location("llm_foundry_table", SCRIPT)
table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(table)

# The hand-written files and the table row each stands for: (file, table title prefix, model, seq, GPUs).
HAND_WRITTEN = [
    ("mpt-7b-2k-8xh100.json", "H100 80GB BF16", "7b", "2048", "8"),
    ("mpt-13b-2k-64xh100.json", "H100 80GB BF16", "13b", "2048", "64"),
    ("mpt-30b-2k-32xh100.json", "H100 80GB BF16", "30b", "2048", "32"),
    ("mpt-70b-2k-64xh100.json", "H100 80GB BF16", "70b", "2048", "64"),
    ("mpt-7b-2k-512xh100.json", "H100 80GB BF16 (Large", "7b", "2048", "512"),
    ("mpt-70b-2k-512xh100.json", "H100 80GB BF16 (Large", "70b", "2048", "512"),
    ("mpt-7b-2k-8xa100.json", "A100 80GB", "7b", "2048", "8"),
    ("mpt-30b-2k-8xa100.json", "A100 80GB", "30b", "2048", "8"),
    ("mpt-70b-2k-64xa100.json", "A100 80GB", "70b", "2048", "64"),
]


def binary():
    return os.environ.get("PLACESIM_BIN", os.path.join(REPO, "build", "placesim"))


class LlmFoundryTable(unittest.TestCase):
    def setUp(self):
        with open(table.TABLE) as f:
            self.rows = list(csv.DictReader(f))

    def row(self, title, model, seq, gpus):
        found = [r for r in self.rows if r["table"].startswith(title) and r["model"] == model and
                 r["seq_len"] == seq and r["gpus"] == gpus]
        self.assertEqual(len(found), 1, (title, model, seq, gpus))
        return found[0]

    def test_the_table_holds_every_bf16_and_fp8_row(self):
        # 18 + 52 + 61 bf16 rows under the three titles of the README at commit 5e85bd6 and the 7 of its H100 FP8 table
        # (its A100 40GB table apart); the FP8 rows run with training.fp8.
        self.assertEqual(len(self.rows), 138)
        fp8 = [r for r in self.rows if r["precision"] == "amp_fp8"]
        self.assertEqual(len(fp8), 7)
        self.assertTrue(all(r["table"] == "H100 80GB FP8" for r in fp8))
        self.assertTrue(all(table.experiment(r, "triton")["training"].get("fp8") for r in fp8))
        self.assertFalse(any(table.experiment(r, "triton")["training"].get("fp8") for r in self.rows if r not in fp8))
        self.assertEqual(sum(r["sharding"] == "SHARD_GRAD_OP" for r in self.rows), 6)

    def test_generated_experiments_match_the_hand_written_files(self):
        for name, title, model, seq, gpus in HAND_WRITTEN:
            with self.subTest(name):
                with open(os.path.join(FOLDER, name)) as f:
                    written = json.load(f)
                generated = table.experiment(self.row(title, model, seq, gpus), "triton")
                for section in ("model", "training", "strategy", "cluster"):
                    self.assertEqual(generated[section], written[section], section)

    def test_the_script_simulates_and_reports_the_rows(self):
        out = subprocess.run([sys.executable, SCRIPT, binary(), "--only", "mpt-7b-2048-8x"], check=True,
                             capture_output=True, text=True).stdout
        lines = [line for line in out.splitlines() if line.startswith("| mpt-")]
        self.assertEqual([line.split(" | ")[0] for line in lines], ["| mpt-7b-2048-8xh100", "| mpt-7b-2048-8xa100"])
        self.assertIn("all rows: 2 rows", out)
        # The H100 row is the hand-written mpt-7b-2k-8xh100.json: the same prediction.
        with tempfile.NamedTemporaryFile(suffix=".json") as report:
            subprocess.run([binary(), "simulate", os.path.join(FOLDER, "mpt-7b-2k-8xh100.json"), "--fidelity",
                            "analytic", "--report", report.name], check=True, stdout=subprocess.DEVNULL)
            with open(report.name) as f:
                tokens = json.load(f)["simulation"]["tokens_per_s"]
        self.assertEqual(lines[0].split(" | ")[6], f"{tokens:,.0f}")
        # The 7B run at 2K on 8 GPUs is published on both GPUs: one pair.
        self.assertIn("same run on both (every pair): 1 pairs", out)

    def test_pairs_compare_the_h100_to_a100_ratios(self):
        def row(model, seq, gpu, tokens, precision="amp_bf16"):
            return {"model": model, "seq_len": str(seq), "gpus": "8", "gpu": gpu, "tokens_per_s": str(tokens),
                    "precision": precision}
        rows = [row("7b", 2048, "h100_80gb", 200), row("7b", 2048, "a100_80gb", 100),   # published 2.0
                row("1b", 4096, "h100_80gb", 300), row("1b", 4096, "a100_80gb", 100),   # published 3.0
                row("3b", 2048, "h100_80gb", 100), row("3b", 2048, "a100_80gb", 50),    # two A100 rows: skipped
                row("3b", 2048, "a100_80gb", 60),
                row("13b", 2048, "h100_80gb", 100, "amp_fp8"), row("13b", 2048, "a100_80gb", 50)]  # FP8: not a pair
        # placesim 2.2 (+10 %) and 2.7 (-10 %); the skipped ones would move the mean if counted.
        predicted = {0: 220.0, 1: 100.0, 2: 270.0, 3: 100.0, 4: 500.0, 5: 50.0, 6: 60.0, 7: 500.0, 8: 50.0}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            table.pairs(rows, list(range(len(rows))), predicted)
        lines = out.getvalue().strip().splitlines()
        self.assertEqual(lines, [
            "H100 / A100 per-GPU ratio, same run on both (every pair): 2 pairs, placesim's ratio +0.0% from the "
            "published on average (mean absolute 10.0%, -10.0% to +10.0%)",
            "H100 / A100 per-GPU ratio, same run on both (seq <= 2k): 1 pairs, placesim's ratio +10.0% from the "
            "published on average (mean absolute 10.0%, +10.0% to +10.0%)",
            "H100 / A100 per-GPU ratio, same run on both (seq >= 4k): 1 pairs, placesim's ratio -10.0% from the "
            "published on average (mean absolute 10.0%, -10.0% to -10.0%)"])


if __name__ == "__main__":
    unittest.main()
