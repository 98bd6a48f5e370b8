"""The real torch_xla: its own venv (``.venv-xla``, created by ``.ci/run``: torch 2.9.0 +
torch_xla 2.9.0 + fairseq-fixed 0.12.3.1 compiled against that torch), run as a subprocess with
``PJRT_DEVICE=CPU``. ``TPUBUILD_XLA_PYTHON`` names its Python (default: ``.venv-xla/bin/python``
in the repository). :func:`xla_python` requires it (a skip on a laptop, a failure in CI)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support import side_venv

HOW = ("python3 -m venv .venv-xla && .venv-xla/bin/pip install torch==2.9.0 torch_xla==2.9.0 cython numpy "
       "&& .venv-xla/bin/pip install --no-build-isolation fairseq-fixed==0.12.3.1 (what .ci/run does); "
       "or set TPUBUILD_XLA_PYTHON")


def xla_python_path() -> Path:
    return side_venv.python_path("TPUBUILD_XLA_PYTHON", ".venv-xla")


def xla_python(*modules: str) -> Path:
    """The torch_xla venv's Python, where ``import torch_xla`` (and ``modules``) work."""
    code = "; ".join(f"import {m}" for m in ("torch_xla", *modules))
    return side_venv.required("torch_xla 2.9 (venv .venv-xla)", xla_python_path(), code,
                              {**os.environ, "PJRT_DEVICE": "CPU"}, HOW)


def xla_env(python: Path, **extra: str) -> dict[str, str]:
    """This process's environment with the venv's bin first on PATH and PJRT on CPU."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PJRT_DEVICE"] = "CPU"
    env.update(extra)
    return env
