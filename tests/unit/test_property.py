"""Property tests: whatever text values.env holds, ``builder.config.load_text`` returns
Settings or raises our own ConfigError/BadInput, with a one-line message; likewise the guard for
any JSON document. Bounded so the suite stays fast (300 derandomized examples: the same each run; set
TPUBUILD_FUZZ_EXAMPLES=N for a deep random run)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.config import Settings, known_keys, load_text
from builder.facts.errors import BadInput
from builder.planning.guard import evaluate
from tests.conftest import EXAMPLES, SHIPPED

#: TPUBUILD_FUZZ_EXAMPLES=N runs N random (not derandomized) examples per property, for a deep run.
_DEEP = int(os.environ.get("TPUBUILD_FUZZ_EXAMPLES", "0"))
BOUNDED = settings(max_examples=_DEEP or 300, deadline=None, derandomize=not _DEEP, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
PATH = Path("values.env")
SHIPPED_LINES = SHIPPED.read_text().splitlines()
SOURCES = [SHIPPED.read_text(), *(p.read_text() for p in sorted(EXAMPLES.glob("*.env")))]


def check(text: str) -> None:
    try:
        result = load_text(text, PATH)
    except BadInput as exc:  # ConfigError is a BadInput
        msg = str(exc)
        assert msg and "\n" not in msg and "\r" not in msg, repr(msg)
        assert exc.exit_code == 2
        return
    assert isinstance(result, Settings)
    assert result.hosts >= 1 and result.arch in ("node", "vm", "mig")


# Pieces bash users (and their editors) put in values files.
TOKENS = st.sampled_from([
    "=", '"', "'", "#", " ", "\t", "\n", "\r\n", "$", "${", "}", "$(", "`", "\\", "export ", ":-", "\x00",
    "\ufeff", "é", "☃", "..", "/", "gs://", "-", "_", "true", "false", "v3-32", "pytorch-nightly",
])
KEYS = st.sampled_from([*known_keys(), "RED", "NC", "lower_key", "WEIRD.KEY", "", "1ABC"])
VALUES = st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.lists(TOKENS, max_size=8).map("".join)
QUOTES = st.sampled_from(['"', "'", ""])


@st.composite
def assignment(draw: st.DrawFn) -> str:
    q = draw(QUOTES)
    export = draw(st.sampled_from(["", "export "]))
    comment = draw(st.sampled_from(["", " # note", "#x"]))
    return f"{export}{draw(KEYS)}={q}{draw(VALUES)}{q}{comment}"


@BOUNDED
@given(st.text(max_size=400))
def test_arbitrary_text(text: str) -> None:
    check(text)


@BOUNDED
@given(st.lists(assignment() | st.lists(TOKENS, max_size=6).map("".join), max_size=25).map("\n".join))
def test_assignment_shaped_text(text: str) -> None:
    check(text)


@st.composite
def mutated_shipped(draw: st.DrawFn) -> str:
    lines = list(draw(st.sampled_from(SOURCES)).splitlines())
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "value", "insert", "truncate", "swap"]))
        if op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "value" and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            q = draw(QUOTES)
            lines[i] = f"{key}={q}{draw(VALUES)}{q}"
        elif op == "insert":
            pos = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:pos] + draw(TOKENS) + lines[i][pos:]
        elif op == "truncate":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n"


@BOUNDED
@given(mutated_shipped())
def test_mutations_of_the_shipped_files(text: str) -> None:
    check(text)


def test_the_shipped_files_themselves_load() -> None:
    for text in SOURCES:
        assert isinstance(load_text(text, PATH), Settings)


# ---------------------------------------------------------------- the guard, for any JSON

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
ACTIONS = st.lists(st.sampled_from(["create", "delete", "update", "no-op", "read", "forget", "bogus"]), max_size=3)


@st.composite
def plan_like(draw: st.DrawFn) -> object:
    changes = draw(st.lists(st.fixed_dictionaries({
        "address": st.text(max_size=20) | st.none(),
        "mode": st.sampled_from(["managed", "data", "other"]),
        "type": st.sampled_from(["google_filestore_instance", "google_compute_disk", "google_tpu_node",
                                 "google_tpu_v2_vm", "x"]) | st.integers(),
        "change": st.fixed_dictionaries({"actions": ACTIONS | JSON}, optional={
            "replace_paths": st.lists(st.lists(st.text(max_size=5) | st.integers(), max_size=3), max_size=2) | JSON}),
    }, optional={"deposed": st.text(max_size=8)}) | JSON, max_size=4))
    doc = {"format_version": draw(st.sampled_from(["1.2", "1.0", "0.1", "2.0", ""])),
           "resource_changes": changes, "planned_values": {}}
    for key in draw(st.sets(st.sampled_from(["errored", "applyable"]), max_size=2)):
        doc[key] = draw(st.booleans() | JSON)
    return doc


@BOUNDED
@given(plan_like() | JSON, st.sampled_from(["tpu", "filestore", "shared_pd", "mig"]),
       st.sampled_from(["create", "update", "auto", "destroy"]), st.booleans())
def test_guard_never_raises_anything_but_bad_input(doc: object, module: str, action: str, allow: bool) -> None:
    json.dumps(doc)  # a document json.loads could have produced
    try:
        decision = evaluate(doc, module, action, allow_data_loss=allow)
    except BadInput as exc:
        assert "\n" not in str(exc)
        return
    if not decision.proceed:
        assert decision.refusal and "\n" not in decision.refusal
