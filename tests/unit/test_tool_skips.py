"""A missing tool is skipped only through ``tests.conftest.require``, which CI (TPUBUILD_REQUIRE_ALL=1)
turns into a failure: a test that skips on its own (``pytest.skip("... not on PATH")``,
``importorskip``) would pass CI without ever running what it claims to check."""

from __future__ import annotations

import re

from tests.conftest import REPO

#: What a skip for a missing tool says, and the call that skips on a missing import.
TOOL_SKIP = re.compile(r"pytest\.skip\([^)]*(not on PATH|not installed|no Docker|daemon|is missing)|importorskip\(")


def test_no_test_skips_a_missing_tool_outside_require() -> None:
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        if path.name == "conftest.py" and path.parent == REPO / "tests" or path == REPO / "tests/unit/test_tool_skips.py":
            continue  # require() itself, and this test's pattern
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if TOOL_SKIP.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "skip a missing tool with tests.conftest.require(...):\n" + "\n".join(offenders)
