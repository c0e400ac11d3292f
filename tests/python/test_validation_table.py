"""bench/validation_table.py: the step a published run took, from its metric and placesim's report, and one row of
the table run end to end. Run from the repository root with the binary in PLACESIM_BIN (CTest sets it) or built in
build/:  PLACESIM_BIN=build/placesim /usr/bin/python3 -m unittest -v tests/python/test_validation_table.py"""
import importlib.util
import os
import subprocess
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "validation_table.py")
spec = importlib.util.spec_from_file_location("validation_table", SCRIPT)
table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(table)


def binary():
    return os.environ.get("PLACESIM_BIN", os.path.join(REPO, "build", "placesim"))


class ValidationTable(unittest.TestCase):
    def test_published_step_from_each_kind_of_metric(self):
        report = {"simulation": {"step_time_s": 2.0, "tokens_per_s": 8000.0, "model_tflops_per_gpu": 400.0}}
        # A throughput 20 % below placesim's is a step 1.25 times as long; a step time is taken as published.
        self.assertAlmostEqual(table.published_step("tokens_per_s", report, 6400.0), 2.5)
        self.assertAlmostEqual(table.published_step("model_tflops_per_gpu", report, 500.0), 1.6)
        self.assertAlmostEqual(table.published_step("step_time_s", report, 3.0), 3.0)

    def test_a_row_prints_its_error_and_the_step_it_misses(self):
        out = subprocess.run([sys.executable, SCRIPT, binary(), "--only", "korthikanti-22b-full"], check=True,
                             capture_output=True, text=True, cwd=REPO).stdout
        rows = [line for line in out.splitlines() if line.startswith("| korthikanti-22b-full.json")]
        self.assertEqual(len(rows), 1)
        cells = [c.strip() for c in rows[0].strip("|").split("|")]
        published, predicted = float(cells[3]), float(cells[4])
        # A step-time row: the step missed is published minus predicted (the predicted cell is rounded to 0.01 s), and
        # with one micro-batch (global batch 4 of micro-batch 4, data parallelism 1) the same in milliseconds.
        self.assertLessEqual(abs(float(cells[6]) - (published - predicted)), 0.0051)
        self.assertGreater(float(cells[6]), 0)
        self.assertAlmostEqual(float(cells[7]), 1000 * float(cells[6]), delta=0.55)  # the s cell is rounded to 1 ms
        self.assertIn("Megatron-LM 2022: 1 rows", out)


    def test_the_interval_residuals_are_those_of_the_current_model(self):
        # workloads/stack/residuals.json must be rewritten (bench/validation_table.py --residuals) whenever the model
        # changes: the first row of every group, simulated now, gives the stored ln(published / predicted step).
        import json
        import math
        residuals = json.load(open(os.path.join(REPO, "workloads", "stack", "residuals.json")))
        self.assertGreaterEqual(len(residuals["groups"]), 4)
        for group in residuals["groups"]:
            path = group["rows"][0]
            folder, name = os.path.split(path)
            row = next(r for r in json.load(open(os.path.join(REPO, folder, "published.json")))["rows"]
                       if r["file"] == name)
            report = table.simulate(binary(), os.path.join(REPO, path), [])
            self.assertIsInstance(report, dict, path)
            err = table.error_percent(row["metric"], report["simulation"][row["metric"]], row["published"])
            self.assertAlmostEqual(math.log(1 + err / 100), group["log_ratios"][0], places=5, msg=path)
            self.assertEqual(report["simulation"]["interval"]["family"], group["family"])
            self.assertEqual(report["simulation"]["interval"]["generation"], group["generation"])


if __name__ == "__main__":
    unittest.main()
