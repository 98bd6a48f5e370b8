"""The direction of imports in builder/: the CLI and the commands sit on top, the Google
edge (builder/cloud/) under them, the pure core at the bottom.

* nothing under builder/cloud/ imports ``builder.commands`` or ``builder.cli``;
* no core module (builder/*.py but the CLI, and builder/config/) imports ``builder.cloud``,
  ``builder.commands`` or ``builder.cli``.

Every import counts, also the lazy ones inside functions and those under ``TYPE_CHECKING``: an
import hidden by laziness is still an import (that is how builder/cloud/commands.py imported back
up into builder.commands). Read from the source with ``ast``, so nothing is imported to check.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

BUILDER = REPO / "builder"

#: Known violations that a change in progress removes, each (file, imported module). Remove
#: an entry once that change lands; a stale entry fails test_no_stale_exemption.
PENDING: frozenset[tuple[str, str]] = frozenset({
})

#: The top of the stack: what may import anything.
TOP = ("builder/cli.py", "builder/__main__.py")


def imported(source: str, module: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, the source of ``module``
    (dotted; needed to resolve relative imports). ``from builder import cloud`` counts as
    ``builder.cloud``: a name imported from a package may be its submodule."""
    package = module.rsplit(".", 1)[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.append((node.lineno, base))
            out.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return out


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        module = rel[: -len(".py")].replace("/", ".")  # an __init__ is resolved from its package, as Python does
        for line, name in imported(path.read_text(encoding="utf-8"), module):
            if _within(name, forbidden) and not any(rel == f and _within(name, (m,)) for f, m in PENDING):
                out.append(f"{rel}:{line}: imports {name}")
    return sorted(set(out))


def cloud_files() -> list[Path]:
    return sorted((BUILDER / "cloud").rglob("*.py"))


def core_files() -> list[Path]:
    top = {REPO / t for t in TOP}
    return sorted([p for p in BUILDER.glob("*.py") if p not in top] + list((BUILDER / "config").rglob("*.py")))


def test_cloud_never_imports_the_commands_or_the_cli() -> None:
    assert cloud_files(), "builder/cloud/ has no modules?"
    assert violations(cloud_files(), ("builder.commands", "builder.cli")) == []


def test_core_imports_neither_cloud_nor_commands() -> None:
    names = {p.name for p in core_files()}
    # the core stages of docs/architecture.md are all scanned (a rename must not silently drop one)
    assert {"plan.py", "pipeline.py", "auto.py", "diff.py", "tfvars.py", "guard.py", "topology.py", "applied.py",
            "files.py", "loader.py", "settings.py", "validate.py"} <= names
    assert violations(core_files(), ("builder.cloud", "builder.commands", "builder.cli")) == []


def test_no_stale_exemption() -> None:
    for rel, module in PENDING:
        path = REPO / rel
        if not path.is_file():
            continue
        found = [n for _, n in imported(path.read_text(encoding="utf-8"), rel[:-3].replace("/", "."))]
        if not any(_within(n, (module,)) for n in found):
            pytest.fail(f"{rel} no longer imports {module}: remove it from PENDING in {__file__}")


@pytest.mark.parametrize("source, caught", [
    ("def f():\n    from builder.commands import load_settings\n", "builder.commands"),
    ("import builder.cli\n", "builder.cli"),
    ("from builder import cli\n", "builder.cli"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from builder.commands.submit import Prepared\n",
     "builder.commands.submit"),
    ("from ..commands import submit\n", "builder.commands"),
    ("from . import lock\n", None),
    ("from builder.config import Settings\n", None),
])
def test_the_scan_sees_lazy_relative_and_package_imports(source: str, caught: str | None) -> None:
    """The scan itself: a lazy import inside a function, ``from builder import cli``, a
    TYPE_CHECKING import and a relative import are all seen (as from builder/cloud/x.py)."""
    names = [n for _, n in imported(source, "builder.cloud.x")]
    bad = [n for n in names if _within(n, ("builder.commands", "builder.cli"))]
    assert (caught in bad) if caught else not bad, names
