"""After a make-before-break update on TPU_ARCH="mig" the slice's group is the environment's OTHER
slot (``tpu-<env>-b``, builder/config/replace.py ``slot_names``): ``tpubuild run``, ``stop`` and
``train`` find it at run time (models/hosts.py ``SliceHosts``: the group listing of
models/slots.py, the same preamble as vm's two TPU VM slots, then that group's VMs in worker
order) and reach its VMs. The printed scripts run under bash against sandboxed hosts
(tests/support/host_sandbox.py), whose stand-in gcloud lists the zone's groups through the
script's own ``--filter`` and refuses ``list-instances`` of a group that does not exist. With both
groups (a swap under way) the script stops first with one line, before any listing or ssh, unless
TPUBUILD_SLICE names one. The vm twin: tests/shell/test_vm_slots.py; the health check:
tests/shell/test_recovery_sandbox.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.support import host_sandbox

pytestmark = pytest.mark.slow

MIG = EXAMPLES / "mig-v6e-16-spot.env"  # tpu-v6e-slice, 4 hosts
A, B = "tpu-v6e-slice", "tpu-v6e-slice-b"
A_VMS = [f"{A}-{s}" for s in ("q7xd", "a2bc", "k9m1", "Zb2c")]
B_VMS = [f"{B}-{s}" for s in ("m3p0", "c4d1", "x8y2", "e5f6")]


_script, _bash = host_sandbox.printed, host_sandbox.bash


def _ssh_hosts(box: Path) -> list[str]:
    return [c.split()[1] for c in host_sandbox.calls(box) if c.startswith("ssh ")]


def test_after_a_swap_run_and_stop_reach_the_vms_of_group_b(cli, make_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    values = make_env(MIG, MOUNT_POINT=str(tmp_path / "mnt"), MODEL="")
    box = tmp_path / "hosts"
    order = sorted(B_VMS, key=str.encode)
    env = {**host_sandbox.sandbox(box, order, groups={B: B_VMS, f"{B}x": A_VMS, f"x{A}": A_VMS}),
           "TPUBUILD_TPU_DEVICES": str(tmp_path / "none")}

    r = _bash(_script(cli, "run", "--dry-run", "--values", values, "--", "true"), env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"tpubuild: the slice is {B}" in r.stderr and f"workers in order: {' '.join(order)}" in r.stderr
    assert host_sandbox.listed(box) == [B] and _ssh_hosts(box) == [order[0], *order]

    r = _bash(_script(cli, "stop", "--dry-run", "--values", values), env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("is free") == 4 and host_sandbox.listed(box) == [B, B]
    assert set(_ssh_hosts(box)) == set(B_VMS)


@pytest.mark.parametrize("groups,says", [
    ({A: A_VMS, B: B_VMS}, f"tpubuild: both {A} and {B} exist: a make-before-break update is swapping the slice"),
    ({}, f"tpubuild: no MIG {A} or {B} in zone us-east5-b (project my-tpu-project)"),
], ids=["both", "none"])
def test_both_or_neither_group_is_one_line_before_any_listing_or_ssh(cli, make_env, tmp_path, monkeypatch, groups,
                                                                      says):
    monkeypatch.chdir(tmp_path)
    values = make_env(MIG, MOUNT_POINT=str(tmp_path / "mnt"))
    box = tmp_path / "hosts"
    env = host_sandbox.sandbox(box, A_VMS + B_VMS, groups=groups)
    host_sandbox.refused_in_one_line(lambda *args: _bash(_script(cli, *args), env, tmp_path), values, says, box,
                                     host_sandbox.EVERY_SCRIPT)


@pytest.mark.parametrize("preset,vms", [(A, A_VMS), (B, B_VMS)])
def test_while_both_exist_a_preset_tpubuild_slice_picks_that_group(cli, make_env, tmp_path, monkeypatch, preset, vms):
    """The build's tpu-checkpoint step stops the training on the old group while both exist."""
    monkeypatch.chdir(tmp_path)
    values = make_env(MIG, MOUNT_POINT=str(tmp_path / "mnt"), MODEL="")
    box = tmp_path / "hosts"
    env = {**host_sandbox.sandbox(box, A_VMS + B_VMS, groups={A: A_VMS, B: B_VMS}),
           "TPUBUILD_TPU_DEVICES": str(tmp_path / "none"), "TPUBUILD_SLICE": preset}
    r = _bash(_script(cli, "stop", "--dry-run", "--values", values), env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"tpubuild: the slice is {preset}" in r.stderr
    assert host_sandbox.listed(box) == [preset] and set(_ssh_hosts(box)) == set(vms)


@pytest.mark.parametrize("preset,groups,says", [
    ("tpu-v6e-slicex", {A: A_VMS, B: B_VMS}, f"tpubuild: TPUBUILD_SLICE=tpu-v6e-slicex is not a slot of the slice "
                                              f"({A} or {B})"),
    (B, {A: A_VMS}, f"tpubuild: TPUBUILD_SLICE={B}: no such MIG in zone us-east5-b (project my-tpu-project)"),
], ids=["not-a-slot", "absent"])
def test_a_preset_tpubuild_slice_that_is_not_a_live_group_is_one_line(cli, make_env, tmp_path, monkeypatch, preset,
                                                                      groups, says):
    host_sandbox.preset_refused_in_one_line(cli, make_env, tmp_path, monkeypatch, MIG, A_VMS, preset, says,
                                            groups=groups)


def test_one_slot_keeps_todays_script(cli, make_env):
    """Only where the slice has two slots does the script look for the live one: a settings object
    with one slot (as every arch but vm and mig has) writes today's listing of ``tpu-<env>``."""
    from builder.render import mig_hosts
    from builder.config import load
    from builder.config.model_registry import hosts

    s = load(MIG)
    one = hosts().for_arch("mig", s.project_id, s.zone, True, s.hosts, tpu_name=s.tpu_name, mig_name="",
                           listing=tuple(mig_hosts.list_argv(s)), slots=(s.tpu_name,))
    assert one.preamble().startswith(f"tpubuild_listing=$(gcloud compute instance-groups managed list-instances {A} ")
    assert "TPUBUILD_TPU" not in one.preamble() and one.preamble_title() == (
        "the slice's VMs in PJRT worker order (TPUBUILD_HOSTS)")
