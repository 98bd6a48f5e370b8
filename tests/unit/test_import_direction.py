"""The layers of builder/ (docs/architecture.md draws them): each module belongs to one layer
and imports only from its own layer and the layers below it, with no circle anywhere, and no
module imports another file's private name.

Every import counts: those at the top of a module, those inside functions and those under
``TYPE_CHECKING`` (an import hidden by laziness is still an import: that is how a 17-module
circle once closed through imports made inside functions). Imports inside functions are allowed
only for the heavy optional libraries in :data:`DEFERRED` (kept off the start-up of ``plan``,
``render`` and ``validate``: tests/unit/test_pipeline_cli.py), for a command module that
another command loads only on the path that needs it (:data:`ON_DEMAND`), and for the cloud edge
that a command loads on the path that talks to Google (:data:`EDGE`).

Read from the source with ``ast``, so nothing is imported to check.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

from tests.conftest import REPO

BUILDER = REPO / "builder"

#: The layers, bottom first: a module is in the layer of the longest name that it is or that
#: it is under (``builder.config`` holds ``builder.config.keys``). A module imports only from its
#: own layer and the ones before it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("facts", ("builder", "builder.facts")),
    ("config", ("builder.config",)),
    ("catalogue", ("builder.catalogue",)),
    ("inputs", ("builder.inputs",)),
    ("planning", ("builder.planning",)),
    ("render", ("builder.render",)),
    ("cloud", ("builder.cloud",)),
    ("commands", ("builder.commands",)),
    ("cli", ("builder.cli", "builder.__main__")),
)

#: Libraries a module may import inside a function (heavy, optional, or kept off start-up).
DEFERRED: tuple[str, ...] = ("google", "grpc", "jinja2", "yaml", "requests", "hcl2", "difflib", "dataclasses",
                             "hashlib")
#: builder modules that another module may load inside a function: a command's module is loaded
#: when its verb (or the path of a verb that needs it) runs, so ``render`` loads no other command.
ON_DEMAND: tuple[str, ...] = ("builder.commands",)
#: The cloud edge (builder/cloud/, the Google clients' home) that a command module may load inside a
#: function, on the path that talks to Google: without credentials ``validate``, ``plan`` and
#: ``render`` load none of it (the budgets of tests/unit/test_import_budget.py).
EDGE: tuple[str, ...] = ("builder.cloud",)


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(BUILDER.rglob("*.py"))}


def imports(source: str, module: str, *, package: bool = False) -> list[tuple[int, str, str, bool]]:
    """(line, absolute module, imported name or '', inside a function) of every import in
    ``source``, the source of ``module`` (``package``: it is an ``__init__``; needed to resolve
    relative imports). ``from builder import cloud`` yields ``builder`` with the name ``cloud``."""
    base_pkg = module if package else module.rsplit(".", 1)[0]
    tree = ast.parse(source)
    inside = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f)}
    out: list[tuple[int, str, str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name, "", id(node) in inside) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = base_pkg.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.extend((node.lineno, base, a.name, id(node) in inside) for a in node.names)
    return out


def target(base: str, name: str, known: dict[str, Path]) -> str:
    """The builder module an import reaches: ``from builder import plan`` reaches builder.planning.plan,
    ``from builder.planning.plan import make_plan`` builder.planning.plan."""
    return f"{base}.{name}" if f"{base}.{name}" in known else base


def private_uses(source: str, module: str, known: dict[str, Path], *, package: bool = False) -> list[tuple[int, str]]:
    """(line, ``alias._name``) where ``source`` reads a private name of another builder module it
    imported as a module (``from builder import pipeline`` then ``pipeline._environment``)."""
    aliases: dict[str, str] = {}
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for line, base, name, _ in imports(ast.unparse(node), module, package=package):
                if f"{base}.{name}" in known:
                    alias = next(a.asname or a.name for a in node.names if a.name == name)
                    aliases[alias] = f"{base}.{name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in known:
                    aliases[a.asname] = a.name
    return [(n.lineno, f"{n.value.id}.{n.attr}") for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in aliases
            and n.attr.startswith("_") and not n.attr.startswith("__") and aliases[n.value.id] != module]


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for i, (_, names) in enumerate(LAYERS):
        for n in names:  # "builder" (the package's __init__) holds only itself
            if (module == n or (n != "builder" and _within(module, (n,)))) and (best is None or len(n) > best[1]):
                best = (i, len(n))
    return None if best is None else best[0]


@lru_cache(maxsize=1)
def graph() -> tuple[dict[str, set[str]], list[str], list[str], list[str]]:
    """The import graph of builder/ and the upward, deferred and private imports found."""
    known = modules()
    edges: dict[str, set[str]] = {m: set() for m in known}
    upward, deferred, private = [], [], []
    for mod, path in known.items():
        rel = path.relative_to(REPO).as_posix()
        for line, base, name, lazy in imports(path.read_text(encoding="utf-8"), mod, package=path.name == "__init__.py"):
            if not _within(base, ("builder",)):
                if lazy and not _within(base, DEFERRED):
                    deferred.append(f"{rel}:{line}: imports {base} inside a function")
                continue
            to = target(base, name, known)
            if to == mod:
                continue
            edges[mod].add(to)
            if lazy and not (_within(to, (*ON_DEMAND, *EDGE)) and _within(mod, ON_DEMAND)):
                deferred.append(f"{rel}:{line}: imports {to} inside a function")
            if name.startswith("_") and not name.startswith("__") and to == base:
                private.append(f"{rel}:{line}: imports {base}'s private {name}")
            low, high = layer_of(to), layer_of(mod)
            if low is not None and high is not None and low > high:
                upward.append(f"{rel}:{line}: {LAYERS[high][0]} imports {to} ({LAYERS[low][0]})")
        private.extend(f"{rel}:{line}: reads {what}, another module's private name"
                       for line, what in private_uses(path.read_text(encoding="utf-8"), mod, known,
                                                      package=path.name == "__init__.py"))
    return edges, upward, deferred, private


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_every_module_is_in_a_layer() -> None:
    assert [m for m in modules() if layer_of(m) is None] == [], "add it to LAYERS (docs/architecture.md)"
    listed = [n for _, names in LAYERS for n in names]
    assert [n for n in listed if n not in modules() and not any(_within(m, (n,)) for m in modules())] == [], \
        "LAYERS names a module that is gone"


def test_no_upward_import() -> None:
    assert graph()[1] == []


def test_no_circle() -> None:
    assert circles(graph()[0]) == []


def test_imports_inside_functions_only_for_heavy_libraries() -> None:
    assert graph()[2] == []


def test_no_private_name_is_imported_across_files() -> None:
    assert graph()[3] == []


@pytest.mark.parametrize("source, module, expected", [
    ("def f():\n    from builder.commands import load_settings\n", "builder.cloud.x",
     [(2, "builder.commands", "load_settings", True)]),
    ("import builder.cli\n", "builder.cloud.x", [(1, "builder.cli", "", False)]),
    ("from builder import cli\n", "builder.cloud.x", [(1, "builder", "cli", False)]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from builder.commands.submit import Prepared\n",
     "builder.cloud.x", [(1, "typing", "TYPE_CHECKING", False), (3, "builder.commands.submit", "Prepared", False)]),
    ("from ..commands import submit\n", "builder.cloud.x", [(1, "builder.commands", "submit", False)]),
    ("from . import lock\n", "builder.cloud.x", [(1, "builder.cloud", "lock", False)]),
    ("from . import lock\n", "builder.cloud", [(1, "builder.cloud", "lock", False)]),
])
def test_the_scan_sees_lazy_relative_and_package_imports(source: str, module: str, expected: list) -> None:
    """A lazy import inside a function, ``from builder import cli``, a TYPE_CHECKING import and
    relative imports (from a module and from a package's ``__init__``) are all seen."""
    assert imports(source, module, package=module == "builder.cloud") == expected


def test_the_rules_catch_a_circle_an_upward_and_a_private_import() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    top, bottom = LAYERS[-1][1][0], LAYERS[0][1][1]
    assert layer_of(top) > layer_of(bottom)
    assert layer_of("builder.config.candidates") == layer_of("builder.config")  # a new file joins its folder's layer
    assert imports("from builder.render.pipeline import _environment\n", "builder.inputs.recovery")[0][2] == "_environment"
    known = modules()
    assert private_uses("from builder.cloud import lock\nlock._held\n", "builder.commands.x", known) == \
        [(2, "lock._held")]
    assert private_uses("from builder.cloud import lock\nlock.acquire\n", "builder.commands.x", known) == []
    assert layer_of("builder.new_top_level_module") is None  # "builder" is the package's __init__ only
