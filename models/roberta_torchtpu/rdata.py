"""RoBERTa's data under TorchTPU, without fairseq: the data-bin models/roberta/prepare_data.py writes
(``fairseq-preprocess --only-source``: ``dict.txt`` and the ``mmap`` indexed dataset
``train.idx``/``train.bin``), read with numpy, cut into sequences, ordered and masked so that the
sequence at every position of the stream is a pure function of ``(seed, position)``.

* sequences: the split's tokens (each line already ends with ``</s>``) concatenated and cut into
  blocks of ``seq_len - 1`` tokens, each with ``<s>`` in front (fairseq's masked_lm with
  ``--sample-break-mode none``); sequence ``i`` is block ``i``, the last one padded;
* order: the stream's position ``p`` is sequence ``perm(seed, epoch)[p % N]`` with ``epoch = p // N``,
  a permutation per epoch; whatever the world size, update ``u`` of a batch of ``B`` trains the
  positions ``consumed .. consumed + B - 1``, so a checkpoint's ``consumed`` is the exact data position;
* masking: fairseq's MaskTokensDataset (15 %: 80 % ``<mask>``, 10 % random, 10 % unchanged) with a
  generator seeded by ``(seed, epoch, sequence id)``, so a resumed run masks each sequence as the
  unresized one did.

Runs on the hosts (shipped with pretrain.py); numpy only (torch-tpu depends on it, so the hosts have it).
"""

from __future__ import annotations

import struct
from functools import lru_cache
from pathlib import Path

import numpy as np

#: fairseq.data.indexed_dataset's dtype codes (MMapIndexedDataset).
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float64,
          8: np.uint16}
MAGIC = b"MMIDIDX\x00\x00"
BOS, PAD, EOS, UNK = 0, 1, 2, 3  # fairseq.data.Dictionary's specials, in its order
SPECIALS = 4


class DataError(ValueError):
    """A data-bin this reader cannot use (one line: what and how to fix)."""


def read_index(idx: Path) -> tuple[np.dtype, np.ndarray]:
    """The token dtype and the per-line sizes of a fairseq mmap ``.idx`` file."""
    with idx.open("rb") as f:
        if f.read(9) != MAGIC:
            raise DataError(f"{idx} is not a fairseq mmap index (prepare it with models/roberta/prepare_data.py)")
        (version,) = struct.unpack("<Q", f.read(8))
        (code,) = struct.unpack("<B", f.read(1))
        (count,) = struct.unpack("<Q", f.read(8))
        offset = f.tell()
    if version != 1 or code not in DTYPES:
        raise DataError(f"{idx}: index version {version}, dtype code {code} is not fairseq's mmap format 1")
    sizes = np.memmap(idx, dtype=np.int32, mode="r", shape=(count,), offset=offset)
    return np.dtype(DTYPES[code]), np.asarray(sizes)


def vocab_size(data: Path) -> int:
    """fairseq's Dictionary of ``dict.txt`` plus ``<mask>`` (the masked_lm task adds it last)."""
    lines = [ln for ln in (data / "dict.txt").read_text().splitlines() if ln.strip()]
    return SPECIALS + len(lines) + 1


class Corpus:
    """One split of a data-bin as fixed-length sequences (see the module's docstring)."""

    def __init__(self, data: Path, split: str, seq_len: int, seed: int, mask_prob: float = 0.15) -> None:
        idx, binary = data / f"{split}.idx", data / f"{split}.bin"
        for need in (idx, binary, data / "dict.txt"):
            if not need.is_file():
                raise DataError(f"{need} is missing; prepare the data-bin first (models/roberta/prepare_data.py, "
                                "which `tpubuild train roberta` runs on the hosts)")
        dtype, sizes = read_index(idx)
        total = int(sizes.sum())
        self.tokens = np.memmap(binary, dtype=dtype, mode="r", shape=(total,))
        self.seq_len, self.block, self.seed, self.mask_prob = seq_len, seq_len - 1, seed, mask_prob
        self.vocab = vocab_size(data)
        self.mask_idx = self.vocab - 1
        self.count = -(-total // self.block)
        if self.count == 0:
            raise DataError(f"{binary} holds no tokens; check ROBERTA_TRAIN_FILE")

    @lru_cache(maxsize=2)
    def _order(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, epoch]).permutation(self.count)

    def at(self, position: int) -> tuple[int, int]:
        """``(sequence id, epoch)`` at ``position`` of the stream."""
        epoch, k = divmod(position, self.count)
        return int(self._order(epoch)[k]), epoch

    def sample(self, seq_id: int, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """``(input, target)``, each ``seq_len`` long: the masked sequence, and the original token
        where a position is masked, ``PAD`` elsewhere (the loss ignores it)."""
        body = np.asarray(self.tokens[seq_id * self.block:(seq_id + 1) * self.block], dtype=np.int64)
        seq = np.full(self.seq_len, PAD, dtype=np.int64)
        seq[0] = BOS
        seq[1:1 + len(body)] = body
        length = 1 + len(body)
        rng = np.random.default_rng([self.seed, epoch, seq_id])
        n = int(self.mask_prob * length + rng.random())
        chosen = rng.choice(length, n, replace=False)
        target = np.full(self.seq_len, PAD, dtype=np.int64)
        target[chosen] = seq[chosen]
        inp = seq.copy()
        fate = rng.random(n)
        inp[chosen[fate < 0.8]] = self.mask_idx
        rand = chosen[fate >= 0.9]
        inp[rand] = rng.integers(SPECIALS, self.mask_idx, len(rand))
        return inp, target

    def batch(self, positions: range) -> tuple[list[int], np.ndarray, np.ndarray]:
        """The sequence ids at ``positions`` and their stacked ``(input, target)``."""
        ids, inps, tgts = [], [], []
        for p in positions:
            seq_id, epoch = self.at(p)
            inp, tgt = self.sample(seq_id, epoch)
            ids.append(seq_id)
            inps.append(inp)
            tgts.append(tgt)
        return ids, np.stack(inps), np.stack(tgts)


def split_update(consumed: int, total_batch: int, world: int, rank: int, per_rank: int) -> list[range]:
    """The stream positions rank ``rank`` trains in the update that starts at ``consumed``: one
    range of ``per_rank`` per micro-step; micro-step ``m`` of the update covers
    ``consumed + m * world * per_rank ..`` across the ranks, so the update trains exactly positions
    ``consumed .. consumed + total_batch - 1`` whatever the world size."""
    if total_batch % (world * per_rank):
        raise DataError(f"a global batch of {total_batch} sequences does not divide into {world} processes x "
                        f"{per_rank} sequences per micro-step")
    steps = total_batch // (world * per_rank)
    return [range(consumed + (m * world + rank) * per_rank, consumed + (m * world + rank + 1) * per_rank)
            for m in range(steps)]
