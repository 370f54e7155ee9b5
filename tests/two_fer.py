"""The exercism-style two-fer exercise the coding-task tests share: a stub, its tests, a solution,
and `make_exercise` writing it (with a folder the loader must skip) under `root/practice`."""

from __future__ import annotations

import json
from pathlib import Path

STUB = "def two_fer(name='you'):\n    pass\n"
TESTS = (
    "import unittest\nfrom two_fer import two_fer\n\n"
    "class TwoFerTest(unittest.TestCase):\n"
    "    def test_no_name(self):\n        self.assertEqual(two_fer(), 'One for you, one for me.')\n"
    "    def test_name(self):\n        self.assertEqual(two_fer('Bo'), 'One for Bo, one for me.')\n"
)
SOLUTION = "def two_fer(name='you'):\n    return f'One for {name}, one for me.'\n"


def make_exercise(root: Path) -> Path:
    ex = root / "practice" / "two-fer"
    (ex / ".docs").mkdir(parents=True)
    (ex / ".meta").mkdir()
    (ex / "two_fer.py").write_text(STUB)
    (ex / "two_fer_test.py").write_text(TESTS)
    (ex / ".docs" / "instructions.md").write_text("# Two-fer\nSay one for X, one for me.\n")
    (ex / ".meta" / "example.py").write_text(SOLUTION)
    files = {"solution": ["two_fer.py"], "test": ["two_fer_test.py"], "example": [".meta/example.py"]}
    (ex / ".meta" / "config.json").write_text(json.dumps({"files": files}))
    (root / "practice" / "not-an-exercise").mkdir()
    return root / "practice"
