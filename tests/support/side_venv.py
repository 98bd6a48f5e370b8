"""The side venvs' Pythons (``.ci/run`` builds them; README, "Start here"): the real torch_xla
(tests/support/xla.py) and the real TorchTPU (tests/support/torchtpu.py) each live in a venv of
their own, run as a subprocess.

* ``python_path(VARIABLE, FOLDER)``: the Python the variable names, else ``FOLDER/bin/python`` in
  the repository;
* ``imports(python, code, env)``: whether ``python -c code`` exits 0 in ``env`` (cached per process);
* ``required(what, python, code, env, how)``: that Python, once it imports what it must
  (``tests.conftest.require``: a skip on a laptop, a failure in CI)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from tests.conftest import REPO, require


def python_path(variable: str, folder: str) -> Path:
    return Path(os.environ.get(variable) or REPO / folder / "bin" / "python")


@functools.lru_cache(maxsize=None)
def _imports(python: str, code: str, env: tuple[tuple[str, str], ...]) -> bool:
    if not Path(python).is_file():
        return False
    return subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(env)).returncode == 0


def imports(python: Path, code: str, env: dict[str, str]) -> bool:
    return _imports(str(python), code, tuple(sorted(env.items())))


def required(what: str, python: Path, code: str, env: dict[str, str], how: str) -> Path:
    require(what, imports(python, code, env), how)
    return python
