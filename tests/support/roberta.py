"""The RoBERTa launcher as ``tpubuild train roberta`` loads it, for the tests of models/roberta
(tests/models/test_roberta*.py)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from builder.commands.train import load_launcher
from builder.config import load
from tests.conftest import EXAMPLES

#: A 4-host TPU VM values file (v4-32), the vm counterpart of the node file tests.conftest.NODE.
VM_EXAMPLE = EXAMPLES / "vm-v4-32.env"


def launcher_and_job(path: Path) -> tuple[ModuleType, Any]:
    """The launcher module of ``path``'s settings and its Job."""
    settings = load(path)
    launcher, _ = load_launcher(settings, "roberta")
    return launcher, launcher.Job.from_settings(settings)
