"""The mig-attach step (TPU_ARCH="mig"): once shared_pd-seed is done and mig-resize made every VM,
the shared PD is attached read-only, as the device startup.sh waits for, to every VM of the MIG that
does not hold it yet; a Hyperdisk ML disk not yet READ_ONLY_MANY stops it with one line. The
rendered script runs under real bash with a stateful gcloud on PATH; tests/integration/
test_gcloud_lines.py parses its lines with the real gcloud. Calendar mode has no such step: its
template carries the disk and its apply waits for the seed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from builder.config import load, load_text
from builder.inputs import tfvars
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, REPO, rewrite_env
from tests.support.pipeline import step_env, step_script

SPOT = EXAMPLES / "mig-v6e-16-spot.env"  # Hyperdisk ML
V5P = EXAMPLES / "mig-v5p-32.env"  # pd-balanced

GCLOUD = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$STUB_STATE/calls"
case "$1 $2 $3" in
  "compute disks describe")
    if [[ "$*" == *accessMode* ]]; then cat "$STUB_STATE/mode"; else
      sep=""; while read -r u; do printf '%s%s' "$sep" "https://www.googleapis.com/compute/v1/projects/p/zones/z/instances/$u"; sep=";"; done < "$STUB_STATE/users"; echo
    fi ;;
  "compute instance-groups managed") cat "$STUB_STATE/vms" ;;
  "compute instances attach-disk")
    [[ -f "$STUB_STATE/refuse-$4" ]] && { echo "ERROR: (gcloud.compute.instances.attach-disk) $4: disk in use" >&2; exit 1; }
    echo "$4" >> "$STUB_STATE/users" ;;
esac
exit 0
"""


def _step(values: Path) -> dict:
    s = load(values)
    [step] = [st for st in render(s, make_plan(s, "create"))["steps"] if st["id"] == "mig-attach"]
    return step


def _run(tmp_path: Path, values: Path, *, vms: list[str], users: list[str], mode: str = "READ_ONLY_MANY",
         refuse: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    step = _step(values)
    bindir, state = tmp_path / "bin", tmp_path / "state"
    bindir.mkdir()
    state.mkdir()
    (bindir / "gcloud").write_text(GCLOUD)
    (bindir / "gcloud").chmod(0o755)
    (state / "vms").write_text("".join(f"{v}\n" for v in vms))
    (state / "users").write_text("".join(f"{u}\n" for u in users))
    (state / "mode").write_text(mode + "\n")
    for vm in refuse:
        (state / f"refuse-{vm}").touch()
    # mig-apply names the group values.env asks for (make-before-break: either slot)
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "mig.name").write_text(load(values).tpu_name + "\n")
    env = {**os.environ, **step_env(step), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
           "STUB_STATE": str(state), "WORKSPACE": str(tmp_path)}
    proc = subprocess.run(["bash", "-c", step_script(step)], env=env, capture_output=True, text=True, timeout=60)
    calls = (state / "calls").read_text().splitlines() if (state / "calls").exists() else []
    return proc, calls


def _attached(calls: list[str]) -> list[str]:
    return sorted(c.split()[3] for c in calls if c.startswith("compute instances attach-disk"))


@pytest.mark.parametrize("values", [SPOT, V5P], ids=["hyperdisk-ml", "pd-balanced"])
def test_every_vm_without_the_disk_gets_it_read_only_as_the_device_the_hosts_wait_for(tmp_path: Path, values: Path) -> None:
    s = load(values)
    vms = [f"{s.tpu_name}-{c}" for c in ("a2bc", "m0nz", "q7xd", "zz01")]
    # one VM holds it already (a longer name that shares a prefix must not count for another)
    proc, calls = _run(tmp_path, values, vms=vms, users=[vms[1] + "x", vms[2]])
    assert proc.returncode == 0, proc.stderr
    assert _attached(calls) == [vms[0], vms[1], vms[3]]
    for call in (c for c in calls if "attach-disk" in c):
        assert f"--disk={s.shared_pd_name}" in call and "--mode=ro" in call and "--device-name=shared-pd" in call
        assert f"--zone={s.zone}" in call and f"--project={s.project_id}" in call
    assert [c for c in calls if "list-instances" in c][0].split()[4] == s.tpu_name
    assert any("accessMode" in c for c in calls) == (s.shared_pd_type == "hyperdisk-ml")
    assert f"{s.shared_pd_name} attached read-only as shared-pd to" in proc.stdout


def test_a_second_run_attaches_nothing(tmp_path: Path) -> None:
    s = load(SPOT)
    vms = [f"{s.tpu_name}-{i}" for i in range(4)]
    proc, calls = _run(tmp_path, SPOT, vms=vms, users=vms)
    assert proc.returncode == 0 and _attached(calls) == [] and "nothing to do" in proc.stdout


def test_a_hyperdisk_ml_still_read_write_single_is_refused_with_one_line(tmp_path: Path) -> None:
    s = load(SPOT)
    proc, calls = _run(tmp_path, SPOT, vms=[f"{s.tpu_name}-0"], users=[], mode="READ_WRITE_SINGLE")
    assert proc.returncode != 0 and _attached(calls) == []
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("tpubuild: mig:")]
    assert "READ_WRITE_SINGLE, not READ_ONLY_MANY" in line and "--access-mode=READ_ONLY_MANY" in line


def test_a_refused_attach_fails_the_step_after_trying_the_others(tmp_path: Path) -> None:
    s = load(V5P)
    vms = [f"{s.tpu_name}-{i}" for i in range(4)]
    proc, calls = _run(tmp_path, V5P, vms=vms, users=[], refuse=(vms[1],))
    assert proc.returncode != 0 and "disk in use" in proc.stderr
    assert f"could not attach {s.shared_pd_name} to {vms[1]}" in proc.stderr
    assert _attached(calls) == vms  # every VM was tried; running it again attaches only the one left


def test_calendar_mode_carries_the_disk_in_its_template_and_its_apply_waits_for_the_seed() -> None:
    base = EXAMPLES / "mig-v6e-32-calendar.env"
    s = load_text(rewrite_env(base.read_text(), SHARED_PD_DISK_ATTACH="true",
                              GCS_DATASET="gs://my-tpu-project-datasets/wikitext/*"), REPO / base.name)
    steps = {st["id"]: st for st in render(s, make_plan(s, "create"))["steps"]}
    assert "mig-attach" not in steps and "shared_pd-seed" in steps["mig-apply"]["waitFor"]
    assert tfvars.for_module(s, "mig")["shared_pd_attached_later"] is False
    spot = load(SPOT)
    assert tfvars.for_module(spot, "mig")["shared_pd_attached_later"] is True
    assert "shared_pd-seed" not in {st["id"]: st for st in render(spot, make_plan(spot, "create"))["steps"]}["mig-apply"]["waitFor"]
