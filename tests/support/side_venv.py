"""The side venvs (``.ci/run`` builds them; docs/ci.md, "What CI installs"), each run as a subprocess:

* the real torch_xla: ``.venv-xla`` (torch 2.9.0 + torch_xla 2.9.0 + fairseq-fixed 0.12.3.1 compiled
  against that torch), run with ``PJRT_DEVICE=CPU``; ``TPUBUILD_XLA_PYTHON`` names its Python;
* the builder image's contents: ``.venv-image`` (builder/image/requirements.lock installed as the
  Dockerfile's first RUN line does, no Docker daemon needed); ``TPUBUILD_IMAGE_PYTHON`` names its Python;
* the real TorchTPU: ``.venv-torchtpu`` (torch 2.13.0 CPU from the local wheel, torch-tpu 0.2.0 and
  libtpu, which torch-tpu needs even to import); ``TPUBUILD_TORCHTPU_PYTHON`` names its Python.

Each Python is the one its variable names, else ``FOLDER/bin/python`` in the repository.
:func:`xla_python` and :func:`torchtpu_python` require theirs once it imports what it must
(``tests.conftest.require``: a skip on a laptop, a failure in CI)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from tests.conftest import REPO, require

XLA_HOW = ("python3 -m venv .venv-xla && .venv-xla/bin/pip install torch==2.9.0 torch_xla==2.9.0 cython numpy "
           "&& .venv-xla/bin/pip install --no-build-isolation fairseq-fixed==0.12.3.1 (what .ci/run does); "
           "or set TPUBUILD_XLA_PYTHON")
TORCHTPU_HOW = ("python3 -m venv .venv-torchtpu && .venv-torchtpu/bin/pip install torch==2.13.0 torch-tpu==0.2.0 "
                "libtpu==0.0.52 (what .ci/run does; torch's CPU wheel from --find-links /opt/wheels or "
                "--index-url https://download.pytorch.org/whl/cpu); or set TPUBUILD_TORCHTPU_PYTHON")


def python_path(variable: str, folder: str) -> Path:
    return Path(os.environ.get(variable) or REPO / folder / "bin" / "python")


@functools.lru_cache(maxsize=None)
def _imports(python: str, code: str, env: tuple[tuple[str, str], ...]) -> bool:
    if not Path(python).is_file():
        return False
    return subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(env)).returncode == 0


def required(what: str, python: Path, code: str, env: dict[str, str], how: str) -> Path:
    require(what, _imports(str(python), code, tuple(sorted(env.items()))), how)
    return python


def xla_python(*modules: str) -> Path:
    """The torch_xla venv's Python, where ``import torch_xla`` (and ``modules``) work."""
    code = "; ".join(f"import {m}" for m in ("torch_xla", *modules))
    return required("torch_xla 2.9 (venv .venv-xla)", python_path("TPUBUILD_XLA_PYTHON", ".venv-xla"), code,
                    {**os.environ, "PJRT_DEVICE": "CPU"}, XLA_HOW)


def xla_env(python: Path, **extra: str) -> dict[str, str]:
    """This process's environment with the venv's bin first on PATH and PJRT on CPU."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PJRT_DEVICE"] = "CPU"
    env.update(extra)
    return env


def torchtpu_python() -> Path:
    """The TorchTPU venv's Python, where ``import torch_tpu`` works."""
    python = python_path("TPUBUILD_TORCHTPU_PYTHON", ".venv-torchtpu")
    return required("torch-tpu 0.2.0 with libtpu (venv .venv-torchtpu)", python,
                    "import torch, torch_tpu; from torch.tpu.distributed import set_tpu_launch_env",
                    clean_env(python), TORCHTPU_HOW)


def clean_env(python: Path, **extra: str) -> dict[str, str]:
    """A minimal environment (no variable of this process leaks into what torch-tpu reads): PATH
    with the venv's bin first, HOME, and ``extra``."""
    env = {"PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": os.environ.get("HOME", "/"),
           "PYTHONWARNINGS": "ignore"}
    env.update(extra)
    return env


IMAGE_HOW = ("python3 -m venv .venv-image && .venv-image/bin/pip install -r builder/image/requirements.lock "
             "(what .ci/run does); or set TPUBUILD_IMAGE_PYTHON")


def image_python() -> Path:
    """The Python of a venv holding the builder image's lock (builder/image/requirements.lock)."""
    python = python_path("TPUBUILD_IMAGE_PYTHON", ".venv-image")
    return required("the builder image's lock (venv .venv-image)", python, "import google.cloud.storage, jinja2, hcl2",
                    clean_env(python), IMAGE_HOW)
