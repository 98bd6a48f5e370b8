"""``tpubuild run -- COMMAND`` and the run/stop half of ``tpubuild stop`` (models/hosts.py): the
dry-run lines, what is shipped, the refusals, and the host side executed here: the printed script
runs in bash against sandboxed hosts (tests/support/host_sandbox.py: a stand-in gcloud whose ssh
runs ``--command`` in the host's sandbox and whose scp copies into its home), so the shipped files
really arrive, the command runs among them detached and logs per host; ``run --help``'s first
example (models/examples/torch_xla_launch.py, shipped) trains under real torch_xla (PJRT on CPU);
the printed ``--command`` refuses a host that is not ready; the stop line kills the job's whole
process tree and whatever holds the (stand-in) TPU device."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO
from tests.support import host_sandbox
from tests.support.side_venv import xla_python

pytestmark = pytest.mark.slow

VM = EXAMPLES / "vm-v4-32.env"
EXAMPLE = REPO / "models/examples/torch_xla_launch.py"


def gcloud_lines(out: str) -> list[list[str]]:
    return [shlex.split(line) for line in out.splitlines() if line.startswith("gcloud ")]


def command_of(words: list[str]) -> str:
    return next(w for w in words if w.startswith("--command="))[len("--command="):]


def test_run_dry_run_every_host_then_one(cli, make_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing here to ship: the command runs in the home
    code, out, err = cli("run", "--dry-run", "--values", VM, "--", "python3", "train.py", "--lr", "0.1 0.2")
    assert code == 0, err
    dirs, run = gcloud_lines(out)
    assert run[:7] == ["gcloud", "alpha", "compute", "tpus", "tpu-vm", "ssh", "$TPUBUILD_TPU"]  # the live slot
    assert "--tunnel-through-iap" in run and "--worker=all" in run and "--worker=0" in dirs
    command = command_of(run)
    assert command.startswith("if [ ! -e /run/tpubuild/ready ]; then ")  # refuses a host that is not ready
    assert "; if [ -r /etc/profile.d/tpubuild.sh ]; then . /etc/profile.d/tpubuild.sh; fi; " in command
    assert "setsid nohup sh -c " in command and command.endswith(" >/dev/null 2>&1 </dev/null &")
    # the user's words arrive as they were given, one shell word each
    tail = shlex.split(command.split(" tpubuild-run ", 1)[1].removesuffix(" >/dev/null 2>&1 </dev/null &"))
    assert tail == ["/mnt/common/nfs_share/logs/v4-pod/run", ".tpubuild/run.pgid", ".", "python3", "train.py", "--lr",
                    "0.1 0.2"]
    assert " scp " not in out
    assert "sudo mkdir -p /mnt/common/nfs_share/logs/v4-pod/run" in command_of(dirs)

    code, out, _ = cli("run", "--dry-run", "--hosts", "3", "--values", VM, "--", "python3", "x.py")
    assert code == 0 and "--worker=3" in gcloud_lines(out)[1]

    # external IPs: no IAP, the GA track
    code, out, _ = cli("run", "--dry-run", "--values", make_env(VM, TPU_EXTERNAL_IPS="true"), "--", "true")
    assert code == 0 and all(w[:2] == ["gcloud", "compute"] and "--tunnel-through-iap" not in w
                             for w in gcloud_lines(out))


def _project(root: Path) -> Path:
    """A user's folder: a script, a data folder, a config, a package, and a file beside it."""
    for rel, text in (("train.py", "print('hi')\n"), ("data/a.txt", "a\n"), ("conf/x.yaml", "x: 1\n"),
                      ("pkg/mod.py", "X = 1\n"), ("pkg/util.py", "Y = 2\n"), ("up.py", ""), ("proj/a:b", "")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root / "proj"


def scp_lines(out: str) -> list[list[str]]:
    return [w for w in gcloud_lines(out) if "scp" in w]


def shipped(out: str) -> dict[str, list[str]]:
    """Remote folder → local sources, from the printed scp lines."""
    return {w[-5].split(":", 1)[1]: w[7:-5] for w in scp_lines(out)}


def test_run_ships_the_local_files_its_words_name(cli, tmp_path, monkeypatch):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    words = ["--", "python3", "train.py", "--data", "data", "--config=conf/x.yaml", "/mnt/common", "../up.py",
             "missing.py", "pkg/mod.py", "-", "proj/a:b"]
    code, out, err = cli("run", "--dry-run", "--values", VM, *words)
    assert code == 0, err
    # one copy per local folder, at the same relative path under ~/.tpubuild/run; host paths stay
    assert shipped(out) == {".tpubuild/run/": ["data", "train.py"], ".tpubuild/run/conf/": ["conf/x.yaml"],
                            ".tpubuild/run/pkg/": ["pkg/mod.py"]}
    assert all("--worker=all" in w and "--tunnel-through-iap" in w for w in scp_lines(out))
    emptied = command_of(gcloud_lines(out)[1])
    assert emptied.endswith("rm -rf .tpubuild/run && mkdir -p .tpubuild/run .tpubuild/run/conf .tpubuild/run/pkg")
    run = command_of(gcloud_lines(out)[-1])
    tail = shlex.split(run.split(" tpubuild-run ", 1)[1].removesuffix(" >/dev/null 2>&1 </dev/null &"))
    assert tail[2:] == [".tpubuild/run", *words[1:]]  # the words unchanged, run in the shipped folder

    # --ship adds a folder (its files inside are then shipped with it); --hosts N ships to N only
    code, out, err = cli("run", "--dry-run", "--hosts", "2", "--ship", "pkg", "--values", VM, *words)
    assert code == 0, err
    assert shipped(out)[".tpubuild/run/"] == ["data", "pkg", "train.py"]
    assert all("--worker=2" in w for w in scp_lines(out))
    # --no-ship: only what --ship names
    code, out, err = cli("run", "--dry-run", "--no-ship", "--ship", str(tmp_path / "conf"), "--values", VM, *words)
    assert code == 0, err
    assert shipped(out) == {".tpubuild/run/": ["conf"]}
    code, out, err = cli("run", "--dry-run", "--no-ship", "--values", VM, *words)
    assert code == 0 and scp_lines(out) == [] and " .tpubuild/run python3 " not in out


@pytest.mark.parametrize("ship,msg", [
    ("../up.py", "--ship ../up.py: is not under the current folder"),
    ("nope", "--ship nope: does not exist"),
    ("/etc/passwd", "--ship /etc/passwd: is not under the current folder"),
    (".", "--ship .: is the current folder itself"),
    ("a:b", "--ship a:b: has a ':', which scp reads as host:path"),
])
def test_run_ship_outside_or_missing_is_one_line(cli, tmp_path, monkeypatch, ship, msg):
    monkeypatch.chdir(_project(tmp_path))
    code, out, err = cli("run", "--dry-run", "--ship", ship, "--values", VM, "--", "true")
    assert code == 2 and out == "" and msg in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("args,msg", [
    (["--hosts", "4", "--", "true"], "--hosts 4: the slice has 4 host(s); use --hosts all or a number from 0 to 3"),
    (["--hosts", "x", "--", "true"], "--hosts x: the slice has 4 host(s)"),
    ([], "tpubuild: error: run: no command; write it after --"),
    (["--"], "tpubuild: error: run: no command"),
])
def test_run_refuses_in_one_line(cli, args, msg):
    code, out, err = cli("run", "--dry-run", "--values", VM, *args)
    assert code == 2 and out == "" and msg in err and len(err.strip().splitlines()) == 1


def test_run_refuses_other_architectures(cli):  # mig: tests/shell/test_run_mig.py
    from tests.conftest import NODE

    code, out, err = cli("run", "--dry-run", "--values", NODE, "--", "true")
    assert code == 2 and out == "" and 'tpubuild: error: run works on TPU_ARCH="vm" or "mig"' in err, err


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
    return host_sandbox.wait_until(predicate, timeout, poll=0.5)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def run_help_example() -> list[str]:
    """``tpubuild run --help``'s first example, as the words after ``tpubuild run``."""
    from builder.cli import build_parser

    sub = next(a for a in build_parser(["run"])._actions if a.dest == "command")
    line = next(ln.strip() for ln in sub.choices["run"].epilog.splitlines() if ln.strip().startswith("tpubuild run "))
    return shlex.split(re.split(r"\s{2,}", line)[0])[2:]


def _dry_run(cli, values: Path, words: list[str]) -> str:
    cut = words.index("--")
    code, out, err = cli("run", "--dry-run", "--values", values, *words[:cut], *words[cut:])
    assert code == 0, err
    return out


def test_run_help_example_ships_the_script_and_trains_under_torch_xla(cli, make_env, tmp_path, monkeypatch):
    """The example, from the repository root as a user would type it, on a one-host TPU VM: the
    printed script copies the example to the host, which trains it detached (real torch_xla,
    PJRT on CPU) with the flags the example gives."""
    python = xla_python()
    mount = tmp_path / "mnt"
    values = make_env(VM, MOUNT_POINT=str(mount), TPU_ACCELERATOR_TYPE="v4-8")
    words = run_help_example()
    assert str(EXAMPLE.relative_to(REPO)) in words, words
    monkeypatch.chdir(REPO)
    script = _dry_run(cli, values, words)
    box = tmp_path / "hosts"
    env = host_sandbox.sandbox(box, ["w0"], f"export PJRT_DEVICE=CPU\nexport PATH={python.parent}:$PATH\n",
                               slices=["tpu-v4-pod"])
    r = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr  # returns at once: the job is detached
    assert host_sandbox.calls(box) == ["ssh w0", "ssh w0", "scp w0", "ssh w0"]  # log folder, empty, copy, run
    assert (box / "w0/home/.tpubuild/run" / EXAMPLE.relative_to(REPO)).read_bytes() == EXAMPLE.read_bytes()
    log = mount / "nfs_share/logs/v4-pod/run/host-0.log"
    steps = words[words.index("--steps") + 1]
    assert _wait(lambda: log.exists() and "done after" in log.read_text()), log.read_text() if log.exists() else ""
    text = log.read_text()
    assert "[tpubuild run " in text and f"replica 0 of 1 done after {steps} steps" in text, text
    assert f"step {steps} loss" in text


def test_shipped_files_arrive_on_every_host_and_the_command_runs_among_them(cli, make_env, tmp_path, monkeypatch):
    mount = tmp_path / "mnt"
    values = make_env(VM, MOUNT_POINT=str(mount))
    project = tmp_path / "project"
    (project / "job").mkdir(parents=True)
    (project / "job/hello.sh").write_text('echo "worker=$TPUBUILD_WORKER_NUMBER pwd=$(pwd) data=$(cat job/data.txt)"\n')
    (project / "job/data.txt").write_text("shipped\n")
    monkeypatch.chdir(project)
    names = ["w0", "w1", "w2", "w3"]
    box = tmp_path / "hosts"
    env = host_sandbox.sandbox(box, names, slices=["other", "tpu-v4-pod"])
    script = _dry_run(cli, values, ["--ship", "job", "--", "sh", "job/hello.sh"])
    r = subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    log_dir = mount / "nfs_share/logs/v4-pod/run"
    for worker, name in enumerate(names):
        home = box / name / "home"
        log = log_dir / f"host-{worker}.log"
        want = f"worker={worker} pwd={home}/.tpubuild/run data=shipped"
        assert _wait(lambda: log.exists() and want in log.read_text(), 30), log.read_text() if log.exists() else ""
    # the folder is emptied at each shipping run: a file deleted here is gone there
    (project / "job/data.txt").unlink()
    script = _dry_run(cli, values, ["--hosts", "1", "--ship", "job", "--", "sh", "job/hello.sh"])
    r = subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert not (box / "w1/home/.tpubuild/run/job/data.txt").exists()
    assert (box / "w1/home/.tpubuild/run/job/hello.sh").exists() and (box / "w2/home/.tpubuild/run/job/data.txt").exists()


def test_printed_run_line_refuses_a_host_that_is_not_ready(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("run", "--dry-run", "--values", VM, "--", "touch", "started")
    assert code == 0
    host = Host(tmp_path / "host", "export TPUBUILD_WORKER_NUMBER=0\n")
    (host.root / "run/ready").unlink()
    (host.root / "run/failed").write_text("mount of Filestore failed")
    r = host.sh(command_of(gcloud_lines(out)[1]))
    assert r.returncode == 1 and "is not ready" in r.stderr and "mount of Filestore failed" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (host.root / "home/started").exists()


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
