"""The real TorchTPU: its own venv (``.venv-torchtpu``, created by ``.ci/run``: torch 2.13.0 CPU from
the local wheel, torch-tpu 0.2.0 and libtpu, which torch-tpu needs even to import), run as a
subprocess. ``TPUBUILD_TORCHTPU_PYTHON`` names its Python (default: ``.venv-torchtpu/bin/python``
in the repository). :func:`torchtpu_python` requires it (a skip on a laptop, a failure in CI)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support import side_venv

HOW = ("python3 -m venv .venv-torchtpu && .venv-torchtpu/bin/pip install torch==2.13.0 torch-tpu==0.2.0 "
       "libtpu==0.0.52 (what .ci/run does; torch's CPU wheel from --find-links /opt/wheels or "
       "--index-url https://download.pytorch.org/whl/cpu); or set TPUBUILD_TORCHTPU_PYTHON")


def torchtpu_python_path() -> Path:
    return side_venv.python_path("TPUBUILD_TORCHTPU_PYTHON", ".venv-torchtpu")


def torchtpu_python() -> Path:
    """The TorchTPU venv's Python, where ``import torch_tpu`` works."""
    python = torchtpu_python_path()
    return side_venv.required("torch-tpu 0.2.0 with libtpu (venv .venv-torchtpu)", python,
                              "import torch, torch_tpu; from torch.tpu.distributed import set_tpu_launch_env",
                              clean_env(python), HOW)


def clean_env(python: Path, **extra: str) -> dict[str, str]:
    """A minimal environment (no variable of this process leaks into what torch-tpu reads): PATH
    with the venv's bin first, HOME, and ``extra``."""
    env = {"PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": os.environ.get("HOME", "/"),
           "PYTHONWARNINGS": "ignore"}
    env.update(extra)
    return env
