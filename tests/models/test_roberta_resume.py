"""Exact resume across world sizes (models/roberta/resume.py), with fairseq's own data iterators.

The masked_lm task on a small corpus prepared by our prepare_data.sh, configured by the exact
``fairseq-train`` arguments the launcher emits for v4-8, v4-32 and v4-64 (world sizes 4, 16 and
32, ``--update-freq`` 8, 2 and 1 for the same global batch), ``--tpu`` swapped for ``--cpu``. A
pod of W devices is W ``EpochBatchIterator`` shards, driven as ``fairseq_cli.train`` drives one
(``next_epoch_itr``, ``GroupedIterator`` by ``--update-freq`` with ``--skip-remainder-batch``).
A run is stopped at a step (a preemption or a resize), its position saved in a checkpoint file as
fairseq saves it (``extra_state["train_iterator"]`` of rank 0, the ``cfg``), read back through
fairseq's checkpoint reader and loaded at the new size; the sequences of every update are then
compared with one unresized run: the same, update by update, none skipped, none repeated.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from pathlib import Path

import pytest

from models.roberta import resume
from tests.conftest import require, rewrite_env
from tests.models.test_roberta_e2e import prepare, write_corpus
from tests.support.roberta import VM_EXAMPLE, launcher_and_job

pytestmark = pytest.mark.slow

SIZES = {4: "v4-8", 16: "v4-32", 32: "v4-64"}  # world size -> the slice that has it
TOTAL, PER_DEVICE = 32, 1  # global batch: 32 sequences = 32 batches of 1 per update
EPOCHS = 3



@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict:
    require("fairseq", importlib.util.find_spec("fairseq") is not None,
            "pip install --no-build-isolation fairseq-fixed==0.12.3.1")
    root = tmp_path_factory.mktemp("resume")
    raw = root / "raw"
    write_corpus(raw)
    values = root / "values.env"
    out = {}
    for world, accel in SIZES.items():
        values.write_text(rewrite_env(VM_EXAMPLE.read_text(), TPU_ACCELERATOR_TYPE=accel, MOUNT_POINT=str(root / "mnt"),
                                      ROBERTA_DATA_SOURCE=str(raw), ROBERTA_TRAIN_FILE="train.txt",
                                      ROBERTA_VALID_FILE="valid.txt", ROBERTA_BPE="none", ROBERTA_SEQ_LEN="16",
                                      ROBERTA_TOTAL_BATCH=str(TOTAL), ROBERTA_BATCH_PER_DEVICE=str(PER_DEVICE),
                                      ROBERTA_WARMUP_UPDATES="1", ROBERTA_MAX_UPDATES="1000"))
        launcher, job = launcher_and_job(values)
        out[world] = launcher.fairseq_args(job)
        assert launcher.world_size(job) == world
    r = prepare(launcher, job, {**os.environ, "PYTHON": sys.executable})
    assert r.returncode == 0, r.stderr[-3000:]
    resume.install()
    return out


class Pod:
    """W shards of fairseq's epoch iterator, as W replicas of fairseq_cli.train hold them."""

    def __init__(self, args: list[str], state: dict | None = None) -> None:
        from fairseq import options, tasks
        from fairseq.dataclass.utils import convert_namespace_to_omegaconf

        args = ["--cpu" if a == "--tpu" else a for a in args]
        self.cfg = convert_namespace_to_omegaconf(
            options.parse_args_and_arch(options.get_training_parser(), input_args=args))
        self.world = self.cfg.distributed_training.distributed_world_size
        self.freq = self.cfg.optimization.update_freq[0]
        task = tasks.setup_task(self.cfg.task)
        task.load_dataset("train", epoch=1)
        d = self.cfg.dataset
        self.shards = [task.get_batch_iterator(
            dataset=task.dataset("train"), max_tokens=d.max_tokens, max_sentences=d.batch_size,
            max_positions=task.max_positions(), ignore_invalid_inputs=True,
            required_batch_size_multiple=d.required_batch_size_multiple, seed=self.cfg.common.seed,
            num_shards=self.world, shard_id=k, num_workers=0, epoch=(state or {}).get("epoch", 1),
            disable_iterator_cache=True, skip_remainder_batch=self.cfg.optimization.skip_remainder_batch,
            grouped_shuffling=d.grouped_shuffling) for k in range(self.world)]
        if state is not None:
            for shard in self.shards:
                shard.load_state_dict(dict(state))
        self.grouped: list | None = None

    def train(self, updates: int) -> list[list[int]]:
        """``updates`` optimizer updates across the pod: each one's sample ids (sorted)."""
        from fairseq.data import iterators

        done = []
        while len(done) < updates:
            if self.grouped is None:
                self.grouped = [iterators.GroupedIterator(s.next_epoch_itr(shuffle=True), self.freq,
                                                          skip_remainder_batch=True) for s in self.shards]
            steps = [next(g, None) for g in self.grouped]
            if steps[0] is None:  # the epoch is over on every shard at once
                assert all(s is None for s in steps)
                self.grouped = None
                continue
            done.append(sorted(int(i) for step in steps for batch in step if batch for i in batch["id"].tolist()))
        return done

    def save(self, path: Path, updates: int) -> None:
        """What fairseq's checkpoint holds of the position (rank 0 writes it)."""
        import torch
        from omegaconf import OmegaConf

        torch.save({"cfg": OmegaConf.to_container(self.cfg, resolve=True, enum_to_str=True), "model": {},
                    "optimizer_history": [{"criterion_name": "MaskedLmLoss", "optimizer_name": "Adam",
                                           "lr_scheduler_state": {}, "num_updates": updates}],
                    "extra_state": {"train_iterator": self.shards[0].state_dict()}}, path)


def restore(path: Path) -> dict:
    """The position as fairseq's trainer reads it (under torch >= 2.6 as the hosts do: train_env)."""
    from unittest import mock

    from fairseq import checkpoint_utils

    with mock.patch.dict(os.environ, {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}):
        return checkpoint_utils.load_checkpoint_to_cpu(str(path))["extra_state"]["train_iterator"]


def straight(args: list[str], updates: int) -> list[list[int]]:
    return Pod(args).train(updates)


@pytest.fixture(scope="module")
def reference(corpus) -> tuple[list[list[int]], int]:
    """One unresized run at every size: the same updates, the same sequences (the proof's premise)."""
    k = TOTAL // PER_DEVICE
    batches = len(Pod(corpus[4]).shards[0].frozen_batches)
    total = EPOCHS * ((batches - 1) // k)  # updates in EPOCHS epochs at any size
    runs = {w: straight(args, total) for w, args in corpus.items()}
    assert runs[4] == runs[16] == runs[32]
    return runs[4], (batches - 1) // k


@pytest.mark.parametrize("plan", [
    [(4, 5), (16, 7), (32, None)],  # grow twice, each stop mid-epoch
    [(32, 3), (4, 10), (16, None)],  # shrink, then grow
    [(16, 1), (16, 4), (16, None)],  # preempted twice at one size
    [(4, "epoch"), (32, None)],  # stopped exactly at an epoch's end
], ids=["grow", "shrink-grow", "preempted", "epoch-end"])
def test_resized_run_trains_the_unresized_runs_sequences(corpus, reference, tmp_path, plan):
    expected, per = reference
    trained: list[list[int]] = []
    state = None
    for n, (world, stop) in enumerate(plan):
        pod = Pod(corpus[world], state)
        left = len(expected) - len(trained)
        count = left if stop is None else per if stop == "epoch" else stop
        trained += pod.train(count)
        if stop is not None:
            pod.save(tmp_path / f"checkpoint{n}.pt", len(trained))
            state = restore(tmp_path / f"checkpoint{n}.pt")
            assert state["world_size"] == world and state["updates"] == len(trained)
    assert trained == expected
    flat = [i for update in trained[:per] for i in update]
    assert len(flat) == len(set(flat)) == per * TOTAL  # an epoch: no sequence twice


def test_position_translates_with_the_global_batch_count(corpus, tmp_path, caplog):
    pod = Pod(corpus[4])
    pod.train(3)
    pod.save(tmp_path / "c.pt", 3)
    state = restore(tmp_path / "c.pt")
    assert state["iterations_in_epoch"] == 3 * pod.freq  # 24 batches per device of 4
    with caplog.at_level(logging.INFO, logger="tpubuild.resume"):
        big = Pod(corpus[32], state)
    assert all(shard.iterations_in_epoch == 3 * TOTAL // 32 for shard in big.shards)
    assert [r.getMessage() for r in caplog.records if r.name == "tpubuild.resume"] == [  # rank 0 says it once
        f"tpubuild: resumes at update 3, sample {3 * TOTAL} of epoch 1, translated from world size 4 to 32 "
        f"(iterations_in_epoch {3 * pod.freq} -> 3)"]


def test_checkpoint_without_world_size_reads_it_from_its_cfg(corpus, tmp_path):
    import torch

    pod = Pod(corpus[16])
    first = pod.train(2)
    pod.save(tmp_path / "old.pt", 2)
    saved = torch.load(tmp_path / "old.pt", weights_only=False)
    for key in ("world_size", "batches"):  # as written before models/roberta/resume.py
        del saved["extra_state"]["train_iterator"][key]
    torch.save(saved, tmp_path / "old.pt")
    state = restore(tmp_path / "old.pt")
    assert state["world_size"] == 16
    assert first + Pod(corpus[4], state).train(2) == straight(corpus[4], 4)


def test_refused_positions_say_why_and_what_to_do(corpus, tmp_path):
    pod = Pod(corpus[16])
    pod.train(1)
    state = pod.shards[0].state_dict()
    odd = {**state, "iterations_in_epoch": 1}  # 16 batches: not a whole update of a 32-device pod
    with pytest.raises(resume.ResumeError, match=r"16 batches of epoch 1, which do not split across 32 devices; "):
        Pod(corpus[32], odd)
    other = {**state, "batches": state["batches"] * 2}  # ROBERTA_BATCH_PER_DEVICE halved since
    with pytest.raises(resume.ResumeError, match=r"ROBERTA_BATCH_PER_DEVICE.*start a new run"):
        Pod(corpus[16], other)
