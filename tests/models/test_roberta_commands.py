"""models/roberta through the CLI: the ``tpubuild train/stop/logs`` command lines for node and
vm (dry run), and the printed script run through bash against a recording gcloud."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import NODE, REPO, run_tpubuild
from tests.support.roberta import VM_EXAMPLE, launcher_and_job


# ------------------------------------------------------------------ (d) the CLI: dry-run lines for node and vm

def _host_lines(out: str) -> list[str]:
    return [line.split(" runs: ", 1)[1] for line in out.splitlines() if line.startswith("# host ")]


def _fairseq_part(line: str) -> list[str]:
    words = shlex.split(line)
    return words[words.index("--") + 1:]


def _train_dry_run(make_env, values: Path) -> tuple[ModuleType, Any, str, list[str]]:
    """``tpubuild train roberta --dry-run`` on a copy of ``values`` (both files are 4-host slices:
    v3-32, v4-32): the launcher, its job, the printed script and what each host runs."""
    path = make_env(values)
    launcher, job = launcher_and_job(path)
    r = run_tpubuild("train", "roberta", "--dry-run", "--values", path)
    assert r.returncode == 0, r.stderr
    hosts = _host_lines(r.stdout)
    assert len(hosts) == 4
    return launcher, job, r.stdout, hosts


def test_train_dry_run_node_runs_xla_dist_from_the_leader(make_env):
    launcher, job, out, hosts = _train_dry_run(make_env, NODE)
    for line in hosts:
        assert _fairseq_part(line) == launcher.fairseq_args(job)
        assert "PJRT_DEVICE" not in line and "--conda-env torch-xla-1.13" in line
    assert "# global batch 2048 sequences = 32 devices x 16 x --update-freq 4" in out
    leader = next(line for line in out.splitlines() if line.startswith("# the leader runs: "))
    words = shlex.split(leader.split(": ", 1)[1])
    dist = words.index("torch_xla.distributed.xla_dist")
    assert words[dist - 2:dist + 3] == ["python", "-m", "torch_xla.distributed.xla_dist", "--tpu=tpu-tpu-dev1",
                                        "--conda-env=torch-xla-1.13"]
    assert "--restart-tpuvm-pod-server" not in words
    script = out
    assert 'list-instances worker-tpu-dev1 --zone=europe-west4-a' in script
    assert "gcloud compute tpus" not in script and "--tunnel-through-iap" in script
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0


def test_train_dry_run_vm_runs_every_worker_with_pjrt(make_env):
    launcher, job, out, hosts = _train_dry_run(make_env, VM_EXAMPLE)
    for line in hosts:
        words = shlex.split(line)
        assert words[:3] == ["env", "PJRT_DEVICE=TPU", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1"]
        assert "XLA_USE_BF16=1" not in words and "--bf16" in words  # torch_xla 2.9 has no XLA_USE_BF16
        assert _fairseq_part(line) == launcher.fairseq_args(job)
    assert "xla_dist" not in out
    launch = [line for line in out.splitlines() if line.startswith("gcloud") and "train.sh" in line]
    assert len(launch) == 1
    words = shlex.split(launch[0])
    # IAP: alpha track; the slice's live slot, found first (tpu-v4-pod or tpu-v4-pod-b: models/hosts.py)
    assert words[:7] == ["gcloud", "alpha", "compute", "tpus", "tpu-vm", "ssh", "$TPUBUILD_TPU"]
    assert "'--format=value(name.basename())')" in out and "tpu-v4-pod|tpu-v4-pod-b)" in out
    assert "--worker=all" in words and "--zone=us-central2-b" in words
    command = next(w for w in words if w.startswith("--command="))[len("--command="):]
    # the host's profile first (a non-login ssh shell never reads it), PJRT_DEVICE=TPU still explicit
    assert command.startswith("if [ ! -e /run/tpubuild/ready ]; then ")
    assert "; if [ -r /etc/profile.d/tpubuild.sh ]; then . /etc/profile.d/tpubuild.sh; fi; " \
           "setsid nohup env PJRT_DEVICE=TPU " in command and command.endswith(" &")
    assert command == launcher.on_host(f"setsid nohup {launcher.host_train_line(job)} >/dev/null 2>&1 </dev/null &")
    prep = next(line for line in out.splitlines() if "prepare_data.sh" in line)
    assert "--worker=0" in prep and "--source /mnt/common/shared_pd/wikitext" in prep
    install = next(line for line in out.splitlines() if "install.sh" in line)
    assert "--torch-xla 2.9.0" in install and "--worker=all" in install
    assert "--torch-index https://download.pytorch.org/whl/cpu" in install
    assert "--wheelhouse /mnt/common/nfs_share/wheelhouse/" in install and "--fairseq fairseq-fixed==0.12.3.1" in install


def test_stop_dry_run_frees_every_host(make_env, cli):
    code, out, _ = cli("stop", "--dry-run", "--values", make_env(VM_EXAMPLE))
    assert code == 0
    stop = [shlex.split(line) for line in out.splitlines() if "stop.sh" in line]
    assert len(stop) == 1 and "--worker=all" in stop[0]
    # stop loads the profile but works on a host that is not ready (still booting, or failed)
    assert ("--command=if [ -r /etc/profile.d/tpubuild.sh ]; then . /etc/profile.d/tpubuild.sh; fi; "
            "bash .tpubuild/roberta/stop.sh --arch vm") in stop[0]
    assert "/run/tpubuild/ready" not in " ".join(stop[0])
    stop_sh = (REPO / "models/roberta/stop.sh").read_text()
    assert "lsof -t" in stop_sh and "/dev/accel*" in stop_sh and "/dev/vfio/*" in stop_sh

    code, out, _ = cli("stop", "--dry-run", "--values", make_env(NODE))
    assert code == 0
    assert "stop.sh --arch node --leader" in out  # xla_dist on the leader first
    loop = next(line for line in out.splitlines() if line.startswith("for vm in $("))
    assert "list-instances worker-tpu-dev1" in loop and "stop.sh --arch node'" in loop


def test_logs_dry_run_and_host_range(make_env, cli):
    code, out, _ = cli("logs", "--host", "2", "--follow", "--dry-run", "--values", make_env(VM_EXAMPLE))
    assert code == 0
    assert "tail -n 200 -F /mnt/common/nfs_share/logs/v4-pod/roberta/host-2.log" in out
    code, out, err = cli("logs", "--host", "4", "--dry-run", "--values", make_env(VM_EXAMPLE))
    assert code == 2 and "host 4 does not exist on v4-32 (4 hosts); use --host 0 to 3" in err


def test_unknown_model_lists_models(make_env, cli):
    code, _, err = cli("train", "bert", "--dry-run", "--values", make_env())
    assert code == 2
    assert err.strip() == ("tpubuild: error: unknown model 'bert'; available models: roberta, roberta_torchtpu, torchtpu "
                           "(folders under models/ with a launcher.py)")


FAKE_GCLOUD = """#!/usr/bin/env python3
import json, os, sys
with open(os.environ["GCLOUD_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if "list-instances" in sys.argv:
    names = ["worker-tpu-dev1-abcd", "worker-tpu-dev1-efgh"]
    print("\\n".join(names[:1] if "--limit=1" in sys.argv else names))
if "tpu-vm" in sys.argv and "list" in sys.argv:  # after a make-before-break swap: slot b
    print("tpu-v4-podx\\ntpu-v4-pod-b")
"""


@pytest.mark.parametrize("base", [NODE, VM_EXAMPLE], ids=["node", "vm"])
def test_train_runs_the_printed_script_through_bash(make_env, tmp_path, base):
    """Without --dry-run the same script runs: gcloud (a recording stand-in on PATH) receives
    exactly the per-host command lines the dry run printed."""
    path = make_env(base)
    launcher, job = launcher_and_job(path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "gcloud").write_text(FAKE_GCLOUD)
    (bindir / "gcloud").chmod(0o755)
    log = tmp_path / "gcloud.jsonl"
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "GCLOUD_LOG": str(log)}
    r = run_tpubuild("train", "roberta", "--values", path, env=env)
    assert r.returncode == 0, r.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    commands = [c.split("=", 1)[1] for call in calls for c in call if c.startswith("--command=")]
    launch = commands[-1]
    if job.arch == "vm":
        assert launch == launcher.on_host(f"setsid nohup {launcher.host_train_line(job)} >/dev/null 2>&1 </dev/null &")
        assert [c for c in calls[-1] if c.startswith("--worker")] == ["--worker=all"]
        assert calls[0][:4] == ["compute", "tpus", "tpu-vm", "list"]
        # scp: the destination is the one argument with a host (its sources are local paths)
        names = {call[5] if call[4] == "ssh" else
                 next(a for a in call[5:] if ":" in a and not a.startswith("--")).split(":", 1)[0] for call in calls[1:]}
        assert names == {"tpu-v4-pod-b"}  # every ssh/scp to the live slot
    else:
        assert launch == launcher.on_host(f"setsid nohup {launcher.leader_launch_line(job)} >/dev/null 2>&1 </dev/null &")
        assert calls[-1][:3] == ["compute", "ssh", "worker-tpu-dev1-abcd"]  # the leader
        installs = [call for call in calls if any("install.sh" in c for c in call)]
        assert [call[2] for call in installs] == ["worker-tpu-dev1-abcd", "worker-tpu-dev1-efgh"]
    assert "running detached on 4 host(s)" in r.stdout


def test_train_fails_in_one_line_when_a_gcloud_call_fails(make_env, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "gcloud").write_text("#!/bin/sh\necho 'ERROR: (gcloud) no such TPU' >&2\nexit 1\n")
    (bindir / "gcloud").chmod(0o755)
    r = run_tpubuild("train", "roberta", "--values", make_env(VM_EXAMPLE),
                     env={"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"})
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "tpubuild: error: could not launch roberta on tpu-v4-pod or tpu-v4-pod-b (whichever exists): a command failed with exit code 1 "
        "(its output is above); rerun with --dry-run to see each command")
    assert "no such TPU" in r.stderr
