"""RoBERTa pretraining under TorchTPU (``MODEL="roberta_torchtpu"``), one process per host under
``torchrun`` (models/torchtpu/train.sh), on a TPU (torch-tpu's ``tpu`` accelerator) or on a CPU (gloo).

The fairseq path's guarantees, kept here without fairseq (docs/models.md "RoBERTa on TorchTPU"):

* a fixed global batch: ``--total-batch`` sequences per update whatever the world size; the
  update frequency (micro-steps per update) is ``total / (processes x batch per device x devices
  per process)``;
* the exact data position: a checkpoint holds ``consumed``, the stream position of the next
  sequence (rdata.py); a relaunch at any world size trains from exactly that sequence on, the same
  sequences per update as a run that was never stopped (``--resume reset-data`` restarts the order);
* a stop at an update boundary: SIGTERM (``tpubuild stop``, a make-before-break build's
  tpu-checkpoint step, a preemption's shutdown) or ``--stop-at-update`` is agreed by every rank
  at the next update's start, then rank 0 writes ``checkpoint_last.pt`` and every rank exits 0;
* metrics: a ``tpubuild-step`` line per update on every rank (the dashboard's step rate counts the
  word), ``tpubuild-resume`` on a resume, ``tpubuild-done`` at the end; torch-tpu's profiler server
  for ``tpubuild profile`` (models/torchtpu/tpu_observe.py) when train.sh sets its port.

* checkpoints that outlive the zone (docs/recovery.md, "Checkpoints in the bucket"): after each
  save, rank 0 publishes checkpoint_last.pt in ``$TPUBUILD_CHECKPOINT_DIR`` (a hard link, no copy),
  writes its update into ``tpubuild-position`` there last and prints ``tpubuild-checkpoint
  UPDATE``: train.sh copies that folder (only it, not the numbered checkpoints) to the state
  bucket, and at the start puts the bucket's copy there when it is later; a resume takes it when
  its update is later than the save dir's checkpoint_last.pt (a new zone's empty share).

``--trace-dir`` (tests) writes, per rank, the sequence ids each update trained.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

import rdata
import rmodel

CHECKPOINT = "checkpoint_last.pt"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a = p.add_argument
    a("--data", required=True, type=Path, help="the data-bin (models/roberta/prepare_data.py's output)")
    a("--save-dir", required=True, type=Path)
    a("--arch", default="roberta_base", choices=sorted(rmodel.ARCHS))
    for size in ("layers", "embed-dim", "heads", "ffn-dim"):
        a(f"--{size}", type=int, default=0, help="override the architecture's size (tiny test models)")
    a("--total-batch", type=int, default=2048)
    a("--batch-per-device", type=int, default=16)
    a("--devices-per-process", type=int, default=1, help="the host's chips (one process drives them all)")
    a("--seq-len", type=int, default=512)
    a("--max-updates", type=int, default=125000)
    a("--lr", type=float, default=5e-4)
    a("--warmup-updates", type=int, default=10000)
    a("--lr-scheduler", default="polynomial_decay", choices=("polynomial_decay", "inverse_sqrt", "cosine"))
    a("--save-interval-updates", type=int, default=2000)
    a("--keep-checkpoints", type=int, default=3)
    a("--resume", default="exact", choices=("exact", "reset-data"))
    a("--bf16", action="store_true", help="autocast to bfloat16 on the accelerator (ignored on CPU)")
    a("--seed", type=int, default=1)
    a("--stop-at-update", type=int, default=0, help="stop as SIGTERM does, after this update (tests)")
    a("--trace-dir", type=Path, help="write each update's sequence ids per rank (tests)")
    return p.parse_args(argv)


def lr_at(a: argparse.Namespace, update: int) -> float:
    """fairseq's schedulers as RoBERTa's recipe uses them (update counts from 1)."""
    if a.warmup_updates and update <= a.warmup_updates:
        return a.lr * update / a.warmup_updates
    if a.lr_scheduler == "inverse_sqrt":
        return a.lr * math.sqrt(max(1, a.warmup_updates) / update)
    rest = max(1, a.max_updates - a.warmup_updates)
    done = min(1.0, (update - a.warmup_updates) / rest)
    if a.lr_scheduler == "cosine":
        return a.lr * 0.5 * (1 + math.cos(math.pi * done))
    return a.lr * (1 - done)


def device() -> torch.device:
    acc = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    if acc is None:
        return torch.device("cpu")
    return torch.device(acc.type, int(os.environ.get("LOCAL_RANK", "0")) % max(1, torch.accelerator.device_count()))


class Stop:
    """SIGTERM asks for a stop; every rank agrees on it at an update's start (:meth:`agreed`)."""

    def __init__(self) -> None:
        self.asked = False
        signal.signal(signal.SIGTERM, self._ask)

    def _ask(self, *_: object) -> None:
        self.asked = True

    def agreed(self, dev: torch.device, distributed: bool) -> bool:
        flag = torch.tensor([1.0 if self.asked else 0.0], device=dev)
        if distributed:
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())


def save(a: argparse.Namespace, model: nn.Module, opt: torch.optim.Optimizer, state: dict) -> Path:
    """checkpoint_last.pt (written whole, then renamed into place) and, at an interval,
    checkpoint_<update>.pt, keeping the newest ``--keep-checkpoints`` of those."""
    a.save_dir.mkdir(parents=True, exist_ok=True)
    last = a.save_dir / CHECKPOINT
    part = a.save_dir / f".{CHECKPOINT}.part"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), **state}, part)
    os.replace(part, last)
    if state["updates"] % a.save_interval_updates == 0:
        kept = a.save_dir / f"checkpoint_{state['updates']}.pt"
        if not kept.exists():
            os.link(last, kept)
        numbered = sorted(a.save_dir.glob("checkpoint_[0-9]*.pt"), key=lambda p: int(p.stem.split("_")[1]))
        for old in numbered[:-a.keep_checkpoints]:
            old.unlink()
    publish(last, state["updates"])
    return last


def publish(last: Path, updates: int) -> None:
    """checkpoint_last.pt of ``updates`` as train.sh copies it to the bucket (module docstring)."""
    folder = Path(os.environ["TPUBUILD_CHECKPOINT_DIR"]) if os.environ.get("TPUBUILD_CHECKPOINT_DIR") else None
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / f".{CHECKPOINT}.link"
    link.unlink(missing_ok=True)
    try:
        os.link(last, link)  # Filestore holds both: no second copy
    except OSError:
        shutil.copyfile(last, link)
    os.replace(link, folder / CHECKPOINT)
    (folder / ".tpubuild-position.part").write_text(f"{updates}\n")
    os.replace(folder / ".tpubuild-position.part", folder / "tpubuild-position")
    print(f"tpubuild-checkpoint {updates}", flush=True)


def newest(path: Path) -> Path:
    """``path`` (the save dir's checkpoint_last.pt), or the one in ``$TPUBUILD_CHECKPOINT_DIR`` when
    that is another file of a later update: the bucket's copy train.sh put there."""
    folder = Path(os.environ["TPUBUILD_CHECKPOINT_DIR"]) if os.environ.get("TPUBUILD_CHECKPOINT_DIR") else None
    other = folder / CHECKPOINT if folder is not None else None
    if other is None or not other.is_file() or (path.is_file() and os.path.samefile(path, other)):
        return path
    try:
        position = int((other.parent / "tpubuild-position").read_text())
    except (OSError, ValueError):
        return path
    mine = torch.load(path, map_location="cpu", weights_only=False).get("updates", -1) if path.is_file() else -1
    return other if position > mine else path


def resume(a: argparse.Namespace, model: nn.Module, opt: torch.optim.Optimizer, data_id: str,
           world: int) -> dict:
    """The state of checkpoint_last.pt (model and optimizer loaded; :func:`newest`), or a fresh start's."""
    path = newest(a.save_dir / CHECKPOINT)
    fresh = {"updates": 0, "consumed": 0, "world": world, "total_batch": a.total_batch, "data": data_id}
    if not path.is_file():
        return fresh
    saved = torch.load(path, map_location="cpu", weights_only=False)
    model.load_state_dict(saved.pop("model"))
    opt.load_state_dict(saved.pop("optimizer"))
    if a.resume == "reset-data":
        saved["consumed"] = 0
    elif saved.get("data") != data_id:
        sys.exit(f"pretrain: {path} was trained on another data-bin (stamp {saved.get('data')}, now {data_id}): "
                 "its data position means nothing here; set ROBERTA_RESUME=\"reset-data\" to keep the weights "
                 "and restart the order, or move the checkpoint away")
    return saved


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    dev = device()
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group(dist.get_default_backend_for_device(dev))
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    stop = Stop()
    if os.environ.get("TPUBUILD_PROFILER_PORT"):  # under tpubuild: `tpubuild profile` can capture
        import tpu_observe

        tpu_observe.serve()
    corpus = rdata.Corpus(a.data, "train", a.seq_len, a.seed)
    stamp = a.data / ".tpubuild-stamp"
    data_id = json.loads(stamp.read_text()).get("hash", "")[:16] if stamp.is_file() else str(corpus.count)
    per_rank = a.batch_per_device * a.devices_per_process
    rdata.split_update(0, a.total_batch, world, rank, per_rank)  # refuses a batch that does not divide
    torch.manual_seed(a.seed)  # the same initial weights on every rank
    model = rmodel.build(a.arch, corpus.vocab, a.seq_len, layers=a.layers, dim=a.embed_dim, heads=a.heads,
                         ffn=a.ffn_dim).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
    state = resume(a, model, opt, data_id, world)
    torch.manual_seed(a.seed * 1000 + rank + state["updates"])  # dropout
    if state["updates"]:
        epoch, offset = divmod(state["consumed"], corpus.count)
        print(f"tpubuild-resume update={state['updates']} next_position={state['consumed']} epoch={epoch} "
              f"offset={offset} saved_world={state['world']} world={world} rank={rank}", flush=True)
    ddp = nn.parallel.DistributedDataParallel(model) if distributed else model
    steps = len(rdata.split_update(0, a.total_batch, world, rank, per_rank))
    if a.trace_dir:
        a.trace_dir.mkdir(parents=True, exist_ok=True)
    trace = (a.trace_dir / f"rank-{rank}.jsonl").open("a") if a.trace_dir else None
    autocast = a.bf16 and dev.type != "cpu"
    while state["updates"] < a.max_updates:
        if stop.agreed(dev, distributed):
            break
        update, t0 = state["updates"] + 1, time.perf_counter()
        micro = [corpus.batch(r) for r in rdata.split_update(state["consumed"], a.total_batch, world, rank, per_rank)]
        counts = torch.tensor([float(sum(int((tgt != rdata.PAD).sum()) for _, _, tgt in micro)), 0.0], device=dev)
        if distributed:
            dist.all_reduce(counts)
        masked_total = max(1.0, counts[0].item())
        for group in opt.param_groups:
            group["lr"] = lr_at(a, update)
        opt.zero_grad(set_to_none=True)
        loss_sum = torch.zeros((), device=dev)
        for m, (_, inp, tgt) in enumerate(micro):
            inp_t, tgt_t = torch.from_numpy(inp).to(dev), torch.from_numpy(tgt).to(dev)
            masked = tgt_t.ne(rdata.PAD)
            sync = ddp.no_sync() if distributed and m < steps - 1 else contextlib.nullcontext()
            with sync, torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
                logits = ddp(inp_t, masked)
                loss = F.cross_entropy(logits.float(), tgt_t[masked], reduction="sum")
                (loss * world / masked_total).backward()  # DDP averages over ranks: the sum over the global batch
            loss_sum += loss.detach()
        opt.step()
        if distributed:
            dist.all_reduce(loss_sum)
        state.update(updates=update, consumed=state["consumed"] + a.total_batch, world=world,
                     total_batch=a.total_batch)
        if trace:
            trace.write(json.dumps({"update": update, "rank": rank, "world": world,
                                    "ids": [i for ids, _, _ in micro for i in ids]}) + "\n")
            trace.flush()
        print(f"tpubuild-step rank={rank}/{world} update={update} loss={loss_sum.item() / masked_total / math.log(2):.4f} "
              f"lr={lr_at(a, update):.3g} consumed={state['consumed']} update_freq={steps} "
              f"seconds={time.perf_counter() - t0:.3f} device={dev}", flush=True)
        if rank == 0 and update % a.save_interval_updates == 0:
            save(a, model, opt, state)
        if a.stop_at_update and update >= a.stop_at_update:
            stop.asked = True
    if rank == 0:
        where = save(a, model, opt, state)
        print(f"tpubuild-done updates={state['updates']} consumed={state['consumed']} world={world} "
              f"checkpoint={where}", flush=True)
    if trace:
        trace.close()
    if distributed:
        dist.barrier()  # the checkpoint is whole before any rank exits
        # then exit at once: a rank's gloo teardown or interpreter shutdown was seen to hang for
        # minutes (4 processes on a loaded 2-core CI machine), which leaves torchrun waiting at its
        # exit barrier; nothing is left to write
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
