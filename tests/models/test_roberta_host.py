"""models/roberta on the host: every remote command of ``tpubuild train/stop/logs`` loads the
environment startup.sh wrote and refuses a host that is not ready (run in plain sh against a
host's folders under tmp_path), lib.sh does the same for the scripts, and the scripts are
shellcheck-clean."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import NODE, REPO, require
from tests.support.roberta import VM_EXAMPLE, launcher_and_job


# ------------------------------------------------------------------ the host's environment over ssh

READY_CHECK = "if [ ! -e /run/tpubuild/ready ]; then "
LOAD_PROFILE = "if [ -r /etc/profile.d/tpubuild.sh ]; then . /etc/profile.d/tpubuild.sh; fi; "


def _remote_commands(script: str) -> list[str]:
    return [w[len("--command="):] for line in script.splitlines() if line.startswith(("gcloud", "for vm in"))
            for w in shlex.split(line) if w.startswith("--command=")]


@pytest.mark.parametrize("base", [NODE, VM_EXAMPLE], ids=["node", "vm"])
def test_every_remote_command_loads_the_host_environment(make_env, cli, base):
    """gcloud's `ssh --command` runs a non-login shell that never reads /etc/profile: every
    remote command sources the profile startup.sh wrote; all but stop's also require a finished
    boot (stop works on a host still booting; on node its scripts are staged on Filestore through
    the leader, which needs the share)."""
    path = make_env(base)
    seen = 0
    for args, ready in ((["train", "roberta"], True), (["logs", "--host", "1"], True), (["stop"], False)):
        code, out, err = cli(*args, "--dry-run", "--values", path)
        assert code == 0, err
        commands = _remote_commands(out)
        assert commands, args
        for command in commands:
            if ready or "sudo mkdir -p" in command:
                assert command.startswith(READY_CHECK), command
                assert LOAD_PROFILE in command and command.index(LOAD_PROFILE) > 0
            else:
                assert command.startswith(LOAD_PROFILE) and "/run/tpubuild/ready" not in command, command
        seen += len(commands)
        if args == ["stop"] and base == VM_EXAMPLE:
            assert not any("sudo mkdir" in c for c in commands)
    assert seen >= 6


def _sandboxed(command: str, root: Path) -> str:
    """The exact remote command, with the two host paths moved under ``root``."""
    return command.replace("/run/tpubuild/", f"{root}/run/").replace("/etc/profile.d/", f"{root}/profile.d/")


PROFILE = ("export TPUBUILD_ENV='tpu-dev1'\nexport TPUBUILD_WORKER_NUMBER='2'\nexport PJRT_DEVICE=TPU\n"
           "if [ -z \"${XRT_LOCAL_WORKER:-}\" ]; then\n  export XRT_TPU_CONFIG='tpu_worker;0;10.3.0.2:8470'\nfi\n")


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host's /run/tpubuild and /etc/profile.d, under tmp_path (profile as startup.sh writes it)."""
    (tmp_path / "run").mkdir()
    (tmp_path / "profile.d").mkdir()
    (tmp_path / "profile.d" / "tpubuild.sh").write_text(PROFILE)
    return tmp_path


def test_remote_preamble_in_posix_sh(make_env, host: Path):
    """The preamble runs in plain sh: no ready file is one line naming the reason and the serial
    console, exit 1, and the command does not run; a ready host runs it with the profile's env."""
    launcher, _ = launcher_and_job(make_env(VM_EXAMPLE))
    command = _sandboxed(launcher.on_host("echo ran; printenv PJRT_DEVICE TPUBUILD_WORKER_NUMBER XRT_TPU_CONFIG"), host)
    clean = {"PATH": os.environ["PATH"]}

    r = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=clean)
    assert r.returncode == 1 and r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith("tpubuild: ") and f"is not ready: {host}/run/ready is missing (startup.sh has not finished)" in line
    assert "check its serial console" in line

    (host / "run" / "failed").write_text("FATAL: Filestore 10.0.0.2:/tpushare did not mount after 12 attempts\n")
    r = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=clean)
    assert r.returncode == 1 and r.stdout == ""
    assert "(FATAL: Filestore 10.0.0.2:/tpushare did not mount after 12 attempts)" in r.stderr

    (host / "run" / "ready").write_text("ready\n")
    r = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=clean)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["ran", "TPU", "2", "tpu_worker;0;10.3.0.2:8470"]

    stop = _sandboxed(launcher.on_host("printenv TPUBUILD_ENV", ready=False), host)
    (host / "run" / "ready").unlink()
    r = subprocess.run(["sh", "-c", stop], capture_output=True, text=True, env=clean)
    assert r.returncode == 0 and r.stdout == "tpu-dev1\n"


def _lib(host: Path, snippet: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = f"set -euo pipefail; source {REPO / 'models/roberta/lib.sh'}; {snippet}"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "HOME": str(host), "TPUBUILD_RUN_DIR": str(host / "run"),
                               "TPUBUILD_PROFILE_D": str(host / "profile.d"), **env})


def test_scripts_load_the_profile_and_refuse_a_host_that_is_not_ready(host: Path):
    """lib.sh's host_env, which train.sh (run by xla_dist's own ssh on node), xla_dist.sh and
    stop.sh call: the same refusal and the same environment as the ssh preamble."""
    r = _lib(host, 'host_env vm; echo "$PJRT_DEVICE"')
    assert r.returncode == 1 and r.stdout == ""
    assert re.fullmatch(r"\[roberta \S+ \S+\] error: \S+ is not ready: .*/run/ready is missing "
                        r"\(startup\.sh has not finished\); check its serial console .*\n", r.stderr), r.stderr
    r = _lib(host, 'host_env vm --any; echo "$PJRT_DEVICE $TPUBUILD_ENV"')  # stop.sh
    assert r.returncode == 0 and r.stdout == "TPU tpu-dev1\n", r.stderr
    r = _lib(host, 'host_env local; echo "${PJRT_DEVICE:-unset}"')
    assert r.returncode == 0 and r.stdout == "unset\n"
    (host / "run" / "ready").write_text("ready\n")
    # under xla_dist (XRT_LOCAL_WORKER set) its XRT_TPU_CONFIG wins over the profile's
    r = _lib(host, 'host_env node; echo "$TPUBUILD_ENV ${XRT_TPU_CONFIG:-unset}"', XRT_LOCAL_WORKER="c_tpu_worker:1")
    assert r.returncode == 0 and r.stdout == "tpu-dev1 unset\n", r.stderr

    (host / "run" / "ready").unlink()
    logs = host / "logs"
    for script, args in (("train.sh", ["--log-dir", str(logs), "--arch", "vm", "--", "data-bin"]),
                         ("xla_dist.sh", ["--conda-env", "torch-xla-1.13", "--log-dir", str(logs), "--", "true"])):
        r = subprocess.run(["bash", str(REPO / "models/roberta" / script), *args], capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"], "HOME": str(host), "TPUBUILD_RUN_DIR": str(host / "run"),
                                "TPUBUILD_PROFILE_D": str(host / "profile.d")})
        assert r.returncode == 1 and "is not ready" in r.stderr and len(r.stderr.splitlines()) == 1, (script, r.stderr)
        assert not logs.exists()  # refused before writing anything


def test_shell_scripts_are_shellcheck_clean():
    shellcheck = shutil.which("shellcheck")
    require("shellcheck", shellcheck is not None, "apt-get install shellcheck")
    scripts = sorted(str(p) for p in (REPO / "models/roberta").glob("*.sh"))
    assert len(scripts) >= 5
    r = subprocess.run([str(shellcheck), "-x", *scripts], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    for s in scripts:
        if not s.endswith("lib.sh"):
            assert "set -euo pipefail" in Path(s).read_text(), s
