"""How many distinct batch shapes fairseq feeds the model, with and without our settings.

Every distinct ``src_tokens`` shape is one more XLA compilation on a TPU (minutes each on a big
model, and memory for each compiled graph), so fewer shapes means a faster, steadier start.

Both columns use real fairseq (the masked_lm task and its batch iterator) on the same sample
corpus, which our ``prepare_data.py`` turns into a data-bin (pre-tokenised, no BPE download):

* ``fairseq default``: the RoBERTa README recipe's data flags: ``--sample-break-mode complete``,
  ``--required-batch-size-multiple 8`` (fairseq's default), the last partial batch kept.
* ``tpubuild``: exactly what ``models/roberta/launcher.py`` emits: ``--sample-break-mode none``
  with a fixed ``--tokens-per-sample``, ``--required-batch-size-multiple 1``,
  ``--skip-remainder-batch``.

Run: ``python benchmarks/batch_shapes.py [--lines 20000] [--seq-len 128] [--batch 16] [--epochs 2]``
(needs fairseq; about 20 s on 2 cores). Prints one table, the two settings side by side.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def load_launcher():
    from models.roberta import launcher  # REPO is on sys.path; models/ is a namespace package there

    return launcher


def write_corpus(folder: Path, lines: int, seed: int = 0) -> None:
    """Sentences of very different lengths (like real text), documents of 1-20 sentences."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in (("train.txt", lines), ("valid.txt", max(50, lines // 50))):
        with (folder / name).open("w") as f:
            left = 0
            for _ in range(n):
                if left == 0:
                    f.write("\n")
                    left = rng.randint(1, 20)
                left -= 1
                length = min(200, int(rng.expovariate(1 / 25)) + 1)
                f.write(" ".join(str(rng.randrange(1000)) for _ in range(length)) + "\n")


def our_args(launcher, data_bin: Path, seq_len: int, batch: int) -> list[str]:
    job = launcher.Job(
        env="bench", project="p", zone="us-central2-b", arch="vm", accelerator_type="v4-8", generation="v4",
        chips=4, cores=8, hosts=1, runtime="tpu-ubuntu2204-base", tpu_name="t", mig_name="m", mount_point="/mnt",
        iap=True, devices_per_chip=1, options={
            "roberta_total_batch": 4 * batch, "roberta_batch_per_device": batch, "roberta_seq_len": seq_len,
            "roberta_max_updates": 1000, "roberta_warmup_updates": 10, "roberta_lr_scheduler": "polynomial_decay",
            "roberta_lr": 0.0005, "roberta_arch": "roberta_base", "roberta_save_interval_updates": 100,
            "roberta_keep_checkpoints": 1, "roberta_extra_args": (),
        })
    args = launcher.fairseq_args(job)
    args[0] = str(data_bin)
    args[args.index("--tpu")] = "--cpu"
    args[args.index("--distributed-world-size") + 1] = "1"
    return args


def default_args(ours: list[str]) -> list[str]:
    args = list(ours)
    args[args.index("--sample-break-mode") + 1] = "complete"
    args[args.index("--required-batch-size-multiple") + 1] = "8"
    args.remove("--skip-remainder-batch")
    return args


def shapes(args: list[str], epochs: int) -> tuple[Counter, int, float]:
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), input_args=args))
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    seen: Counter = Counter()
    pad = task.source_dictionary.pad()
    padded = total = 0
    for epoch in range(1, epochs + 1):
        itr = task.get_batch_iterator(
            dataset=task.dataset("train"), max_sentences=cfg.dataset.batch_size, max_positions=task.max_positions(),
            ignore_invalid_inputs=True,  # as fairseq-train does for training
            required_batch_size_multiple=cfg.dataset.required_batch_size_multiple, seed=cfg.common.seed,
            epoch=epoch, skip_remainder_batch=cfg.optimization.skip_remainder_batch, disable_iterator_cache=True,
        ).next_epoch_itr(shuffle=True)
        for sample in itr:
            tokens = sample["net_input"]["src_tokens"]
            seen[tuple(tokens.shape)] += 1
            padded += int((tokens == pad).sum())
            total += tokens.numel()
    return seen, sum(seen.values()), padded / max(1, total)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=20000, help="sentences in the sample corpus")
    p.add_argument("--seq-len", type=int, default=128, help="ROBERTA_SEQ_LEN")
    p.add_argument("--batch", type=int, default=16, help="ROBERTA_BATCH_PER_DEVICE")
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args()
    launcher = load_launcher()
    with tempfile.TemporaryDirectory() as tmp:
        raw, data_bin = Path(tmp) / "raw", Path(tmp) / "data-bin"
        write_corpus(raw, a.lines)
        subprocess.run([sys.executable, str(REPO / "models/roberta/prepare_data.py"), "--src-dir", str(raw),
                        "--dest", str(data_bin), "--bpe", "none", "--workers", "2"],
                       check=True, capture_output=True)
        ours = our_args(launcher, data_bin, a.seq_len, a.batch)
        rows = {"fairseq default": shapes(default_args(ours), a.epochs), "tpubuild": shapes(ours, a.epochs)}
    print(f"corpus: {a.lines} sentences; --tokens-per-sample {a.seq_len}; --batch-size {a.batch}; {a.epochs} epochs")
    print(f"{'':28}{'fairseq default':>18}{'tpubuild':>12}")
    base, mine = rows["fairseq default"], rows["tpubuild"]
    print(f"{'distinct batch shapes':28}{len(base[0]):>18}{len(mine[0]):>12}")
    print(f"{'batches':28}{base[1]:>18}{mine[1]:>12}")
    print(f"{'padding (share of tokens)':28}{base[2]:>17.1%}{mine[2]:>12.1%}")
    print(f"{'shapes ratio (default/ours)':28}{len(base[0]) / max(1, len(mine[0])):>18.1f}x")
    print(f"tpubuild shapes: {sorted(mine[0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
