"""benchmarks/tool_overhead.py runs (quick: tpubuild alone, no network) and prints what it says it
prints: the per-step costs with their source, one row per example x action with before, after and
their ratio, the rendered tool steps, and a total. Timing is never asserted, only the shape and
what follows from the rendered pipelines: no install after, one per tool step before."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_tool_overhead_prints_before_and_after_for_every_pipeline() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks/tool_overhead.py"), "--quick", "--runs", "1",
                           "--format", "json"], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    examples = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "examples").glob("*.env")) + ["values.env"]
    assert sorted({r["values"] for r in data["rows"]}) == sorted(examples)
    assert {(r["values"], r["action"]) for r in data["rows"]} == {(v, a) for v in examples for a in ("create", "update", "destroy")}
    assert data["quick"] is True
    assert "arXiv:2602.15214" in data["start_source"] or data["start_source"].startswith("measured")
    # every figure says what it is: measured here, or a constant with its source; the pull is named as left out
    assert data["start_source"].startswith(("measured", "constant, documented"))
    assert data["lookup_source"].startswith("constant, assumed") and "image pull" in data["not_counted"]
    for key in ("start_s", "install_s", "wheel_s"):
        assert data["costs"][key] > 0
    for r in data["rows"]:
        assert r["tool_steps"] >= 2, r  # at least one guard and finalize
        assert r["installs_before"] == r["tool_steps"] and r["installs_after"] == 0
        assert r["before_s"] > r["after_s"] > 0 and r["ratio"] == round(r["before_s"] / r["after_s"], 2)


def test_tool_overhead_prices_each_pipeline_from_its_rendered_steps() -> None:
    """The rows from given costs (no measuring): before = the wheel step plus a start and an
    install per tool step; after = the image step plus a start per tool step."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import tool_overhead
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    rows = tool_overhead.rows({"start_s": 1.0, "install_s": 10.0, "wheel_s": 30.0})
    for r in rows:
        # before: wheel step (start + wheel) + every tool step (start + install); after: image step + starts
        assert r["before_s"] == round(31.0 + 11.0 * r["tool_steps"], 2)
        assert r["after_s"] == round(1.0 + tool_overhead.LOOKUP_S + r["tool_steps"], 2)
    assert len(rows) == 3 * (len(list((REPO / "examples").glob("*.env"))) + 1)
    assert all(re.fullmatch(r"(examples/[\w.-]+|values)\.env", r["values"]) for r in rows)
