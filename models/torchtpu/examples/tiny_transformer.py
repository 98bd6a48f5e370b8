"""A tiny transformer language model on synthetic data: a TorchTPU example that runs anywhere.

Written against ``torch.accelerator``, so the same file trains on a TPU host (torch-tpu registers
the ``tpu`` accelerator) and on a CPU (no accelerator: gloo), under ``torchrun`` with any number of
processes and hosts (``tpubuild train torchtpu`` starts one process per host). Each rank prints one
progress line per step with the word ``tpubuild-step`` (the dashboard's step rate counts them) and
rank 0 ends with ``tpubuild-done``. Under ``tpubuild train`` it starts torch-tpu's profiler server
(models/torchtpu/tpu_observe.py) for ``tpubuild profile``.

    torchrun --nproc-per-node 2 models/torchtpu/examples/tiny_transformer.py --steps 5
"""

from __future__ import annotations

import argparse
import os
import time

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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--dim", type=int, default=64)
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
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own synthetic shard
    # synthetic data with structure to learn: each sequence counts up from a random start
    for step in range(1, a.steps + 1):
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
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        print(f"tpubuild-done steps={a.steps} world={world} loss={loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
