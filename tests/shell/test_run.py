"""``tpubuild run -- COMMAND`` and the run/stop half of ``tpubuild stop`` (models/hosts.py): the
dry-run lines, the refusals, and the host side executed here: the printed ``--command`` runs in
``sh`` against a sandboxed host (ready marker, profile), detaches, logs per host, and a real
torch_xla example (models/examples/torch_xla_launch.py, PJRT on CPU) trains through it; the stop
line kills the job's whole process tree and whatever holds the (stand-in) TPU device."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO
from tests.support.xla import xla_python

pytestmark = pytest.mark.slow

VM = EXAMPLES / "vm-v4-32.env"
EXAMPLE = REPO / "models/examples/torch_xla_launch.py"


def gcloud_lines(out: str) -> list[list[str]]:
    return [shlex.split(line) for line in out.splitlines() if line.startswith("gcloud ")]


def command_of(words: list[str]) -> str:
    return next(w for w in words if w.startswith("--command="))[len("--command="):]


def test_run_dry_run_every_host_then_one(cli, make_env):
    code, out, err = cli("run", "--dry-run", "--values", VM, "--", "python3", "train.py", "--lr", "0.1 0.2")
    assert code == 0, err
    dirs, run = gcloud_lines(out)
    assert run[:7] == ["gcloud", "alpha", "compute", "tpus", "tpu-vm", "ssh", "tpu-v4-pod"]
    assert "--tunnel-through-iap" in run and "--worker=all" in run and "--worker=0" in dirs
    command = command_of(run)
    assert command.startswith("if [ ! -e /run/tpubuild/ready ]; then ")  # refuses a host that is not ready
    assert "; if [ -r /etc/profile.d/tpubuild.sh ]; then . /etc/profile.d/tpubuild.sh; fi; " in command
    assert "setsid nohup sh -c " in command and command.endswith(" >/dev/null 2>&1 </dev/null &")
    # the user's words arrive as they were given, one shell word each
    tail = shlex.split(command.split(" tpubuild-run ", 1)[1].removesuffix(" >/dev/null 2>&1 </dev/null &"))
    assert tail == ["/mnt/common/nfs_share/logs/v4-pod/run", ".tpubuild/run.pgid", "python3", "train.py", "--lr",
                    "0.1 0.2"]
    assert "sudo mkdir -p /mnt/common/nfs_share/logs/v4-pod/run" in command_of(dirs)

    code, out, _ = cli("run", "--dry-run", "--hosts", "3", "--values", VM, "--", "python3", "x.py")
    assert code == 0 and "--worker=3" in gcloud_lines(out)[1]

    # external IPs: no IAP, the GA track
    code, out, _ = cli("run", "--dry-run", "--values", make_env(VM, TPU_EXTERNAL_IPS="true"), "--", "true")
    assert code == 0 and all(w[:2] == ["gcloud", "compute"] and "--tunnel-through-iap" not in w
                             for w in gcloud_lines(out))


@pytest.mark.parametrize("args,msg", [
    (["--hosts", "4", "--", "true"], "--hosts 4: tpu-v4-pod has 4 host(s); use --hosts all or a number from 0 to 3"),
    (["--hosts", "x", "--", "true"], "--hosts x: tpu-v4-pod has 4 host(s)"),
    ([], "tpubuild run: no command; write it after --"),
    (["--"], "tpubuild run: no command"),
])
def test_run_refuses_in_one_line(cli, args, msg):
    code, out, err = cli("run", "--dry-run", "--values", VM, *args)
    assert code == 2 and out == "" and msg in err and len(err.strip().splitlines()) == 1


def test_run_refuses_other_architectures(cli):  # mig: tests/shell/test_run_mig.py
    from tests.conftest import NODE

    code, out, err = cli("run", "--dry-run", "--values", NODE, "--", "true")
    assert code == 2 and out == "" and 'tpubuild run works on TPU_ARCH="vm" or "mig"' in err, err


def test_stop_and_logs_cover_run_jobs(cli):
    code, out, _ = cli("stop", "--dry-run", "--values", VM)
    assert code == 0
    last = gcloud_lines(out)[-1]
    assert "--worker=all" in last and command_of(last).startswith("if [ -r /etc/profile.d/tpubuild.sh ]")
    assert "pidfile=.tpubuild/run.pgid" in command_of(last)  # after the model's stop
    code, out, _ = cli("logs", "--run", "--host", "2", "--dry-run", "--values", VM)
    assert code == 0 and command_of(gcloud_lines(out)[0]).endswith(
        "tail -n 200 /mnt/common/nfs_share/logs/v4-pod/run/host-2.log")
    code, _, err = cli("logs", "--run", "--host", "7", "--dry-run", "--values", VM)
    assert code == 2 and "--host 7" in err


# ---------------------------------------------------------------- the host side, executed here

class Host:
    """A sandboxed TPU VM host: /run/tpubuild and /etc/profile.d under tmp, home = cwd."""

    def __init__(self, root: Path, profile: str) -> None:
        self.root = root
        for d in ("run", "profile.d", "home", "bin"):
            (root / d).mkdir(parents=True, exist_ok=True)
        (root / "run/ready").write_text("")
        (root / "profile.d/tpubuild.sh").write_text(profile)
        sudo = root / "bin/sudo"  # this machine runs as root without sudo
        sudo.write_text('#!/bin/sh\nexec "$@"\n')
        sudo.chmod(0o755)

    def sandboxed(self, command: str) -> str:
        return command.replace("/run/tpubuild/", f"{self.root}/run/").replace(
            "/etc/profile.d/", f"{self.root}/profile.d/")

    def sh(self, command: str, **env: str) -> subprocess.CompletedProcess[str]:
        full = {**os.environ, "HOME": str(self.root / "home"), **env}
        full["PATH"] = f"{self.root}/bin{os.pathsep}{full['PATH']}"
        return subprocess.run(["sh", "-c", self.sandboxed(command)], cwd=self.root / "home", env=full,
                              capture_output=True, text=True, timeout=120)


def _wait(predicate, timeout: float = 300) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_printed_run_line_trains_the_torch_xla_example_detached(cli, make_env, tmp_path):
    python = xla_python()
    mount = tmp_path / "mnt"
    values = make_env(VM, MOUNT_POINT=str(mount))
    code, out, _ = cli("run", "--dry-run", "--values", values, "--", "python3", str(EXAMPLE), "--steps", "20")
    assert code == 0
    dirs, run = gcloud_lines(out)
    host = Host(tmp_path / "host", f"export PJRT_DEVICE=CPU\nexport TPUBUILD_WORKER_NUMBER=0\n"
                                    f"export PATH={python.parent}:$PATH\n")
    log_dir = mount / "nfs_share/logs/v4-pod/run"
    log_dir.mkdir(parents=True)  # dirs_line needs a mounted share and sudo: checked by its text above
    r = host.sh(command_of(run))
    assert r.returncode == 0, r.stderr  # returns at once: the job is detached
    log = log_dir / "host-0.log"
    assert _wait(lambda: log.exists() and "done after 20 steps" in log.read_text()), log.read_text()
    text = log.read_text()
    assert "[tpubuild run " in text and "replica 0 of 1 done after 20 steps" in text and "step 20 loss" in text

    # a host that is not ready refuses, in one line, and starts nothing
    (host.root / "run/ready").unlink()
    (host.root / "run/failed").write_text("mount of Filestore failed")
    r = host.sh(command_of(run))
    assert r.returncode == 1 and "is not ready" in r.stderr and "mount of Filestore failed" in r.stderr


def test_stop_line_kills_the_process_tree_and_frees_the_device(cli, make_env, tmp_path):
    mount = tmp_path / "mnt"
    values = make_env(VM, MOUNT_POINT=str(mount))
    (mount / "nfs_share/logs/v4-pod/run").mkdir(parents=True)
    host = Host(tmp_path / "host", "export TPUBUILD_WORKER_NUMBER=1\n")
    # a job with a tree: a shell whose child ignores SIGTERM (so stop must escalate to KILL)
    job = ["sh", "-c", "trap '' TERM; sleep 300 & sleep 301 & wait"]
    code, out, _ = cli("run", "--dry-run", "--values", values, "--", *job)
    assert code == 0
    r = host.sh(command_of(gcloud_lines(out)[1]))
    assert r.returncode == 0, r.stderr
    pidfile = host.root / "home/.tpubuild/run.pgid"
    assert _wait(lambda: pidfile.exists() and pidfile.read_text().strip(), 30)
    pgid = int(pidfile.read_text())
    members = lambda: [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _pgid(int(p.name)) == pgid]  # noqa: E731
    assert _wait(lambda: len(members()) >= 3, 30)
    # something else holds the TPU device (a process outside the job, as a leftover libtpu user)
    device = tmp_path / "accel0"
    device.write_text("")
    holder = subprocess.Popen(["sh", "-c", f"exec 3<{device}; sleep 300"], start_new_session=True)
    assert _wait(lambda: subprocess.run(["fuser", "-s", str(device)]).returncode == 0, 30)

    code, out, _ = cli("stop", "--dry-run", "--values", values)
    stop = command_of(gcloud_lines(out)[-1])
    r = host.sh(stop, TPUBUILD_TPU_DEVICES=str(device))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"stopping process group {pgid}" in r.stdout and "freeing the TPU" in r.stdout and "is free" in r.stdout
    assert members() == [] or not any(_alive(p) for p in members())
    holder.wait(timeout=30)
    assert holder.returncode == -signal.SIGTERM or holder.returncode == -signal.SIGKILL
    assert not pidfile.exists()
    # stopping again, with nothing running, is fine
    r = host.sh(stop, TPUBUILD_TPU_DEVICES=str(device))
    assert r.returncode == 0 and "stopping" not in r.stdout and "is free" in r.stdout


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return -1
