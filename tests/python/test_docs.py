"""Generated reference docs match what the binary gives: docs/stacks.md (scripts/stacks_doc.py). Run from the repository
root with the binary in PLACESIM_BIN (CTest sets it):  PLACESIM_BIN=build/placesim /usr/bin/python3 -m unittest tests/python/test_docs.py"""
import os
import subprocess
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def binary():
    return os.environ.get("PLACESIM_BIN", os.path.join(REPO, "build", "placesim"))


class GeneratedDocs(unittest.TestCase):
    def test_stacks_doc_is_current(self):
        done = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "stacks_doc.py"), binary(), "--check"])
        self.assertEqual(done.returncode, 0, "docs/stacks.md drifted: run scripts/stacks_doc.py build/placesim")


if __name__ == "__main__":
    unittest.main()
