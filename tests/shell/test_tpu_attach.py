"""The tpu-attach step (vm): the shared PD is attached read-only to every host of the TPU VM once it
is seeded, and not again when it is there. Its rendered script runs under real bash with a
recording gcloud on PATH; tests/integration/test_gcloud_lines.py parses its lines with real gcloud."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from builder.config import load
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import SHIPPED
from tests.support.pipeline import stand_in_bin, step_env, step_script

GCLOUD = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$STUB_STATE/calls"
case "$1 $2 $3 $4" in
  "compute tpus tpu-vm describe") cat "$STUB_STATE/disks" ;;
  "alpha compute tpus tpu-vm") [[ -f "$STUB_STATE/refuse" ]] && { echo "ERROR: (gcloud.alpha) disk in use" >&2; exit 1; } ;;
esac
exit 0
"""


def _run(tmp_path: Path, attached: str, refuse: bool = False, slot: str = "") -> tuple[subprocess.CompletedProcess[str], list[str]]:
    s = load(SHIPPED)
    # tpu-apply names the slice values.env asks for (make-before-break: either slot)
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "tpu.name").write_text(slot or s.tpu_name)
    [step] = [st for st in render(s, make_plan(s, "create"))["steps"] if st["id"] == "tpu-attach"]
    bindir, state = stand_in_bin(tmp_path, "state", gcloud=GCLOUD)
    (state / "disks").write_text(attached + "\n")
    if refuse:
        (state / "refuse").touch()
    env = {**os.environ, **step_env(step), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
           "STUB_STATE": str(state), "WORKSPACE": str(tmp_path)}
    proc = subprocess.run(["bash", "-c", step_script(step)], env=env, capture_output=True, text=True, timeout=60)
    calls = (state / "calls").read_text().splitlines() if (state / "calls").exists() else []
    return proc, calls


def _disk(name: str) -> str:
    s = load(SHIPPED)
    return f"projects/{s.project_id}/zones/{s.zone}/disks/{name}"


@pytest.mark.parametrize("attached", ["", "other-disk", "pd-tpu-dev10"], ids=["none", "another", "a-longer-name"])
def test_the_disk_is_attached_read_only_when_the_tpu_lacks_it(tmp_path: Path, attached: str) -> None:
    s = load(SHIPPED)
    proc, calls = _run(tmp_path, _disk(attached) if attached else "")
    assert proc.returncode == 0, proc.stderr
    [attach] = [c for c in calls if c.startswith("alpha compute tpus tpu-vm attach-disk")]
    assert f"attach-disk {s.tpu_name} " in attach and f"--disk={s.shared_pd_name}" in attach
    assert "--mode=read-only" in attach and f"--zone={s.zone}" in attach
    assert f"attached read-only to every host of {s.tpu_name}" in proc.stdout


def test_an_attached_disk_is_left_as_it_is(tmp_path: Path) -> None:
    s = load(SHIPPED)
    proc, calls = _run(tmp_path, f"{_disk('other-disk')};{_disk(s.shared_pd_name)}")
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if "attach-disk" in c] and "already attached" in proc.stdout


def test_a_refused_attach_fails_the_step(tmp_path: Path) -> None:
    proc, _calls = _run(tmp_path, "", refuse=True)
    assert proc.returncode != 0 and "disk in use" in proc.stderr


def test_the_disk_goes_to_the_slice_tpu_apply_named(tmp_path: Path) -> None:
    """make-before-break: the new slice may be the other slot (<name>-b); the disk goes to it."""
    s = load(SHIPPED)
    proc, calls = _run(tmp_path, "", slot=f"{s.tpu_name}-b")
    assert proc.returncode == 0, proc.stderr
    assert [c for c in calls if c.startswith(f"compute tpus tpu-vm describe {s.tpu_name}-b ")]
    [attach] = [c for c in calls if "attach-disk" in c]
    assert f"attach-disk {s.tpu_name}-b " in attach
