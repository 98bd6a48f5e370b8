"""The gcloud commands shown in README.md, docs/ and the module and model READMEs, parsed by the
REAL gcloud offline (``tests/support/gcloud.py``): fenced blocks and inline code are shlex-split,
placeholders (``<env>``) filled. The lines the steps and host commands emit:
tests/integration/test_gcloud_lines.py."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "modules").glob("*/README.md")),
        *sorted((REPO / "models").glob("*/README.md"))]
_PLACEHOLDER = re.compile(r"<([^<>]+)>")


def doc_commands() -> list[tuple[str, list[str]]]:
    """``gcloud ...`` commands in fenced blocks and inline code of the documentation."""
    found = []
    for path in DOCS:
        text = path.read_text()
        # fences paired in order (a ```text block's closing fence must not open a command block)
        chunks = [body for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S)
                  if lang in ("", "bash", "sh", "console", "shell")]
        lines = [ln for chunk in chunks for ln in chunk.replace("\\\n", " ").splitlines()]
        # inline code: a complete command to copy (with --zone/--project), not a
        # mention of a flag such as `gcloud compute ssh --tunnel-through-iap`
        lines += [c for c in re.findall(r"`(gcloud [^`]+)`", text) if "--zone" in c or "--project" in c]
        for line in lines:
            line = line.strip().removeprefix("$ ")
            if not line.startswith("gcloud ") or "..." in line or "…" in line:
                continue
            line = re.sub(r"\$\{?([A-Z_]+)\}?", lambda m: m.group(1).lower(), line)
            line = _PLACEHOLDER.sub(lambda m: re.sub(r"[^a-z0-9-]", "-", m.group(1).lower()), line)
            line = line.split(" #", 1)[0].split(" | ", 1)[0]  # the gcloud part of a pipeline
            try:
                words = shlex.split(line)
            except ValueError:
                continue
            found.append((f"{path.relative_to(REPO)}: {line[:80]}", words))
    return found


DOC_COMMANDS = doc_commands()


def test_documentation_has_gcloud_commands():
    assert len(DOC_COMMANDS) >= 3, DOC_COMMANDS


@pytest.mark.parametrize("where,words", DOC_COMMANDS, ids=[w for w, _ in DOC_COMMANDS])
def test_documented_gcloud_commands_parse(gcloud, where, words):
    result = gcloud.parse(words)
    assert result.ok, f"{where}\n{result.why()}"
