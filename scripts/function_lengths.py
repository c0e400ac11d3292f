#!/usr/bin/env python3
"""Functions longer than a limit in placesim's C++ sources (tests excluded): the house keeps every function at 80 lines
or fewer. A function is a brace block opened at namespace scope (or inside a class) after a parameter list; its length
runs from the line that opens its body to the line that closes it. Comments, string and character literals are
blanked before braces are counted.
Usage: scripts/function_lengths.py [--max N] [FOLDER ...]   (default: --max 80 over the source folders)
Exit 1 and one line per function over the limit (length, file:line), longest first."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_FOLDERS = ["workloads", "topology", "strategies", "traces", "sim", "bench"]
PARAMETER_LIST_END = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>, *&]+)?\s*(:\s*.*)?$")
CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\(")


def blank(line):
    """The line without its comment and with its string and character literals emptied."""
    line = re.sub(r'"([^"\\]|\\.)*"', '""', line)
    line = re.sub(r"'([^'\\]|\\.)'", "''", line)
    return re.sub(r"//.*", "", line)


def functions(text):
    """(length in lines, first line) of every function body in `text`."""
    stack, found, context = [], [], ""
    for number, raw in enumerate(text.split("\n"), start=1):
        line = blank(raw)
        for i, ch in enumerate(line):
            if ch == "{":
                before = (context + line[:i]).strip()
                outer = [kind for kind, _ in stack]
                at_scope = all(kind == "namespace" for kind in outer)
                in_class = bool(outer) and outer[-1] == "class" and all(k in ("namespace", "class") for k in outer)
                last = before.split("\n")[-1]
                if re.search(r"\bnamespace\b[^;{]*$", before):
                    kind = "namespace"
                elif (at_scope or in_class) and PARAMETER_LIST_END.search(before) and not CONTROL.search(last):
                    kind = "function"
                elif (at_scope or in_class) and re.search(r"\b(struct|class|union)\b[^;{()]*$", before):
                    kind = "class"
                else:
                    kind = "block"
                stack.append((kind, number))
                context = ""
            elif ch == "}":
                if stack:
                    kind, first = stack.pop()
                    if kind == "function":
                        found.append((number - first + 1, first))
                context = ""
            elif ch == ";":
                context = ""
        tail = line[max(line.rfind("{"), line.rfind("}"), line.rfind(";")) + 1:]
        context = (context + tail + "\n")[-2000:]
    return found


def long_functions(folders, limit):
    out = []
    for folder in folders:
        for where, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(files):
                if name.endswith((".cpp", ".hpp")):
                    path = os.path.join(where, name)
                    with open(path, encoding="utf-8") as f:
                        for length, first in functions(f.read()):
                            if length > limit:
                                out.append((length, os.path.relpath(path, ROOT), first))
    return sorted(out, reverse=True)


def main(argv):
    limit = 80
    if "--max" in argv:
        i = argv.index("--max")
        limit = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    over = long_functions(argv or SOURCE_FOLDERS, limit)
    for length, path, first in over:
        print(f"{length} lines: {path}:{first}")
    if over:
        print(f"{len(over)} function(s) over {limit} lines: split them (scripts/function_lengths.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
