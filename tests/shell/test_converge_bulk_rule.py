"""The convergence harness's gcloud stand-in (tests/support/converge_gcloud.py) holds a bulk-mode
MIG to Google's rule (about-bulk-mode, "Configuration changes and resizing"; docs/modules.md,
"Google's rules for TPU MIGs"): it adds instances only while its target size is 0. A negative
control: growing a bulk group from a non-zero size is refused with one line and changes nothing;
through 0 it grows; a group not in bulk mode grows from anywhere. Every convergence pipeline on mig
(tests/shell/test_converge*.py) runs its resizes through the same stand-in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.converge import World


def _gcloud(world: World, *args: str, bulk: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STANDIN_WORLD": str(world.root), "STANDIN_PYTHON": sys.executable, "STANDIN_VMS": "4",
           "STANDIN_BULK": "1" if bulk else "0"}
    return subprocess.run([str(world.root / "bin" / "gcloud"), *args], env=env, capture_output=True, text=True, timeout=60)


def _size(world: World, group: str, bulk: bool = True) -> str:
    return _gcloud(world, "compute", "instance-groups", "managed", "describe", group, "--zone=z",
                   "--format=value(targetSize)", bulk=bulk).stdout.strip()


def _resize(world: World, group: str, size: int, bulk: bool = True) -> subprocess.CompletedProcess[str]:
    return _gcloud(world, "compute", "instance-groups", "managed", "resize", group, "--zone=z", f"--size={size}", bulk=bulk)


def test_a_bulk_group_grows_only_from_zero(tmp_path: Path) -> None:
    world = World.empty(tmp_path / "world")
    (world.root / "res" / "tpu-x").write_text("v6e-16")  # Terraform made it whole: 4 VMs
    assert _size(world, "tpu-x") == "4"
    said = _resize(world, "tpu-x", 8)
    assert said.returncode == 1 and "adds instances only while its target size is 0: tpu-x is at 4, asked for 8" in said.stderr
    assert _size(world, "tpu-x") == "4"  # nothing changed
    assert _resize(world, "tpu-x", 0).returncode == 0 and _size(world, "tpu-x") == "0"
    assert _resize(world, "tpu-x", 8).returncode == 0 and _size(world, "tpu-x") == "8"
    assert _resize(world, "tpu-x", 8).returncode == 0  # the size it has: no growth


def test_a_group_not_in_bulk_mode_grows_from_anywhere(tmp_path: Path) -> None:
    world = World.empty(tmp_path / "world")
    (world.root / "res" / "tpu-x").write_text("v6e-8")
    assert _resize(world, "tpu-x", 8, bulk=False).returncode == 0 and _size(world, "tpu-x", bulk=False) == "8"
