"""models/roberta: the launcher's arithmetic and arguments (parsed by real fairseq), and the
``tpubuild train/stop/logs`` command lines for node and vm."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from builder.commands.train import load_launcher
from builder.config import load
from tests.conftest import EXAMPLES, NODE, REPO, SHIPPED, require, run_tpubuild

VM_EXAMPLE = EXAMPLES / "vm-v4-32.env"
FAIRSEQ_HOW = "pip install torch==2.13.0 && pip install --no-build-isolation fairseq-fixed==0.12.3.1"


def importable(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def launcher_and_job(path: Path) -> tuple[ModuleType, Any]:
    settings = load(path)
    launcher, _ = load_launcher(settings, "roberta")
    return launcher, launcher.Job.from_settings(settings)


# ------------------------------------------------------------------ (c) global batch by table

VM = {"TPU_ARCH": "vm"}
TABLE = [
    # accelerator, base file, overrides, devices, total batch, per device, expected --update-freq
    ("v3-8", SHIPPED, {}, 8, 2048, 16, 16),
    ("v3-32", SHIPPED, {}, 32, 2048, 16, 4),
    ("v3-128", SHIPPED, {}, 128, 2048, 16, 1),
    ("v3-512", SHIPPED, {}, 512, 8192, 8, 2),
    ("v4-32", VM_EXAMPLE, {}, 16, 2048, 16, 8),
    ("v5litepod-16", VM_EXAMPLE, {"TPU_RUNTIME_VERSION": "v2-alpha-tpuv5-lite", "ZONE": "us-west4-a"}, 16, 2048, 16, 8),
    ("v6e-8", VM_EXAMPLE, {"TPU_RUNTIME_VERSION": "v2-alpha-tpuv6e", "ZONE": "us-east5-b", "SHARED_PD_DISK_ATTACH": "false"},
     8, 2048, 16, 16),
]


@pytest.mark.parametrize("accel,base,over,devices,total,per,freq", TABLE, ids=[r[0] for r in TABLE])
def test_global_batch_is_the_configured_one_on_every_pod_size(make_env, accel, base, over, devices, total, per, freq):
    path = make_env(base, TPU_ACCELERATOR_TYPE=accel, ROBERTA_TOTAL_BATCH=str(total),
                    ROBERTA_BATCH_PER_DEVICE=str(per), **over)
    launcher, job = launcher_and_job(path)
    assert launcher.world_size(job) == devices
    args = launcher.fairseq_args(job)
    assert args[args.index("--update-freq") + 1] == str(freq)
    assert args[args.index("--distributed-world-size") + 1] == str(devices)
    assert launcher.sequences_per_update(args) == total


def test_v3_32_and_v3_128_give_the_same_sequences_per_update(make_env):
    seqs = []
    for accel in ("v3-32", "v3-128"):
        launcher, job = launcher_and_job(make_env(TPU_ACCELERATOR_TYPE=accel))
        seqs.append(launcher.sequences_per_update(launcher.fairseq_args(job)))
    assert seqs == [2048, 2048]


def test_batch_that_cannot_divide_is_one_clear_line_at_the_key(make_env, cli):
    path = make_env(TPU_ACCELERATOR_TYPE="v3-512")  # 512 devices x 16 > 2048
    code, out, err = cli("train", "roberta", "--dry-run", "--values", path)
    line = path.read_text().splitlines().index('ROBERTA_TOTAL_BATCH="2048" # sequences per update across the whole pod; '
                                                "--update-freq keeps it fixed on any pod size") + 1
    assert code == 2 and out == ""
    assert err.startswith(f"tpubuild: error: {path}:{line}: ROBERTA_TOTAL_BATCH: one step of the pod already holds "
                          "512 devices × 16 = 8192 sequences")
    assert 'set ROBERTA_BATCH_PER_DEVICE="4"' in err and len(err.strip().splitlines()) == 1

    path = make_env(ROBERTA_TOTAL_BATCH="1000")  # v3-32: 32 x 16 = 512 does not divide 1000
    code, _, err = cli("train", "roberta", "--dry-run", "--values", path)
    assert code == 2
    assert "ROBERTA_TOTAL_BATCH=1000 is not a multiple of 32 devices × 16 sequences = 512" in err
    assert 'set ROBERTA_TOTAL_BATCH="1024"' in err


@hsettings(max_examples=200, deadline=None)
@given(world=st.sampled_from([8, 16, 32, 64, 128, 256, 512]), per=st.integers(1, 64), total=st.integers(1, 1 << 16))
def test_update_freq_is_exact_or_refuses(world, per, total):
    launcher, _ = _LAUNCHER
    try:
        freq = launcher.update_freq(total, world, per)
    except launcher.LaunchError as exc:
        assert total % (world * per) != 0 and exc.key == "ROBERTA_TOTAL_BATCH"
        # every fix it proposes is itself a working configuration
        for n in re.findall(r'ROBERTA_BATCH_PER_DEVICE="(\d+)"', exc.fix):
            assert total % (world * int(n)) == 0
        (up,) = re.findall(r'ROBERTA_TOTAL_BATCH="(\d+)"', exc.fix)
        assert int(up) % (world * per) == 0 and int(up) > total
    else:
        assert freq >= 1 and world * per * freq == total


def _shipped_launcher() -> tuple[ModuleType, Any]:
    return launcher_and_job(NODE)


_LAUNCHER = _shipped_launcher()


# ------------------------------------------------------------------ (a) real fairseq parses our arguments

PARSE_CASES = [
    ("v3-32 node", NODE, {}, "tpu-dev1", 32, 4),
    ("v3-128 node", NODE, {"TPU_ACCELERATOR_TYPE": "v3-128"}, "tpu-dev1", 128, 1),
    ("v4-32 vm", VM_EXAMPLE, {}, "v4-pod", 16, 8),
]


@pytest.mark.parametrize("name,base,over,env,world,freq", PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_fairseq_training_parser_accepts_the_exact_arguments(make_env, name, base, over, env, world, freq):
    require("fairseq", importable("fairseq"), FAIRSEQ_HOW)
    from fairseq import options

    launcher, job = launcher_and_job(make_env(base, **over))
    args = launcher.fairseq_args(job)
    assert "--tpu" in args
    parsed = options.parse_args_and_arch(options.get_training_parser(), input_args=args)
    assert parsed.tpu is True and parsed.cpu is False
    assert parsed.data == f"/mnt/common/nfs_share/data-bin/{env}/roberta"
    assert parsed.task == "masked_lm" and parsed.arch == "roberta_base" and parsed.criterion == "masked_lm"
    assert parsed.update_freq == [freq]
    assert parsed.batch_size == 16 and parsed.required_batch_size_multiple == 1
    assert parsed.distributed_world_size == world
    assert parsed.distributed_world_size * parsed.batch_size * parsed.update_freq[0] == 2048
    assert parsed.tokens_per_sample == 512 and parsed.max_positions == 512
    assert parsed.sample_break_mode == "none" and parsed.skip_remainder_batch is True
    assert parsed.save_dir == f"/mnt/common/nfs_share/checkpoints/{env}/roberta"
    assert parsed.restore_file == "checkpoint_last.pt" and parsed.reset_optimizer is False
    assert parsed.max_update == 125000 and float(parsed.total_num_update) == 125000
    assert parsed.lr == [0.0005] and parsed.warmup_updates == 10000 and parsed.lr_scheduler == "polynomial_decay"
    assert parsed.save_interval_updates == 2000 and parsed.keep_interval_updates == 3
    assert parsed.no_epoch_checkpoints is True
    # what fairseq-train itself trains with: the typed config built from these arguments
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    cfg = convert_namespace_to_omegaconf(parsed)
    assert cfg.common.tpu is True and cfg.distributed_training.distributed_world_size == world
    assert list(cfg.optimization.update_freq) == [freq] and cfg.dataset.batch_size == 16
    assert cfg.checkpoint.save_dir == parsed.save_dir and cfg.checkpoint.restore_file == "checkpoint_last.pt"
    assert cfg.lr_scheduler.total_num_update == 125000 and cfg.task.tokens_per_sample == 512
    assert ast.literal_eval(cfg.optimizer.adam_betas) == (0.9, 0.98)  # fairseq evaluates this string


@pytest.mark.parametrize("scheduler", ["inverse_sqrt", "cosine"])
def test_other_schedulers_and_extra_args_parse(make_env, scheduler):
    require("fairseq", importable("fairseq"), FAIRSEQ_HOW)
    from fairseq import options

    path = make_env(ROBERTA_LR_SCHEDULER=scheduler, ROBERTA_LR="1e-4", ROBERTA_SEQ_LEN="128",
                    ROBERTA_ARCH="roberta_large", ROBERTA_EXTRA_ARGS="--dropout 0.2 --seed 7")
    launcher, job = launcher_and_job(path)
    args = launcher.fairseq_args(job)
    assert "--total-num-update" not in args
    parsed = options.parse_args_and_arch(options.get_training_parser(), input_args=args)
    assert parsed.lr_scheduler == scheduler and parsed.lr == [0.0001]
    assert parsed.arch == "roberta_large" and parsed.encoder_layers == 24
    assert parsed.tokens_per_sample == 128 and parsed.max_positions == 128
    assert parsed.dropout == 0.2 and parsed.seed == 7


def test_bad_model_keys_are_one_line_at_their_line(make_env, cli):
    for key, value, what in (
        ("ROBERTA_LR", "fast", "is not a number"),
        ("ROBERTA_BPE", "sentencepiece", "is not allowed; use one of gpt2, none"),
        ("ROBERTA_DATA_SOURCE", "gs://b/x/*", "is not a gs:// folder"),
        ("ROBERTA_SEQ_LEN", "0", "out of range"),
        ("ROBERTA_FAIRSEQ_VERSION", "latest", "is not a pinned fairseq"),
    ):
        path = make_env(**{key: value})
        line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if t.startswith(f"{key}="))
        code, _, err = cli("train", "roberta", "--dry-run", "--values", path)
        assert code == 2, key
        assert err.startswith(f"tpubuild: error: {path}:{line}: {key}: ") and what in err, err


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
    assert words[:7] == ["gcloud", "alpha", "compute", "tpus", "tpu-vm", "ssh", "tpu-v4-pod"]  # IAP: alpha track
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
    assert err.strip() == ("tpubuild: error: unknown model 'bert'; available models: roberta "
                           "(folders under models/ with a launcher.py)")


FAKE_GCLOUD = """#!/usr/bin/env python3
import json, os, sys
with open(os.environ["GCLOUD_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if "list-instances" in sys.argv:
    names = ["worker-tpu-dev1-abcd", "worker-tpu-dev1-efgh"]
    print("\\n".join(names[:1] if "--limit=1" in sys.argv else names))
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
        "tpubuild: error: could not launch roberta on tpu-v4-pod: a command failed with exit code 1 "
        "(its output is above); rerun with --dry-run to see each command")
    assert "no such TPU" in r.stderr


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


def test_launcher_is_standard_library_only():
    """It runs on hosts and in Cloud Build steps without tpubuild installed."""
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); import models.roberta.launcher; "
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('builder', 'fairseq', 'torch', 'google')); "
        "print(bad)"
    )
    r = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
