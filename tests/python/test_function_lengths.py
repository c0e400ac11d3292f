"""scripts/function_lengths.py finds the functions over its limit and nothing else. Run from the repository root:
/usr/bin/python3 -m unittest tests/python/test_function_lengths.py"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))
import function_lengths  # noqa: E402


def function(name, body_lines, indent=""):
    """A function whose body spans body_lines + 2 lines (its opening and closing brace lines included)."""
    body = "".join(f"{indent}  x += {k};  // {{ a brace in a comment\n" for k in range(body_lines))
    return f"{indent}int {name}(int x) {{\n{body}{indent}  return x;\n{indent}}}\n"


class FunctionLengths(unittest.TestCase):
    def test_lengths_counted_from_the_opening_to_the_closing_brace(self):
        # 77 statements + "return" + the two brace lines = 80 lines; one more statement makes 81.
        text = "namespace placesim {\n" + function("short_one", 77) + function("long_one", 78) + "}\n"
        found = function_lengths.functions(text)
        self.assertEqual(sorted(length for length, _ in found), [80, 81])

    def test_blocks_inside_a_function_and_strings_with_braces_do_not_count_apart(self):
        text = ('void f() {\n  if (a) {\n    s = "}{";\n  }\n  for (;;) {\n  }\n}\n'
                "struct S {\n  int g() const {\n    return 1;\n  }\n};\n")
        self.assertEqual(sorted(function_lengths.functions(text)), [(3, 9), (7, 1)])

    def test_the_source_tree_has_no_function_over_80_lines(self):
        self.assertEqual(function_lengths.long_functions(function_lengths.SOURCE_FOLDERS, 80), [])


if __name__ == "__main__":
    unittest.main()
