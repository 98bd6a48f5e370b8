"""No Python file of the project is over 400 lines (the developer guide's rule): a file that grows
past it is split where its parts are separate ideas (a helper module, a second test file), not
squeezed."""

from __future__ import annotations

import subprocess

from tests.conftest import REPO

LIMIT = 400


def python_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.py"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return [p for p in out.splitlines() if (REPO / p).is_file()]


def test_the_scan_sees_the_project() -> None:
    files = python_files()
    assert "builder/cli.py" in files and "tests/unit/test_file_sizes.py" in files, files[:5]


def test_no_python_file_is_over_400_lines() -> None:
    over = {}
    for path in python_files():
        with open(REPO / path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > LIMIT:
            over[path] = n
    assert not over, f"over {LIMIT} lines: {over}; split the file where its parts are separate ideas"
