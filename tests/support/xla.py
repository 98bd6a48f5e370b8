"""The real torch_xla: its own venv (``.venv-xla``, created by ``.ci/run``: torch 2.9.0 +
torch_xla 2.9.0 + fairseq-fixed 0.12.3.1 compiled against that torch), run as a subprocess with
``PJRT_DEVICE=CPU``. ``TPUBUILD_XLA_PYTHON`` names its Python (default: ``.venv-xla/bin/python``
in the repository). :func:`xla_python` requires it (a skip on a laptop, a failure in CI)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from tests.conftest import REPO, require

HOW = ("python3 -m venv .venv-xla && .venv-xla/bin/pip install torch==2.9.0 torch_xla==2.9.0 cython numpy "
       "&& .venv-xla/bin/pip install --no-build-isolation fairseq-fixed==0.12.3.1 (what .ci/run does); "
       "or set TPUBUILD_XLA_PYTHON")


def xla_python_path() -> Path:
    return Path(os.environ.get("TPUBUILD_XLA_PYTHON") or REPO / ".venv-xla/bin/python")


@functools.lru_cache(maxsize=None)
def _works(python: str, modules: tuple[str, ...]) -> bool:
    if not Path(python).is_file():
        return False
    code = "; ".join(f"import {m}" for m in modules)
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PJRT_DEVICE": "CPU"})
    return r.returncode == 0


def xla_python(*modules: str) -> Path:
    """The torch_xla venv's Python, where ``import torch_xla`` (and ``modules``) work."""
    python = xla_python_path()
    require("torch_xla 2.9 (venv .venv-xla)", _works(str(python), ("torch_xla", *modules)), HOW)
    return python


def xla_env(python: Path, **extra: str) -> dict[str, str]:
    """This process's environment with the venv's bin first on PATH and PJRT on CPU."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PJRT_DEVICE"] = "CPU"
    env.update(extra)
    return env
