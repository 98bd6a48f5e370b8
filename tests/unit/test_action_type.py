"""The build action is one type from the CLI to the guard (builder/facts/actions.py): no code in
builder/ compares an action with an action's name written as a string (``plan.action ==
"destroy"``); it compares with :class:`~builder.facts.actions.Action` (or auto's
:class:`~builder.facts.actions.Verdict`). Read with ``ast``: a comparison one side of which is named
``action``/``decision`` (a name, an attribute or a subscript key) and the other a string literal
that is an action's name fails."""

from __future__ import annotations

import ast

import pytest

from builder.facts.actions import Action, Verdict
from tests.conftest import REPO

NAMES = frozenset(a.value for a in Action) | frozenset(v.value for v in Verdict)
#: What holds a build action (or auto's verdict) in builder/.
HOLDERS = frozenset({"action", "decision"})


def _holder(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        return _holder(node.args[0])
    if isinstance(node, ast.Name):
        return node.id in HOLDERS
    if isinstance(node, ast.Attribute):
        return node.attr in HOLDERS
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value in HOLDERS
    return False


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for e in node.elts for v in _names(e)]
    return []


def string_comparisons(source: str) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_holder(s) for s in sides) and any(v in NAMES for s in sides for v in _names(s)):
                out.append((node.lineno, ast.unparse(node)))
    return out


def test_no_action_is_compared_with_a_string_in_builder() -> None:
    found = [f"{p.relative_to(REPO)}:{line}: {text}" for p in sorted((REPO / "builder").rglob("*.py"))
             for line, text in string_comparisons(p.read_text(encoding="utf-8"))]
    assert found == [], "compare with builder.facts.actions.Action (or Verdict), not a name in a string:\n" + "\n".join(found)


@pytest.mark.parametrize("source, caught", [
    ('plan.action == "destroy"', True),
    ('action in ("create", "update")', True),
    ('str(args.action) not in ("create", "auto")', True),
    ('r["action"] == "update"', True),
    ('auto_info["decision"] == "none"', True),
    ("plan.action is Action.DESTROY", False),
    ('op.op == "destroy"', False),  # an operation's kind, not a build action
    ('"delete" in self.actions', False),  # Terraform's change actions
])
def test_the_scan(source: str, caught: bool) -> None:
    assert bool(string_comparisons(source)) is caught


def test_the_action_reaches_the_plan_the_diff_and_the_guard_as_its_type() -> None:
    from builder.planning.guard import evaluate

    decision = evaluate({"format_version": "1.2", "resource_changes": []}, "tpu", "destroy")
    assert decision.action is Action.DESTROY
    assert Verdict.NOTHING.action is None and Verdict.UPDATE.action is Action.UPDATE
