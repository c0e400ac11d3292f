"""Every published run of the development and test tables that completed fits placesim's memory model: simulating
its experiment file must not be refused (examples/validation*/published.json "rows"; the runs placesim cannot write
are listed apart, under "not_simulated" or "skipped", each with its reason). Run from the repository root with the
binary in PLACESIM_BIN (CTest sets it):  PLACESIM_BIN=build/placesim /usr/bin/python3 -m unittest tests/python/test_tables_fit.py"""
import concurrent.futures
import json
import os
import subprocess
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLES = ("examples/validation", "examples/validation2024", "examples/validation-test")


def binary():
    return os.environ.get("PLACESIM_BIN", os.path.join(REPO, "build", "placesim"))


def refusal(path):
    # As placesim decides: a plan whose analytic bound fits is admitted (analyze); one whose bound is over the device
    # is simulated and admitted when its simulated peak fits.
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        if subprocess.run([binary(), "analyze", path, "--out", report.name], capture_output=True).returncode == 0:
            return None
        done = subprocess.run([binary(), "simulate", path, "--fidelity", "analytic", "--force", "--quiet", "--report",
                               report.name], capture_output=True, text=True)
        return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["exit"])[-1]


class TablesFit(unittest.TestCase):
    def test_every_completed_published_run_fits(self):
        paths = []
        for table in TABLES:
            with open(os.path.join(REPO, table, "published.json")) as f:
                paths += [os.path.join(REPO, table, row["file"]) for row in json.load(f)["rows"]]
        self.assertGreater(len(paths), 170)
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            refused = {p: r for p, r in zip(paths, pool.map(refusal, paths)) if r}
        self.assertEqual(refused, {})


if __name__ == "__main__":
    unittest.main()
