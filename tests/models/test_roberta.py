"""models/roberta: the launcher's arithmetic and arguments (parsed by real fairseq), its keys'
refusals, and that it needs only the standard library. The ``tpubuild train/stop/logs`` command
lines are test_roberta_commands.py; the host side of those commands test_roberta_host.py."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from tests.conftest import NODE, REPO, SHIPPED, require
from tests.support.roberta import VM_EXAMPLE, launcher_and_job

FAIRSEQ_HOW = "pip install torch==2.13.0 && pip install --no-build-isolation fairseq-fixed==0.12.3.1"


def importable(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


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
