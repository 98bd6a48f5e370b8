"""models/roberta_torchtpu: RoBERTa pretraining on TorchTPU, proven offline.

* ``train roberta_torchtpu --dry-run`` for the v6e-16 mig and v5p-32 vm examples: four ``host N``
  blocks, the global batch and the pretrain.py arguments the ROBERTA_* keys set; validate refuses a
  batch that does not divide, and an update that changes ROBERTA_SEQ_LEN;
* rdata.py reads the data-bin exactly as fairseq does (MMapIndexedDataset, Dictionary + <mask>),
  and an update trains exactly its positions whatever the world size;
* slow, in the TorchTPU venv: the launch lines' train.sh under torchrun with 2 CPU processes trains
  a tiny RoBERTa on a corpus our prepare step (models/roberta/prepare_data.sh) made, and the loss
  falls; a run stopped and resumed at 2 -> 4 -> 2 processes trains exactly the sequences of the
  unresized run, update by update (sequence ids, not losses).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from builder.config import load, model_registry
from tests.conftest import EXAMPLES, REPO, require, rewrite_env, run_tpubuild
from tests.support.side_venv import torchtpu_python
from tests.support.torchrun_hosts import run_hosts

LAUNCHER = model_registry.load(model_registry.SOURCE_MODELS, "roberta_torchtpu.launcher")
LAUNCH = model_registry.load(model_registry.SOURCE_MODELS, "torchtpu.launch")
PLAN = model_registry.load(model_registry.SOURCE_MODELS, "roberta_torchtpu.plan")
CODE = REPO / "models/roberta_torchtpu"
sys.path.insert(0, str(CODE))
require("numpy", importlib.util.find_spec("numpy") is not None, "pip install numpy (CI's main venv has it with torch)")
import rdata  # noqa: E402  (models/roberta_torchtpu/rdata.py: numpy only, as on the hosts)
import seqtrace  # noqa: E402  (models/roberta_torchtpu/seqtrace.py: the comparison a real slice's check runs too)

TINY = "--layers 2 --embed-dim 32 --heads 2 --ffn-dim 64 --trace-dir {trace}"
#: seconds the simulated hosts get for one run (each imports torch with torch-tpu: ~20 s on 2 idle cores,
#: minutes on a loaded machine)
DEADLINE_S = 600


def _blocks(out: str) -> list[tuple[dict[str, str], list[str]]]:
    lines = out.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.startswith("# host "):
            env = dict(w.split("=", 1) for w in shlex.split(lines[i + 1].removeprefix("#   env ")))
            found.append((env, shlex.split(lines[i + 2].removeprefix("#   "))))
    return found


@pytest.mark.parametrize("example,topology", [("mig-v6e-16-roberta-torchtpu.env", "4x4"),
                                              ("vm-v5p-32-roberta-torchtpu.env", "2x2x4")])
def test_dry_run_shows_each_hosts_launch_with_the_roberta_keys(example: str, topology: str) -> None:
    r = run_tpubuild("train", "roberta_torchtpu", "--dry-run", "--values", EXAMPLES / example)
    assert r.returncode == 0, r.stderr
    blocks = _blocks(r.stdout)
    assert len(blocks) == 4
    assert "# global batch 2048 sequences = 4 process(es) x 64 (16 per chip x 4 chips) x 8 micro-steps" in r.stdout
    for rank, (env, command) in enumerate(blocks):
        assert env["NODE_RANK"] == str(rank) and env["TORCH_TPU_TOPOLOGY"] == topology and env["NNODES"] == "4"
        assert command == blocks[0][1]
        args = command[command.index("--") + 1:]
        assert args[0] == "models/roberta_torchtpu/pretrain.py"
        opts = dict(zip(args[1::2], args[2::2]))
        assert opts["--total-batch"] == "2048" and opts["--devices-per-process"] == "4"
        assert opts["--data"].endswith("/nfs_share/data-bin/" + opts["--data"].split("/")[-2] + "/roberta")
    assert "models/roberta_torchtpu/rdata.py" in r.stdout and "the data-bin on Filestore" in r.stdout
    assert subprocess.run(["bash", "-n"], input=r.stdout, text=True).returncode == 0


def test_validate_refuses_a_batch_that_does_not_divide(make_env) -> None:
    values = make_env(EXAMPLES / "vm-v5p-32-roberta-torchtpu.env", ROBERTA_TOTAL_BATCH="1000")
    r = run_tpubuild("validate", "--values", values)
    assert r.returncode == 2
    assert 'does not divide into 16 chips x 16 sequences; set ROBERTA_TOTAL_BATCH="1024"' in r.stderr


def test_an_update_that_changes_the_sequence_length_is_refused(make_env, tmp_path: Path) -> None:
    applied = make_env(EXAMPLES / "vm-v5p-32-roberta-torchtpu.env")
    changed = make_env(EXAMPLES / "vm-v5p-32-roberta-torchtpu.env", ROBERTA_SEQ_LEN="256")
    r = run_tpubuild("validate", "--values", changed, "--applied", applied)
    assert r.returncode == 2 and "ROBERTA_SEQ_LEN changes from 512 to 256" in r.stderr, r.stderr
    ok = run_tpubuild("validate", "--values", make_env(changed, ROBERTA_RESUME="reset-data"), "--applied", applied)
    assert ok.returncode == 0, ok.stderr


def write_corpus(folder: Path) -> None:
    """Pre-tokenised text with structure to learn: each line counts up by one from a start."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in (("train.txt", 400), ("valid.txt", 20)):
        with (folder / name).open("w") as f:
            for i in range(lines):
                start = (i * 7) % 30
                f.write(" ".join(f"w{(start + k) % 30}" for k in range(12 + i % 9)) + "\n")


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory) -> Path:
    """The tiny corpus through our prepare step (models/roberta/prepare_data.sh, fairseq in this venv)."""
    require("fairseq", importlib.util.find_spec("fairseq") is not None,
            "pip install torch==2.13.0 && pip install --no-build-isolation fairseq-fixed==0.12.3.1")
    root = tmp_path_factory.mktemp("roberta-torchtpu-data")
    write_corpus(root / "raw")
    out = root / "data-bin"
    r = subprocess.run(["bash", str(REPO / "models/roberta/prepare_data.sh"), "--source", str(root / "raw"),
                        "--bpe", "none", "--dest", str(out), "--python", sys.executable, "--workers", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.mark.slow  # imports fairseq (~10 s)
def test_the_reader_reads_the_data_bin_as_fairseq_does(data_bin: Path) -> None:
    import numpy as np
    from fairseq.data import Dictionary, data_utils

    ds = data_utils.load_indexed_dataset(str(data_bin / "train"), None, "mmap")
    corpus = rdata.Corpus(data_bin, "train", 32, seed=1)
    flat = np.concatenate([ds[i].numpy() for i in range(len(ds))])
    assert (np.asarray(corpus.tokens) == flat).all()
    dictionary = Dictionary.load(str(data_bin / "dict.txt"))
    assert dictionary.add_symbol("<mask>") == corpus.mask_idx and len(dictionary) == corpus.vocab
    seq, epoch = corpus.at(5)
    inp, tgt = corpus.sample(seq, epoch)
    again = rdata.Corpus(data_bin, "train", 32, seed=1).sample(seq, epoch)
    assert (inp == again[0]).all() and (tgt == again[1]).all()  # the masking is a function of (seed, epoch, id)
    assert inp[0] == rdata.BOS and (tgt != rdata.PAD).sum() > 0
    assert sorted(corpus.at(p)[0] for p in range(corpus.count)) == list(range(corpus.count))  # a permutation


@pytest.mark.parametrize("world,per_rank", [(1, 16), (2, 4), (4, 4), (4, 2)])
def test_an_update_trains_exactly_its_positions_at_any_world_size(world: int, per_rank: int) -> None:
    got = sorted(p for rank in range(world) for r in rdata.split_update(48, 32, world, rank, per_rank) for p in r)
    assert got == list(range(48, 80))
    with pytest.raises(rdata.DataError, match="does not divide"):
        rdata.split_update(0, 30, world, 0, 4)


#: the tiny run: 16 sequences of 32 tokens per update, 1 per chip (4 per host: v6e's chips), so 2
#: micro-steps per update at 2 processes and 1 at 4
TINY_KEYS = dict(ROBERTA_TOTAL_BATCH="16", ROBERTA_BATCH_PER_DEVICE="1", ROBERTA_SEQ_LEN="32",
                 ROBERTA_MAX_UPDATES="30", ROBERTA_WARMUP_UPDATES="3", ROBERTA_LR="0.01", ROBERTA_BF16="false",
                 ROBERTA_SAVE_INTERVAL_UPDATES="10")


def _job(root: Path, data_bin: Path, args: str):
    """The example's job, Filestore under ``root``, the data-bin copied where the launch reads it."""
    values = root / "values.env"
    values.write_text(rewrite_env((EXAMPLES / "mig-v6e-16-roberta-torchtpu.env").read_text(), **TINY_KEYS,
                                  MOUNT_POINT=str(root / "mnt"), ROBERTA_TORCHTPU_ARGS=args))
    job = LAUNCHER.Job.from_settings(load(values))
    if not Path(LAUNCHER.data_bin(job)).exists():
        shutil.copytree(data_bin, LAUNCHER.data_bin(job))
    return job


def _train(job, world: int, out: Path, meanwhile=None) -> list[str]:
    """The launch's train.sh words and each host's environment (launch.py ``host_env``: what the
    dry run prints), ``world`` hosts on this machine; each host's log."""
    python = torchtpu_python()
    job = dataclasses.replace(job, hosts=world)
    words = LAUNCH.train_words(job, str(REPO / "models/torchtpu"), str(REPO))
    assert words[words.index("--") + 1:] == ["models/roberta_torchtpu/pretrain.py", *job.args]
    words[words.index("--profiler-port") + 1] = ""  # no profiler server here (train.sh: none when empty)
    hosts = [(words, env) for env in LAUNCH.host_env(job, ["127.0.0.1"] * world)]
    log = [Path(LAUNCH.host_log(job, rank)) for rank in range(world)]
    for rank, r in enumerate(run_hosts(python, hosts, out, DEADLINE_S, lambda rank: log[rank], meanwhile=meanwhile)):
        assert r.returncode == 0, log[rank].read_text(errors="replace")[-3000:] if log[rank].exists() else r.stdout
    return [path.read_text() for path in log]


def test_the_trace_comparison_names_each_update_that_differs(tmp_path: Path) -> None:
    def write(folder: Path, rows: list[tuple[int, int, list[int]]]) -> Path:
        folder.mkdir()
        for rank in (0, 1):
            (folder / f"rank-{rank}.jsonl").write_text("".join(
                json.dumps({"update": u, "rank": rank, "world": w, "ids": ids[rank::2]}) + "\n" for u, w, ids in rows))
        return folder

    straight = write(tmp_path / "straight", [(1, 2, [5, 1, 7, 3]), (2, 2, [0, 2, 4, 6])])
    same = write(tmp_path / "same", [(1, 2, [1, 3, 5, 7]), (2, 2, [6, 4, 2, 0])])
    skipped = write(tmp_path / "skipped", [(1, 2, [1, 3, 5, 7]), (2, 2, [6, 4, 2, 8]), (3, 2, [9, 9, 9, 9])])
    assert seqtrace.differences(same, straight) == [] and seqtrace.main([str(same), str(straight)]) == 0
    assert seqtrace.differences(skipped, straight) == [
        "update 2: 1 sequence(s) differ", f"update 3: not in {straight} (train it at least as far)"]
    assert seqtrace.main([str(skipped), str(straight)]) == 1


def _losses(log: str) -> list[float]:
    return [float(re.search(r" loss=([0-9.]+)", ln).group(1)) for ln in log.splitlines()
            if ln.startswith("tpubuild-step rank=0/")]


@pytest.fixture(scope="module")
def straight(data_bin: Path, tmp_path_factory) -> tuple[Path, list[str]]:
    """30 updates at 2 processes, never stopped: its trace and its hosts' logs."""
    root = tmp_path_factory.mktemp("straight")
    job = _job(root, data_bin, TINY.format(trace=root / "trace"))
    return root / "trace", _train(job, 2, root / "out")


@pytest.mark.slow
def test_the_launch_lines_train_roberta_under_torchrun_on_cpu_and_the_loss_falls(straight) -> None:
    traced, logs = straight
    losses = _losses(logs[0])
    assert len(losses) == 30
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < first - 0.3, losses  # bits per masked token (uniform over the corpus: ~5.3)
    assert "tpubuild-done updates=30 consumed=480 world=2" in logs[0]
    assert "update_freq=2" in logs[1] and "tpubuild-step rank=1/2 update=30" in logs[1]
    assert all(len(ids) == 16 for ids in seqtrace.updates(traced).values())


@pytest.mark.slow
def test_resumed_at_2_4_2_processes_it_trains_exactly_the_unresized_runs_sequences(straight, data_bin,
                                                                                 tmp_path: Path) -> None:
    """Stopped after updates 2 and 4 (``--stop-at-update``: the SIGTERM path), relaunched at 4 then 2
    processes from checkpoint_last.pt: every update's sequences are the unresized run's."""
    traced = tmp_path / "trace"
    for world, stop_at in ((2, 2), (4, 4), (2, 6)):
        job = _job(tmp_path, data_bin, TINY.format(trace=traced) + f" --stop-at-update {stop_at}")
        logs = _train(job, world, tmp_path / f"out-{world}-{stop_at}")
        assert f"tpubuild-done updates={stop_at} consumed={16 * stop_at} world={world}" in logs[0]
        if stop_at > 2:
            before = saved = 2 if world == 4 else 4  # the previous phase's last update, and its world size
            assert all(f"tpubuild-resume update={before} next_position={16 * before} epoch=0 offset={16 * before} "
                       f"saved_world={saved} world={world}" in log for log in logs)
    assert list(seqtrace.updates(traced)) == [1, 2, 3, 4, 5, 6]
    assert seqtrace.differences(traced, straight[0]) == []
    assert seqtrace.main([str(traced), str(straight[0])]) == 0
    worlds = seqtrace.worlds(traced)
    assert worlds == {1: 2, 2: 2, 3: 4, 4: 4, 5: 2, 6: 2}


@pytest.mark.slow
def test_sigterm_checkpoints_at_an_update_boundary_and_the_relaunch_goes_on_from_there(data_bin, tmp_path: Path) -> None:
    """What ``tpubuild stop`` (stop.sh --pattern) and a preemption's shutdown send: SIGTERM to the
    training processes mid-run. Every rank stops at the same update, rank 0 writes
    checkpoint_last.pt, all exit 0; the relaunch resumes at the next sequence."""
    job = _job(tmp_path, data_bin, TINY.format(trace=tmp_path / "trace") + " --save-interval-updates 1000")
    job = dataclasses.replace(job, options={**job.options, "roberta_max_updates": 10_000})
    job = dataclasses.replace(job, args=tuple(PLAN.arguments(job)))
    log0 = Path(LAUNCH.host_log(dataclasses.replace(job, hosts=2), 0))
    sent: list[int] = []

    def stop_once_training() -> None:
        if sent or not log0.exists() or "update=3 " not in log0.read_text():
            return
        # our own workers only: their command line names this test's save dir
        pids = subprocess.run(["pgrep", "-f", f"{LAUNCHER.TRAINING} .*{LAUNCHER.save_dir(job)}"], capture_output=True,
                              text=True).stdout.split()
        assert len(pids) == 2, pids
        for pid in pids:
            os.kill(int(pid), signal.SIGTERM)
        sent.extend(int(p) for p in pids)

    logs = _train(job, 2, tmp_path / "out", meanwhile=stop_once_training)
    assert sent
    done = re.search(r"tpubuild-done updates=(\d+) consumed=(\d+) world=2", logs[0])
    assert done, logs[0][-2000:]
    stopped = int(done.group(1))
    assert 3 <= stopped < 10_000 and int(done.group(2)) == 16 * stopped
    assert max(seqtrace.updates(tmp_path / "trace")) == stopped  # no rank went past the agreed update
    again = dataclasses.replace(job, args=(*job.args, "--stop-at-update", str(stopped + 1)))
    logs = _train(again, 2, tmp_path / "again")
    assert f"tpubuild-resume update={stopped} next_position={16 * stopped}" in logs[1]
    assert f"tpubuild-done updates={stopped + 1} consumed={16 * (stopped + 1)} world=2" in logs[0]
