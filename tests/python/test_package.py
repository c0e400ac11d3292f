"""scripts/placesim, the Python entry point: analyze / simulate / sweep through the binary, errors as PlacesimError.
Run from the repository root with the binary in PLACESIM_BIN (CTest sets it) or built in build/:
    PLACESIM_BIN=build/placesim /usr/bin/python3 -m unittest -v tests/python/test_package.py"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import placesim  # noqa: E402
import placesim._runner  # noqa: E402

# Llama 3 8B, ZeRO-1 over 8 GPUs: bf16 parameters replicated (2 bytes each), fp32 master weights and Adam's two
# moments (12 bytes per parameter) sharded over dp 8 — ZeRO paper, Section 5.1 (stage P_os).
ZERO1 = {"model": "llama3-8b", "training": {"global_batch": 64, "micro_batch": 1},
         "strategy": {"preset": "zero1", "dp": 8}}

# Four GPUs of a DGX A100 (one NIC each) training a 2-layer toy model: simulates in well under a second.
TINY = {"model": {"layers": 2, "hidden": 256, "heads": 4, "vocab": 1000, "seq_len": 128},
        "training": {"global_batch": 8, "micro_batch": 1},
        "strategy": {"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 1},
        "cluster": {"preset": "dgx-a100", "nodes": 1, "gpus_per_node": 4, "nics_per_node": 4}}


def binary():
    return placesim.find_binary()


class Analyze(unittest.TestCase):
    def test_memory_total_equals_the_cli_on_the_same_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(ZERO1, f)
        try:
            cli = json.loads(subprocess.run([binary(), "analyze", f.name], capture_output=True, text=True,
                                            check=True).stdout)
            self.assertEqual(placesim.analyze(f.name)["memory"], cli["memory"])  # a file name works too
        finally:
            os.unlink(f.name)
        report = placesim.analyze(ZERO1)
        self.assertEqual(report["memory"]["total_bytes"], cli["memory"]["total_bytes"])
        params = report["model"]["parameters"]
        self.assertAlmostEqual(report["memory"]["parameters_bytes"], 2 * params, delta=1e-6 * params)
        self.assertAlmostEqual(report["memory"]["optimizer_bytes"], 12 * params / 8, delta=1e-6 * params)

    def test_options_are_the_cli_flags(self):
        zero3 = placesim.analyze(ZERO1, set={"strategy.preset": "zero3"})
        self.assertAlmostEqual(zero3["memory"]["parameters_bytes"], 2 * zero3["model"]["parameters"] / 8,
                               delta=1e-6 * zero3["model"]["parameters"])
        self.assertEqual(placesim._runner._flags({"device_memory": "80GiB", "force": True, "quiet": False,
                                                  "set": {"strategy.dp": 8, "model": "llama3-8b"}}),
                         ["--device-memory", "80GiB", "--force", "--set", "strategy.dp=8", "--set", "model=llama3-8b"])

    def test_a_bad_field_raises_placesim_error_naming_it(self):
        bad = dict(ZERO1, strategy={"preset": "zero1", "dpp": 8})
        with self.assertRaises(placesim.PlacesimError) as caught:
            placesim.analyze(bad)
        self.assertIn("strategy.dpp", str(caught.exception))
        self.assertIn("strategy.dp", str(caught.exception))  # the suggestion
        self.assertEqual(caught.exception.returncode, 2)
        self.assertTrue(caught.exception.bad_input)

    def test_every_error_of_the_experiment_is_in_the_message(self):
        # Two independent mistakes: a typo'd key and a model preset that does not exist. The binary lists both under
        # one "error:" header; the exception's message keeps the list, not only the header.
        bad = dict(ZERO1, model={"preset": "gpt3-1.3b"}, strategy={"preset": "zero1", "dpp": 8})
        with self.assertRaises(placesim.PlacesimError) as caught:
            placesim.analyze(bad)
        message = str(caught.exception)
        self.assertIn("2 errors", message)
        self.assertIn("model.preset=gpt3-1.3b", message)
        self.assertIn("unknown key strategy.dpp", message)

    def test_an_experiment_that_is_neither_a_dict_nor_a_file_name_is_named(self):
        with self.assertRaisesRegex(TypeError, "experiment must be a dict .* or a file name, not list"):
            placesim.analyze([ZERO1])
        with self.assertRaisesRegex(placesim.ResultsError, "no results files given"):
            placesim.read_results()

    def test_the_core_needs_no_pandas(self):
        code = ("import sys, placesim; placesim.analyze(%r); print('pandas' in sys.modules)" % (ZERO1,))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "scripts")))
        self.assertEqual(done.stdout.strip(), "False", done.stderr)


class Simulate(unittest.TestCase):
    def test_a_tiny_experiment_has_a_step_time(self):
        report = placesim.simulate(TINY, fidelity="analytic")
        step = report["simulation"]["step_time_s"]
        self.assertTrue(0 < step < 1 and math.isfinite(step), step)
        self.assertEqual(report["simulation"]["fidelity"], "analytic")

    def test_a_mesh_that_misses_the_cluster_raises(self):
        with self.assertRaisesRegex(placesim.PlacesimError, r"dp x tp x pp = 1 x 3 x 1 = 3 devices does not match"):
            placesim.simulate(dict(TINY, strategy={"preset": "megatron-3d", "dp": 1, "tp": 3, "pp": 1}))


class Sweep(unittest.TestCase):
    AXES = {"strategy.preset": ["zero1", "zero2", "zero3"], "strategy.dp": [2, 4, 8]}

    def test_one_row_per_point_with_a_column_per_axis_and_figure(self):
        rows = placesim.sweep(ZERO1, self.AXES, figures=["memory.total_bytes", "communication.bytes_per_step"],
                              jobs=1, device_memory="80GB")
        self.assertEqual(len(rows), 9)
        for column in ("strategy.preset", "strategy.dp", "status", "memory.total_bytes",
                       "communication.bytes_per_step"):
            self.assertIn(column, rows.columns)
        self.assertEqual(list(rows["index"]), list(range(9)))
        self.assertEqual(rows.attrs["axes"], ["strategy.preset", "strategy.dp"])
        fits = rows[rows["status"] == "ok"]
        self.assertTrue((fits["memory.total_bytes"] <= 80e9).all())
        self.assertTrue((rows[rows["status"] == "invalid"]["memory.total_bytes"] > 80e9).all())
        one = rows[(rows["strategy.preset"] == "zero1") & (rows["strategy.dp"] == 8)]
        self.assertEqual(one["memory.total_bytes"].iloc[0], placesim.analyze(ZERO1)["memory"]["total_bytes"])

    def test_out_keeps_the_results_and_read_results_reads_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "r.jsonl")
            rows = placesim.sweep(ZERO1, {"strategy.dp": [2, 4]}, out=out)
            again = placesim.read_results(out, out)
            self.assertEqual(list(again["memory.total_bytes"]), list(rows["memory.total_bytes"]))

    def test_a_bad_axis_raises_naming_it(self):
        with self.assertRaisesRegex(placesim.PlacesimError, "strategy.tpp") as caught:
            placesim.sweep(ZERO1, {"strategy.tpp": [1, 2]})
        self.assertEqual(caught.exception.returncode, 2)


class NoPandas(unittest.TestCase):
    # Calls sweep() and read_results() in a child interpreter whose binary is a stand-in that only records that it
    # ran; `hide` makes `import pandas` fail there as it does where pandas is not installed.
    CHILD = """
import json, sys
if {hide}:
    sys.modules["pandas"] = None
import placesim
for call in (lambda: placesim.sweep({{"model": "llama3-8b"}}, {{"strategy.dp": [1, 2]}}),
             lambda: placesim.read_results("results.jsonl")):
    try:
        call()
        print(json.dumps({{"error": None}}))
    except Exception as e:
        print(json.dumps({{"error": type(e).__name__, "name": getattr(e, "name", None), "text": str(e)}}))
"""

    def run_child(self, hide):
        with tempfile.TemporaryDirectory() as tmp:
            marker, fake = os.path.join(tmp, "ran"), os.path.join(tmp, "placesim")
            with open(fake, "w", encoding="utf-8") as f:
                f.write(f"#!/bin/sh\ntouch {marker}\nexit 2\n")
            os.chmod(fake, 0o755)
            env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "scripts"), PLACESIM_BIN=fake)
            done = subprocess.run([sys.executable, "-c", self.CHILD.format(hide=hide)], capture_output=True,
                                  text=True, env=env, cwd=tmp)
            self.assertEqual(done.returncode, 0, done.stderr)
            return [json.loads(line) for line in done.stdout.splitlines()], os.path.exists(marker)

    def test_sweep_without_pandas_says_what_to_install_before_running_the_binary(self):
        (sweep, read), ran = self.run_child(hide=True)
        self.assertFalse(ran, "the binary ran before the missing pandas was reported")
        for outcome, caller in ((sweep, "placesim.sweep()"), (read, "placesim.read_results()")):
            self.assertEqual((outcome["error"], outcome["name"]), ("ModuleNotFoundError", "pandas"), outcome)
            self.assertIn(caller, outcome["text"])
            self.assertIn("apt-get install python3-pandas", outcome["text"])
            self.assertIn("/usr/bin/python3", outcome["text"])

    def test_with_pandas_the_same_child_reaches_the_binary(self):
        # The control: the stand-in does run when pandas imports (and its exit code 2 is a PlacesimError).
        (sweep, _), ran = self.run_child(hide=False)
        self.assertTrue(ran)
        self.assertEqual(sweep["error"], "PlacesimError")


class Binary(unittest.TestCase):
    def test_not_found_says_how_to_build_it(self):
        env = {k: v for k, v in os.environ.items() if k != "PLACESIM_BIN"}
        env["PATH"] = "/nonexistent"
        with mock.patch.dict(os.environ, env, clear=True), \
                mock.patch.object(placesim._runner, "_REPO_BINARY", "/nonexistent/placesim"):
            with self.assertRaisesRegex(placesim.PlacesimError, "bash scripts/setup.sh"):
                placesim.find_binary()
        with mock.patch.dict(os.environ, {"PLACESIM_BIN": "/nonexistent/placesim"}):
            with self.assertRaisesRegex(placesim.PlacesimError, "PLACESIM_BIN=/nonexistent/placesim"):
                placesim.analyze(ZERO1)

    def test_python_m_placesim_passes_through(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "scripts"), PLACESIM_BIN=binary())
        done = subprocess.run([sys.executable, "-m", "placesim", "analyze", "-"], input=json.dumps(ZERO1),
                              capture_output=True, text=True, env=env)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout)["memory"]["total_bytes"],
                         placesim.analyze(ZERO1)["memory"]["total_bytes"])
        done = subprocess.run([sys.executable, "-m", "placesim", "analyze", "-", "--set", "strategy.dpp=2"],
                              input=json.dumps(ZERO1), capture_output=True, text=True, env=env)
        self.assertEqual(done.returncode, 2)
        self.assertIn("strategy.dpp", done.stderr)


if __name__ == "__main__":
    unittest.main()
