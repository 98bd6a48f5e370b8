"""builder/render/yamlout.py: what it writes reads back (real PyYAML) as exactly what was written."""

from __future__ import annotations

import json

import pytest
import yaml

from builder.config import load
from builder.planning.plan import make_plan
from builder.render import yamlout
from builder.render.pipeline import render
from builder.render.yamlout import to_json, to_yaml
from tests.conftest import REPO
from tests.support.pipeline import NODE_ENV, VM_ENV

EXAMPLES = sorted(p for p in (REPO / "examples").glob("*.env"))


@pytest.mark.parametrize("values", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("action", ["create", "update", "destroy"])
def test_every_rendered_pipeline_reads_back_as_itself(values, action):
    s = load(values)
    config = render(s, make_plan(s, action))
    text = yamlout.dump(config)
    assert yaml.safe_load(text) == json.loads(json.dumps(config))
    assert to_yaml(config) == text


TRICKY = ["", "-", "--", "-c", "yes", "No", "ON", "null", "~", "true", "1.0", "1e3", "0x1F", "012", "1:20",
          "2026-11-23", "900s", "a: b", "a #b", "key:", "#x", "&a", "*a", "!x", "|", ">", "'q'", '"d"', "%x",
          "@x", "`x", "=", "<<", "{a}", "[a]", "a,b", "${_TPU}", "$$W/x", "gs://b/o", "tab\there",
          "bell\x07", "nel\x85", "ls\u2028", "bom\ufeff", "héllo ✓", " lead", "trail ",
          "line\n", "two\nlines", "keep\n\n\n", "strip\nno-end", "  indented\nblock\n", "crlf\r\nx\n",
          "x\n  y\n\n z\n", "\n", "\n\nx\n"]


@pytest.mark.parametrize("text", TRICKY, ids=repr)
def test_tricky_strings_read_back(text):
    doc = {"steps": [{"id": "x", "args": ["-c", text], "env": [text]}], "name": text, "count": 3, "ok": False,
           "empty": [], "none": {}}
    out = yamlout.dump(doc)
    assert yaml.safe_load(out) == doc, out


@pytest.mark.parametrize("doc", [{"f": 1.5}, {"a b": 1}, {1: 2}, {"l": [[1]]}, {"x": None}, [], {}, {"s": "\ud800"}])
def test_what_it_cannot_write_is_refused_and_to_yaml_falls_back(doc):
    with pytest.raises(yamlout.Unsupported):
        yamlout.dump(doc)
    if isinstance(doc, dict) and doc and "s" not in doc:
        assert yaml.safe_load(to_yaml(doc)) == doc


def test_yaml_writes_scripts_as_literal_blocks():
    s = load(NODE_ENV)
    text = to_yaml(render(s, make_plan(s, "create")))
    assert "  - |\n    set -euo pipefail\n" in text
    assert yaml.safe_load(text) == json.loads(to_json(render(s, make_plan(s, "create"))))


def test_render_is_deterministic():
    s = load(VM_ENV)
    assert to_yaml(render(s, make_plan(s, "destroy"))) == to_yaml(render(s, make_plan(s, "destroy")))
