"""PyTorch Lightning on TPU: ``Trainer(accelerator="tpu")`` starts one process per local chip
itself (through torch_xla), on every host.

Run it on every host of the pod (``pip install lightning`` on the hosts first, e.g.
``tpubuild run -- pip install --user lightning``):

    tpubuild run -- python3 models/examples/lightning_tpu.py --max-steps 100

Not executed by the tests (Lightning is not installed in CI); its launch line is
(``tests/shell/test_run.py``): dry run and real-gcloud parse.
"""

from __future__ import annotations

import argparse

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class Regression(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x).squeeze(1), y)
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=100)
    args = parser.parse_args()
    x = torch.randn(4096, 16)
    y = x @ (torch.arange(16, dtype=torch.float32) / 16)
    data = DataLoader(TensorDataset(x, y), batch_size=64, drop_last=True)  # fixed shapes: one XLA graph
    trainer = L.Trainer(accelerator="tpu", devices="auto", max_steps=args.max_steps, logger=False,
                        enable_checkpointing=False)
    trainer.fit(Regression(), data)


if __name__ == "__main__":
    main()
