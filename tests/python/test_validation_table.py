"""bench/validation_table.py: the step a published run took, from its metric and placesim's report; the Markdown tables
of docs/validation.md built from hand-made rows (numbers derived by hand); the regeneration of a document's marked
tables; and one row of the table run end to end. Run from the repository root with the binary in PLACESIM_BIN (CTest
sets it) or built in build/:
  PLACESIM_BIN=build/placesim /usr/bin/python3 -m unittest -v tests/python/test_validation_table.py
A full regeneration of docs/validation.md's tables (bench/validation_table.py build/placesim --check-doc
docs/validation.md) takes several minutes and is not part of this test."""
import importlib.util
import math
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


def hand_report(step_s, tokens_per_s, microbatches, interval=None):
    """The parts of a placesim report the tables read: a 16-GPU tp 2 x pp 2 x dp 4 run on H100."""
    sim = {"step_time_s": step_s, "tokens_per_s": tokens_per_s,
           "interval": interval or {"available": False}}
    return {"simulation": sim, "cluster": {"accelerator": {"name": "h100-sxm"}},
            "strategy": {"devices": 16, "microbatches": microbatches, "tp": 2, "pp": 2, "dp": 4, "chunks": 1,
                         "schedule": "1f1b"}}


class ValidationTable(unittest.TestCase):
    def test_published_step_from_each_kind_of_metric(self):
        report = {"simulation": {"step_time_s": 2.0, "tokens_per_s": 8000.0, "model_tflops_per_gpu": 400.0}}
        # A throughput 20 % below placesim's is a step 1.25 times as long; a step time is taken as published.
        self.assertAlmostEqual(table.published_step("tokens_per_s", report, 6400.0), 2.5)
        self.assertAlmostEqual(table.published_step("model_tflops_per_gpu", report, 500.0), 1.6)
        self.assertAlmostEqual(table.published_step("step_time_s", report, 3.0), 3.0)

    def test_a_row_of_the_markdown_table_from_a_hand_made_report(self):
        # placesim 8,000 tokens/s in a 2 s step against 6,400 published: +25 % (8000/6400 - 1); the published step is
        # 2 x 8000/6400 = 2.5 s, so 0.5 s is missed, 125 ms for each of the 4 micro-batches; 2.5 s lies in [2.2, 2.6].
        row = {"file": "hand-run.json", "stack": "S", "metric": "tokens_per_s", "published": 6400}
        interval = {"available": True, "step_time_low_s": 2.2, "step_time_high_s": 2.6}
        r = table.row_result(row, hand_report(2.0, 8000.0, 4, interval))
        self.assertAlmostEqual(r["error"], 25.0)
        self.assertAlmostEqual(r["missed_s"], 0.5)
        self.assertAlmostEqual(r["missed_per_microbatch_ms"], 125.0)
        self.assertTrue(r["in_interval"])
        self.assertEqual(table.row_cells(r, False), ["hand-run", "16 h100-sxm", "tp 2, pp 2, dp 4", "tokens/s",
                                                     "6,400", "+0.500", "+125", "8,000", "+25.0 %"])
        # A step-time row 10 % slower than placesim's 2 s is an error of 2.2/2 - 1 = +10 %.
        slow = table.row_result({"file": "s.json", "stack": "S", "metric": "step_time_s", "published": 2.2},
                                hand_report(2.0, 1.0, 1))
        self.assertAlmostEqual(slow["error"], 10.0)
        self.assertIsNone(slow["in_interval"])

    def test_a_refused_row_shows_the_refusal_first_clause(self):
        row = {"file": "big.json", "stack": "S", "metric": "step_time_s", "published": 9.5, "gpus": 64}
        r = table.row_result(row, "memory: the model does not fit: the peak is 209 GB (at that moment ...); pass more")
        self.assertEqual(table.row_cells(r, False), ["big", 64, "", "step s", "9.5", "", "",
                                                     "refused: memory: the model does not fit: the peak is 209 GB",
                                                     ""])

    def test_a_what_if_shows_each_row_beside_its_error_as_published(self):
        # Errors +10 and -20 as published (mean 15.0), +4 and -6 with the change (mean 5.0).
        base = [{"file": "a.json", "error": 10.0}, {"file": "b.json", "error": -20.0}]
        variant = [{"file": "a.json", "error": 4.0}, {"file": "b.json", "error": -6.0}]
        text = table.whatif_rows_markdown(base, [("1F1B", ("strategy.schedule=1f1b",), variant)])
        self.assertEqual(text.splitlines(),
                         ["| experiment file | error | with 1F1B (`--set strategy.schedule=1f1b`) |", "|---|---|---|",
                          "| a | +10.0 % | +4.0 % |", "| b | -20.0 % | -6.0 % |",
                          "| mean absolute error | 15.0 % | 5.0 % |"])

    def test_the_gpu_cell_names_a_power_limit_below_the_rated_power(self):
        self.assertEqual(table.accelerator_text({"name": "h100-sxm", "power_limit_w": 500.0, "tdp_w": 700.0}),
                         "h100-sxm at 500 W")
        self.assertEqual(table.accelerator_text({"name": "a100-80gb", "tdp_w": 400.0}), "a100-80gb")
        # A published throughput that is a per-GPU figure times the GPUs (597.3 x 256) is printed to the token.
        self.assertEqual(table.format_published("tokens_per_s", 597.3 * 256), "152,909")
        self.assertEqual(table.format_published("step_time_s", 0.57), "0.57")

    def test_the_layer_table_compares_each_pass_with_its_published_time(self):
        # 7.854 ms against 7.7 published is 7.854 / 7.7 - 1 = +2.0 %; 11.4 against 12.0 is -5.0 %.
        results = [{"case": "baseline", "settings": "none, no SP", "published_forward_ms": 7.7,
                    "published_backward_ms": 12.0, "forward_ms": 7.854, "backward_ms": 11.4}]
        self.assertEqual(table.layer_markdown(results).splitlines()[2],
                         "| baseline | none, no SP | 7.7 | 7.85 | +2.0 % | 12.0 | 11.40 | -5.0 % |")

    def test_predicted_figures_are_printed_at_each_metric_precision(self):
        self.assertEqual(table.format_value("tokens_per_s", 1234567.4), "1,234,567")
        self.assertEqual(table.format_value("step_time_s", 17.594), "17.59")
        self.assertEqual(table.format_value("step_time_s", 0.5837), "0.584")
        self.assertEqual(table.format_value("mfu", 0.41234), "0.412")
        self.assertEqual(table.format_value("hardware_tflops_per_gpu", 150.46), "150.5")

    def test_the_mesh_names_chunks_and_the_axes_above_one(self):
        self.assertEqual(table.mesh_text({"tp": 8, "pp": 8, "dp": 1, "chunks": 3, "schedule": "interleaved"}),
                         "tp 8, pp 8 (3 chunks), dp 1")
        self.assertEqual(table.mesh_text({"tp": 1, "pp": 1, "dp": 2, "chunks": 1, "schedule": "1f1b", "cp": 4}),
                         "tp 1, pp 1, dp 2, cp 4")

    def test_statistics_of_hand_made_errors(self):
        # Errors +10, -30, +5 and a refusal: mean |e| = 45 / 3 = 15.0, worst -30 (largest magnitude), 2 within 20 %,
        # 2 optimistic (positive).
        results = [{"error": 10.0}, {"error": -30.0}, {"error": 5.0}, {"refused": "memory"}]
        s = table.stats(results)
        self.assertEqual((s["rows"], s["refused"], s["within"], s["optimistic"]), (3, 1, 2, 2))
        self.assertAlmostEqual(s["mean"], 15.0)
        self.assertEqual(s["worst"], -30.0)
        self.assertEqual(table.stats_cells(results), ["3 + 1 refused", "15.0 %", "-30.0 %", 2, 2])

    def test_group_table_with_an_aggregate_and_the_errors_when_collected(self):
        # Group A: now +10 and -30 (mean 20.0, one within 20 %), when collected +8 and -25 (mean 16.5, one within);
        # group B: now +5, refused when collected. A and B together: 45 / 3 = 15.0 now, 16.5 over the two collected.
        def r(err, then):
            return {"error": err, "frozen": {"commit": "abc1234", "error_percent": then,
                                             "refused": "memory" if then is None else None}}
        groups = [("a", "A", [r(10.0, 8.0), r(-30.0, -25.0)]), ("b", "B", [r(5.0, None)])]
        text = table.groups_markdown(groups, [("A and B", ("a", "b"))], "abc1234")
        self.assertEqual(text.splitlines(), [
            "| rows of | rows | mean absolute error | worst | within 20 % | optimistic "
            "| mean absolute error at abc1234 | within 20 % at abc1234 |",
            "|---|---|---|---|---|---|---|---|",
            "| A | 2 | 20.0 % | -30.0 % | 1 | 1 | 16.5 % | 1 |",
            "| B | 1 | 5.0 % | +5.0 % | 1 | 1 |  (1 refused) | 0 |",
            "| A and B | 3 | 15.0 % | -30.0 % | 2 | 2 | 16.5 % (1 refused) | 1 |",
            "| **all** | 3 | 15.0 % | -30.0 % | 2 | 2 | 16.5 % (1 refused) | 1 |"])

    def test_rows_added_after_the_freeze_are_left_out_of_the_errors_when_collected(self):
        # Two rows collected at the freeze (+8, refused) and one added later (no commit): the statistics then count
        # one row with an error and one refused, not the later one.
        rows = [{"error": 1.0, "frozen": {"commit": "abc1234", "error_percent": 8.0}},
                {"error": 2.0, "frozen": {"commit": "abc1234", "error_percent": None, "refused": "memory"}},
                {"error": 3.0, "frozen": {"commit": None, "error_percent": None, "refused": None}}]
        then = table.frozen_stats(rows)
        self.assertEqual((then["rows"], then["refused"]), (1, 1))
        self.assertAlmostEqual(then["mean"], 8.0)
        self.assertEqual(table._frozen_commit(list(reversed(rows))), "abc1234")

    def test_the_summary_counts_rows_inside_their_interval(self):
        results = {"examples/validation": [{"error": 4.0, "in_interval": True}, {"error": -2.0, "in_interval": False},
                                           {"error": 1.0, "in_interval": None}]}
        # Mean (4 + 2 + 1) / 3 = 2.3, two optimistic; two rows have an interval, one holds the published step.
        self.assertEqual(table.summary_markdown(results).splitlines()[2],
                         "| `examples/validation` | development | 3 | 2.3 % | +4.0 % | 3 | 2 | 1 of 2 |")
        # The summary block shows the three tables only, not the what-if runs that share its results.
        every = {t: results["examples/validation"] for t in table.TABLES}
        every[("examples/validation", ("strategy.schedule=1f1b",), "")] = [{"error": 50.0}]
        self.assertEqual(len(table.BLOCKS["summary"][1](every).splitlines()), 2 + 3)

    def test_every_published_row_falls_in_exactly_one_group(self):
        for table_dir in table.GROUPS:
            rows = table.published_rows(table_dir)
            groups = table.grouped(table_dir, [{"file": row["file"]} for row in rows], rows)
            self.assertEqual(sum(len(members) for _, _, members in groups), len(rows), table_dir)
        stray = [{"file": "stray.json", "stack": "Megatron-LM 2019"}]
        with self.assertRaisesRegex(ValueError, "stray.json.*falls in 0 groups"):
            table.grouped("examples/validation", [{"file": "stray.json"}], stray)

    def test_a_marked_table_is_regenerated_and_a_current_one_is_left_alone(self):
        calls = []

        def run(table_dir):
            calls.append(table_dir)
            return [{"file": "korthikanti-22b-full.json", "error": 2.0}, {"file": "narayanan-gpt-1.7b.json",
                                                                         "error": -4.0}]
        doc = "# T\n<!-- table: validation-groups -->\nstale\n<!-- /table -->\ntext\n"
        new, changed = table.regenerate_doc(doc, run)
        self.assertEqual(changed, ["validation-groups"])
        self.assertEqual(calls, ["examples/validation"])
        # Korthikanti 2.0 %, Narayanan 4.0 %, both (2 + 4) / 2 = 3.0 %.
        self.assertIn("| Narayanan et al. 2021, Table 1 (Megatron-LM 2021-04) | 1 | 4.0 % | -4.0 % | 1 | 0 |", new)
        self.assertIn("| **all** | 2 | 3.0 % | -4.0 % | 2 | 1 |\n<!-- /table -->\ntext\n", new)
        self.assertEqual(table.regenerate_doc(new, run)[1], [])
        with self.assertRaisesRegex(ValueError, "unknown table name.*nonsense"):
            table.regenerate_doc("<!-- table: nonsense -->\n<!-- /table -->\n", run)

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
        residuals = table.load_json(os.path.join(REPO, "workloads", "stack", "residuals.json"))
        self.assertGreaterEqual(len(residuals["groups"]), 4)
        for group in residuals["groups"]:
            path = group["rows"][0]
            folder, name = os.path.split(path)
            row = next(r for r in table.load_json(os.path.join(REPO, folder, "published.json"))["rows"]
                       if r["file"] == name)
            report = table.simulate(binary(), os.path.join(REPO, path), [])
            self.assertIsInstance(report, dict, path)
            err = table.error_percent(row["metric"], report["simulation"][row["metric"]], row["published"])
            self.assertAlmostEqual(math.log(1 + err / 100), group["log_ratios"][0], places=5, msg=path)
            self.assertEqual(report["simulation"]["interval"]["family"], group["family"])
            self.assertEqual(report["simulation"]["interval"]["generation"], group["generation"])


if __name__ == "__main__":
    unittest.main()
