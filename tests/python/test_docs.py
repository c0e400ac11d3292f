"""Generated reference docs match what the binary gives: docs/stacks.md (scripts/stacks_doc.py), README.md's samples
(scripts/readme_samples.py), docs/cli.md's commands and flags; README.md stays a front door that links to docs that
exist. Run from the repository root with the binary in PLACESIM_BIN (CTest sets it):
PLACESIM_BIN=build/placesim /usr/bin/python3 -m unittest tests/python/test_docs.py"""
import glob
import os
import re
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

    def test_readme_samples_are_current(self):
        done = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "readme_samples.py"), binary(), "--check"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, encoding="utf-8")
        self.assertEqual(done.returncode, 0, "README.md's samples drifted: run scripts/readme_samples.py "
                         "build/placesim\n" + done.stdout[-4000:])

    def test_cli_doc_names_every_command_and_flag(self):
        with open(os.path.join(REPO, "docs", "cli.md"), encoding="utf-8") as f:
            doc = f.read()
        overview = subprocess.run([binary(), "--help"], capture_output=True, text=True, check=True).stdout
        commands = re.findall(r"^  ([a-z][a-z-]+)  ", overview.split("commands:")[1], re.M)
        self.assertGreaterEqual(len(commands), 13, overview)
        for command in commands:
            self.assertIn(f"## `{command}`", doc, f"docs/cli.md has no section for placesim {command}")
            help_text = subprocess.run([binary(), command, "--help"], capture_output=True, text=True, check=True).stdout
            for flag in sorted(set(re.findall(r"^  (--[a-z0-9-]+)", help_text, re.M))):
                self.assertIn(f"`{flag}", doc, f"docs/cli.md does not name {flag} of placesim {command}")


def markdown_links(path):
    """The relative link targets of a Markdown file, outside code."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"^[a-z]+:", t)]


def heading_anchors(path):
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces as hyphens."""
    anchors, in_code = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
            elif not in_code and line.startswith("#"):
                anchors.add(re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-"))
    return anchors


class ReadmeFrontDoor(unittest.TestCase):
    def readme(self):
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
            return f.read()

    def test_readme_is_at_most_300_lines(self):
        lines = self.readme().count("\n")
        self.assertLessEqual(lines, 300, f"README.md has {lines} lines; move detail into docs/ and link to it")

    def test_readme_starts_with_the_setup_and_test_commands(self):
        first_block = self.readme().split("```bash\n", 1)[1].split("```", 1)[0]
        self.assertEqual(first_block.splitlines(), [
            "bash scripts/setup.sh && build/placesim simulate --trace gpt3.trace.json.gz --trace-devices dp0+tp0 "
            "--svg gpt3.svg",
            "bash scripts/test.sh"])
        self.assertTrue(self.readme().startswith("# placesim\n\n```bash\n"))

    def test_links_of_the_readme_and_docs_resolve(self):
        broken = []
        for path in [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))):
            for link in markdown_links(path):
                target, _, anchor = link.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
                if not os.path.exists(resolved):
                    broken.append(f"{os.path.relpath(path, REPO)}: {link} (no such file)")
                elif anchor and resolved.endswith(".md") and anchor not in heading_anchors(resolved):
                    broken.append(f"{os.path.relpath(path, REPO)}: {link} (no such heading)")
        self.assertEqual(broken, [], "links that lead nowhere:\n" + "\n".join(broken))


if __name__ == "__main__":
    unittest.main()
