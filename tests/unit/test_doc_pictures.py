"""The pipeline pictures in docs/ are what ``tpubuild render --format mermaid`` draws today
(tools/doc_pictures.py; ``python tools/doc_pictures.py --write`` redraws them), and a Mermaid
diagram in docs/ is either generated or says why it is drawn by hand."""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("doc_pictures", REPO / "tools/doc_pictures.py")
assert _spec and _spec.loader
doc_pictures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(doc_pictures)

PICTURES = [(doc.name, m.group("args"), m.group("body")) for doc in sorted((REPO / "docs").glob("*.md"))
            for m in doc_pictures.pictures(doc.read_text())]


def test_the_docs_hold_generated_pictures_where_they_show_the_pipeline() -> None:
    assert {doc for doc, _args, _body in PICTURES} >= {"pipeline.md", "capacity.md", "recovery.md"}


@pytest.mark.parametrize(("doc", "args", "body"), PICTURES, ids=[f"{d}:{a}" for d, a, _b in PICTURES])
def test_every_generated_picture_is_fresh(doc: str, args: str, body: str) -> None:
    assert body == doc_pictures.render(args), f"docs/{doc}: stale picture: run python tools/doc_pictures.py --write"


def test_a_picture_drawn_by_hand_says_so() -> None:
    for doc in sorted((REPO / "docs").glob("*.md")):
        text = doc.read_text()
        generated = {m.start(0) + len(m.group(1)) - len("```mermaid\n") for m in doc_pictures.pictures(text)}
        for m in re.finditer(r"^```mermaid\n", text, re.M):
            if m.start() not in generated:
                before = " ".join(text[max(0, m.start() - 400):m.start()].split())
                assert "drawn by hand" in before, f"{doc.name}: a hand-drawn picture should say why it is not generated"
