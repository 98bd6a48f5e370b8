"""After a make-before-break update the slice lives in the environment's OTHER slot
(``tpu-<env>-b``, builder/config/replace.py ``slot_names``): ``tpubuild run``, ``stop``,
``logs --run`` and ``logs --metrics`` find it at run time (models/hosts.py ``TpuVmHosts``
preamble) and reach it. The printed scripts run under bash against sandboxed hosts
(tests/support/host_sandbox.py), whose stand-in gcloud lists the zone's TPU VMs and refuses an ssh
or scp to a TPU VM that does not exist, as the real one does. With neither slot, or with both (a
swap under way), the script stops first with one line, before any ssh.
The health build after a swap: tests/shell/test_recovery_sandbox.py; the lines in the real
gcloud: tests/integration/test_gcloud_lines.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES
from tests.support import host_sandbox

pytestmark = pytest.mark.slow

VM = EXAMPLES / "vm-v4-32.env"  # tpu-v4-pod, 4 hosts
A, B = "tpu-v4-pod", "tpu-v4-pod-b"
NAMES = ["w0", "w1", "w2", "w3"]


_script, _bash = host_sandbox.printed, host_sandbox.bash


_wait = host_sandbox.wait_until


def test_after_a_swap_run_stop_and_logs_reach_slot_b(cli, make_env, tmp_path, monkeypatch):
    mount = tmp_path / "mnt"
    values = make_env(VM, MOUNT_POINT=str(mount), MODEL="")
    monkeypatch.chdir(tmp_path)
    box = tmp_path / "hosts"
    env = {**host_sandbox.sandbox(box, NAMES, slices=["other-env", B]), "TPUBUILD_TPU_DEVICES": str(tmp_path / "none")}

    r = _bash(_script(cli, "run", "--dry-run", "--values", values, "--", "sh", "-c", "echo hi from $TPUBUILD_WORKER_NUMBER"),
              env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"tpubuild: the slice is {B}" in r.stderr
    assert host_sandbox.tpus(box) == [B, B] and host_sandbox.calls(box) == ["ssh w0", *(f"ssh {n}" for n in NAMES)]
    log = mount / "nfs_share/logs/v4-pod/run/host-2.log"
    assert _wait(lambda: log.exists() and "hi from 2" in log.read_text()), log.read_text() if log.exists() else ""

    r = _bash(_script(cli, "logs", "--run", "--host", "2", "--dry-run", "--values", values), env, tmp_path)
    assert r.returncode == 0 and "hi from 2" in r.stdout, r.stderr
    r = _bash(_script(cli, "stop", "--dry-run", "--values", values), env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("is free") == 4 and set(host_sandbox.tpus(box)) == {B}


def test_after_a_swap_the_metrics_report_is_read_on_slot_b(cli, make_env, tmp_path):
    mount = tmp_path / "mnt"
    values = make_env(VM, MOUNT_POINT=str(mount))
    logs = mount / "nfs_share/logs/v4-pod/roberta"
    logs.mkdir(parents=True)
    (logs / "host-0.metrics.txt").write_text("Counter: UncachedCompile\n  Value: 7\n")
    box = tmp_path / "hosts"
    env = host_sandbox.sandbox(box, NAMES, slices=[B])
    argv = _script(cli, "logs", "--metrics", "--dry-run", "--values", values)
    assert argv.startswith("bash -c ")  # the slot is found first, then the ssh
    r = _bash(argv, env, tmp_path)
    assert r.returncode == 0 and "==> " in r.stdout and "Value: 7" in r.stdout, r.stderr
    assert host_sandbox.tpus(box) == [B]


@pytest.mark.parametrize("slices,says", [
    ([], f"tpubuild: no TPU VM {A} or {B} in zone us-central2-b (project my-tpu-project)"),
    (["tpu-v4-podx", "x-tpu-v4-pod"], f"tpubuild: no TPU VM {A} or {B}"),
    ([A, B], f"tpubuild: both {A} and {B} exist: a make-before-break update is swapping the slice"),
], ids=["none", "only-lookalikes", "both"])
def test_neither_or_both_slots_is_one_line_before_any_ssh(cli, make_env, tmp_path, monkeypatch, slices, says):
    monkeypatch.chdir(tmp_path)
    values = make_env(VM, MOUNT_POINT=str(tmp_path / "mnt"))
    box = tmp_path / "hosts"
    env = host_sandbox.sandbox(box, NAMES, slices=slices)
    host_sandbox.refused_in_one_line(lambda *args: _bash(_script(cli, *args), env, tmp_path), values, says, box,
                                     host_sandbox.EVERY_SCRIPT)


def test_before_any_swap_slot_a_is_reached(cli, make_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    values = make_env(VM, MOUNT_POINT=str(tmp_path / "mnt"), MODEL="")
    box = tmp_path / "hosts"
    env = {**host_sandbox.sandbox(box, NAMES, slices=[A, "tpu-v4-pod-c"]), "TPUBUILD_TPU_DEVICES": str(tmp_path / "none")}
    r = _bash(_script(cli, "stop", "--dry-run", "--values", values), env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert host_sandbox.tpus(box) == [A] and len(host_sandbox.calls(box)) == 4


@pytest.mark.parametrize("preset", [A, B])
def test_while_both_exist_a_preset_tpubuild_slice_picks_that_slot(cli, make_env, tmp_path, monkeypatch, preset):
    """The build's tpu-checkpoint step stops the training on the old slot while both exist."""
    monkeypatch.chdir(tmp_path)
    values = make_env(VM, MOUNT_POINT=str(tmp_path / "mnt"), MODEL="")
    box = tmp_path / "hosts"
    env = {**host_sandbox.sandbox(box, NAMES, slices=[A, B]), "TPUBUILD_TPU_DEVICES": str(tmp_path / "none"),
           "TPUBUILD_SLICE": preset}
    r = _bash(_script(cli, "stop", "--dry-run", "--values", values), env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"tpubuild: the slice is {preset}" in r.stderr
    assert host_sandbox.tpus(box) == [preset] and len(host_sandbox.calls(box)) == 4


@pytest.mark.parametrize("preset,slices,says", [
    ("tpu-v4-podx", [A, B], f"tpubuild: TPUBUILD_SLICE=tpu-v4-podx is not a slot of the slice ({A} or {B})"),
    (B, [A], f"tpubuild: TPUBUILD_SLICE={B}: no such TPU VM in zone us-central2-b (project my-tpu-project)"),
], ids=["not-a-slot", "absent"])
def test_a_preset_tpubuild_slice_that_is_not_a_live_slot_is_one_line(cli, make_env, tmp_path, monkeypatch, preset,
                                                                     slices, says):
    host_sandbox.preset_refused_in_one_line(cli, make_env, tmp_path, monkeypatch, VM, NAMES, preset, says,
                                            slices=slices)


def test_the_probe_says_whether_it_trains_and_when_the_checkpoint_was_written(cli, make_env, tmp_path, monkeypatch):
    """``tpubuild stop --probe`` (what tpu-checkpoint waits on) on the hosts: not training, the
    checkpoint's mtime in epoch seconds (0 before the first)."""
    monkeypatch.chdir(tmp_path)
    mount = tmp_path / "mnt"
    values = make_env(VM, MOUNT_POINT=str(mount))
    box = tmp_path / "hosts"
    env = host_sandbox.sandbox(box, NAMES, slices=[A, B])
    script = _script(cli, "stop", "--probe", "--dry-run", "--values", values)
    r = _bash(script, {**env, "TPUBUILD_SLICE": B}, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "tpubuild-probe 0 0" and host_sandbox.tpus(box) == [B]
    ckpt = mount / "nfs_share/checkpoints/v4-pod/roberta/checkpoint_last.pt"
    ckpt.parent.mkdir(parents=True)
    ckpt.write_text("weights")
    os.utime(ckpt, (1700000000, 1700000000))
    # a training outside the hosts (a test beside this one) is not theirs; one on them is
    training = [sys.executable, "-c", "import time; time.sleep(60)", "fairseq_cli.train"]
    outside = subprocess.Popen(training, env={k: v for k, v in env.items() if k != "SANDBOX"})
    try:
        r = _bash(script, {**env, "TPUBUILD_SLICE": B}, tmp_path)
        assert r.stdout.splitlines()[-1] == "tpubuild-probe 0 1700000000", r.stderr
        inside = subprocess.Popen(training, env=env)
        try:
            r = _bash(script, {**env, "TPUBUILD_SLICE": B}, tmp_path)
            assert r.stdout.splitlines()[-1] == "tpubuild-probe 1 1700000000", r.stderr
        finally:
            inside.kill()
    finally:
        outside.kill()
