"""A module's facts live on its catalogue entry (builder/catalogue/modules.py): no code elsewhere branches on
a plan module's name.

Read with ``ast`` from every file under builder/: a comparison of a plan module's name
(``module == "filestore"``, ``m != "tpu"``, ``m in ("tpu", "mig")``, ``"shared_pd" in modules``),
a question to a plan about one named module (``plan.applies("shared_pd")``, ``.destroys``) or a
dict keyed by plan module names only (``{"filestore": ..., "shared_pd": ...}``) is a branch on a
module; the fact it decides belongs on the entry (a field of ``ModuleSpec``) and the
code loops over entries. Comparing an *architecture* (``settings.arch == "mig"``: ``mig`` is
also an architecture's name) is not a module branch.
"""

from __future__ import annotations

import ast
from pathlib import Path

from builder.catalogue.modules import NAMES
from tests.conftest import REPO

BUILDER = REPO / "builder"

#: Where module names may be compared: the catalogue itself.
ALLOWED: frozenset[str] = frozenset({"builder/catalogue/modules.py"})


def _names(node: ast.AST) -> list[str]:
    """The plan module names a comparison operand spells: a string, or a tuple/list/set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [n for e in node.elts for n in _names(e)]
    return []


def _is_arch(node: ast.AST) -> bool:
    """``arch``, ``declared_arch``, ``x.arch``, ``x["arch"]`` or ``x.get("arch")``: an
    architecture, not a module."""
    if isinstance(node, ast.Name):
        return node.id == "arch" or node.id.endswith("_arch")
    if isinstance(node, ast.Attribute):
        return node.attr == "arch"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "arch"
    if isinstance(node, ast.Call):
        return any(isinstance(a, ast.Constant) and a.value == "arch" for a in node.args)
    return False


def branches(source: str) -> list[tuple[int, str]]:
    """(line, source text) of every branch on a plan module's name in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names(o) for o in operands) and not any(_is_arch(o) for o in operands):
                out.append((node.lineno, ast.get_source_segment(source, node) or ""))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("applies", "destroys") and node.args and _names(node.args[0])):
            out.append((node.lineno, ast.get_source_segment(source, node) or ""))
        elif isinstance(node, ast.Dict) and len(node.keys) >= 2:
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            if all(k in NAMES for k in keys):
                out.append((node.lineno, ast.get_source_segment(source, node) or ""))
    return out


def found() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted(BUILDER.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel not in ALLOWED and (hits := branches(path.read_text())):
            out[rel] = hits
    return out


def test_no_branch_on_a_module_name() -> None:
    hits = found()
    assert not hits, "branches on a plan module's name; put the fact on its catalogue entry:\n" + "\n".join(
        f"{f}:{line}: {text}" for f, found_here in hits.items() for line, text in found_here)


def test_the_reader_sees_each_form() -> None:
    src = ('if module == "filestore": pass\nif "tpu" != m: pass\nif m in ("tpu", "mig"): pass\n'
           'if "shared_pd" in plan.modules: pass\nX = {"filestore": 1, "shared_pd": 2}\n'
           'if s.arch == "mig": pass\nif values["arch"] == "mig": pass\nY = {"gce": 1, "filestore": 2}\n'
           'if plan.applies("shared_pd"): pass\nif plan.applies(m): pass\n'
           'if dict.get(values, "arch") == "mig": pass\nif declared_arch == "mig": pass\n')
    assert sorted(line for line, _ in branches(src)) == [1, 2, 3, 4, 5, 9]
