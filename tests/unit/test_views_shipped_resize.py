"""The shipped story, v3-32 → v3-128 in values.env, told by every view: plan (JSON and text), the
rendered pipeline and the guard's rule say make-before-break with the double billing priced, or
break-before-make with no swap (tests/unit/test_views_agree.py checks every file × edit)."""

from __future__ import annotations

from pathlib import Path

from builder.commands.compare import Previous
from builder.config import load_text
from builder.planning.describe import as_text, describe
from builder.planning.plan import make_plan
from builder.render import pipeline
from tests.conftest import rewrite_env

REPO = Path(__file__).resolve().parents[2]


def _load(text: str, name: str):
    return load_text(text, Path(name))


def test_the_shipped_resize_is_made_before_broken_and_priced() -> None:
    """v3-32 → v3-128 in values.env: plan (JSON and text), the rendered pipeline and the guard's
    rule all say make-before-break, with the double billing priced; break-before-make says the
    other story and renders no swap."""
    text = (REPO / "values.env").read_text(encoding="utf-8")
    old = _load(text, "old.env")
    for mode, swaps in (("", True), ("break-before-make", False)):
        new = _load(rewrite_env(text, TPU_ACCELERATOR_TYPE="v3-128", TPU_REPLACE=mode or None), "new.env")
        plan = make_plan(new, "update", tpu=True)
        info = describe(new, plan, previous=Previous(old, "old.env"))
        rep, said = info["replacement"], as_text(info, bold=False)
        rendered = [st["id"] for st in pipeline.render(new, plan)["steps"]]
        assert ("tpu-swap" in rendered and "tpu-release" in rendered) is swaps
        assert rep["replaces"] is True and rep["mode"] == (mode or "make-before-break")
        if swaps:
            assert rendered.index("tpu-apply") < rendered.index("tpu-swap") < rendered.index("tpu-release")
            assert rep["overlap_minutes"] > 0 and rep["overlap_cost"] > 0
            assert "make-before-break" in rep["text"] and "v3-32" in rep["text"] and "v3-128" in rep["text"]
        else:
            assert rep["overlap_minutes"] is None and "break-before-make" in rep["text"]
        assert f"note: {rep['text']}" in said
