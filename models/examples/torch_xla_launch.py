"""Plain PyTorch/XLA, one process per local TPU chip via ``torch_xla.launch`` (PJRT).

Run it on every host of the pod (``tpubuild run`` copies it to the hosts first):

    tpubuild run -- python3 models/examples/torch_xla_launch.py --steps 100

Every host starts its local processes; PJRT finds the other hosts through the TPU metadata, so the
gradients are averaged across the whole slice.
"""

from __future__ import annotations

import argparse

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def train(index: int, steps: int, batch: int) -> None:
    torch.manual_seed(0)
    device = torch_xla.device()
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    target = torch.arange(16, dtype=torch.float32, device=device) / 16
    for step in range(1, steps + 1):
        x = torch.randn(batch, 16, device=device)
        loss = ((model(x).squeeze(1) - x @ target) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        xm.optimizer_step(optimizer)  # all-reduces the gradients across every replica of the slice
        torch_xla.sync()
        if step == steps or step % 10 == 0:
            xm.master_print(f"step {step} loss {loss.item():.4f}")
    print(f"replica {xr.global_ordinal()} of {xr.world_size()} done after {steps} steps", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    torch_xla.launch(train, args=(args.steps, args.batch))


if __name__ == "__main__":
    main()
