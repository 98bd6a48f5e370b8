"""Loading a golden corpus's ``generate.py`` and comparing a fresh rendering with what it holds
(``tests/unit/test_golden.py``, ``tests/unit/test_golden_launch.py``)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.conftest import REPO


def load_generator(folder: str) -> ModuleType:
    """``tests/data/<folder>/generate.py`` as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location(f"{folder}_generate", REPO / "tests/data" / folder / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded(golden: ModuleType, path: str) -> dict[str, Any]:
    """What the golden file of ``path`` holds: case name → its ``rc``, ``stdout`` and ``stderr``."""
    return json.loads(golden.golden_path(path).read_text())


def every_recording(golden: ModuleType) -> Iterator[tuple[str, dict[str, Any]]]:
    """(values file, what its golden file holds) for every values file ``golden`` covers."""
    for path in golden.FILES:
        yield path, recorded(golden, path)


def assert_matches_golden(golden: ModuleType, path: str, tmp_path: Path) -> None:
    """``golden.render_all(path)`` now is exactly what the golden file for ``path`` holds."""
    expected = recorded(golden, path)
    actual = golden.render_all(path, tmp_path)
    assert sorted(actual) == sorted(expected), "the set of cases changed; regenerate on purpose"
    differ = [name for name in expected if actual[name] != expected[name]]
    for name in differ[:3]:  # show the first differences in full: pytest's diff of the texts
        assert actual[name] == expected[name], f"{path}: {name}"
    assert not differ
