"""builder/facts/capacity_errors.py against the real error texts kept in tests/data/capacity_errors/
(SOURCES.md names where each was read): a stockout or a quota refusal is "no capacity" (the
failover tries the next candidate), a permission error is not (the build stops); the shell's
grep -E reads the same patterns the same way."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from builder.facts.capacity_errors import NO_CAPACITY, classify, ere
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "data" / "capacity_errors"
ROWS = re.findall(r"^\| (\S+\.txt) \| (\w+)", (FIXTURES / "SOURCES.md").read_text(), re.M)
EXPECTED = {"stockout": "stockout", "quota": "quota", "other": "other"}


def test_every_fixture_has_a_source_row():
    assert sorted(name for name, _ in ROWS) == sorted(p.name for p in FIXTURES.glob("*.txt"))


@pytest.mark.parametrize("name,kind", ROWS)
def test_each_real_text_is_classified(name: str, kind: str) -> None:
    assert classify((FIXTURES / name).read_text()) == EXPECTED[kind], name


@pytest.mark.parametrize("name,kind", ROWS)
def test_grep_reads_the_patterns_as_python_does(name: str, kind: str) -> None:
    grep = shutil.which("busybox") or shutil.which("grep")
    assert grep
    argv = [grep, "grep", "-Eq", ere()] if grep.endswith("busybox") else [grep, "-Eq", ere()]
    found = subprocess.run([*argv, str(FIXTURES / name)]).returncode == 0
    assert found == (kind != "other"), name


def test_every_pattern_is_matched_by_a_real_text():
    texts = [p.read_text() for p in FIXTURES.glob("*.txt")]
    unused = [p for _k, p in NO_CAPACITY if not any(re.search(p, t) for t in texts)]
    assert unused == [], unused
