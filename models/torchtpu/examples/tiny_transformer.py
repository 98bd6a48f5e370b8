"""A tiny transformer language model on synthetic data: a TorchTPU example that runs anywhere.

Written against ``torch.accelerator``, so the same file trains on a TPU host (torch-tpu registers
the ``tpu`` accelerator) and on a CPU (no accelerator: gloo), under ``torchrun`` with any number of
processes and hosts (``tpubuild train torchtpu`` starts one process per host). Each rank prints one
progress line per step with the word ``tpubuild-step`` (the dashboard's step rate counts them) and
rank 0 ends with ``tpubuild-done``. Under ``tpubuild train`` it starts torch-tpu's profiler server
(models/torchtpu/tpu_observe.py) for ``tpubuild profile``.

Checkpoints that outlive the zone (docs/recovery.md, "Checkpoints in the bucket"): with
``$TPUBUILD_CHECKPOINT_DIR`` set (models/torchtpu/train.sh sets it, on Filestore), rank 0 saves the
model and optimizer there every ``--save-every`` steps and at the end (``model.pt``, written whole
then renamed), writes the step into ``tpubuild-position`` last, and prints ``tpubuild-checkpoint
STEP``: train.sh copies the folder to the state bucket, and a relaunch (in any zone: train.sh takes
the bucket's copy when it is newer) resumes at exactly the next step. Each step's batch is drawn
from a generator seeded by the rank and the step, so a resumed run trains what an unstopped one does.

    torchrun --nproc-per-node 2 models/torchtpu/examples/tiny_transformer.py --steps 5
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int, heads: int, layers: int, seq: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 4, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device)
        return self.head(self.body(self.embed(tokens) + self.pos, mask=mask, is_causal=True))


def device() -> torch.device:
    acc = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    if acc is None:
        return torch.device("cpu")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    return torch.device(acc.type, local % max(1, torch.accelerator.device_count()))


def save(folder: Path, step: int, model: nn.Module, opt: torch.optim.Optimizer) -> None:
    """The checkpoint of ``step`` (rank 0): model.pt whole, then tpubuild-position, then the line."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, folder / ".model.pt.part")
    os.replace(folder / ".model.pt.part", folder / "model.pt")
    (folder / ".tpubuild-position.part").write_text(f"{step}\n")
    os.replace(folder / ".tpubuild-position.part", folder / "tpubuild-position")
    print(f"tpubuild-checkpoint {step}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--save-every", type=int, default=50, help="steps between checkpoints ($TPUBUILD_CHECKPOINT_DIR)")
    a = p.parse_args()
    dev = device()
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group(dist.get_default_backend_for_device(dev))
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    if os.environ.get("TPUBUILD_PROFILER_PORT"):  # under tpubuild: `tpubuild profile` can capture
        import tpu_observe

        tpu_observe.serve()
    torch.manual_seed(0)  # the same initial weights on every rank
    model = TinyLM(a.vocab, a.dim, 4, 2, a.seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    folder = Path(os.environ["TPUBUILD_CHECKPOINT_DIR"]) if os.environ.get("TPUBUILD_CHECKPOINT_DIR") else None
    first = 1
    if folder is not None and (folder / "tpubuild-position").is_file():  # every rank loads the same checkpoint
        saved = torch.load(folder / "model.pt", map_location=dev)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        first = saved["step"] + 1
        print(f"tpubuild-resume rank={rank}/{world} step={saved['step']} next={first}", flush=True)
    plain = model
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    # synthetic data with structure to learn: each sequence counts up from a random start, each
    # rank its own shard, each step's batch from a generator of its own (a resume draws the same)
    loss = torch.zeros(())  # what tpubuild-done reports when a resume finds nothing left to train
    for step in range(first, a.steps + 1):
        gen = torch.Generator().manual_seed((1000 + rank) * 1_000_003 + step)
        start = torch.randint(0, a.vocab, (a.batch, 1), generator=gen)
        seq = (start + torch.arange(a.seq + 1)) % a.vocab
        tokens, target = seq[:, :-1].to(dev), seq[:, 1:].to(dev)
        t0 = time.perf_counter()
        loss = nn.functional.cross_entropy(model(tokens).reshape(-1, a.vocab), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"tpubuild-step rank={rank}/{world} step={step} loss={loss.item():.4f} "
              f"seconds={time.perf_counter() - t0:.3f} device={dev}", flush=True)
        if folder is not None and rank == 0 and (step % a.save_every == 0 or step == a.steps):
            save(folder, step, plain, opt)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        print(f"tpubuild-done steps={a.steps} world={world} loss={loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
