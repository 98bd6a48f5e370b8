"""The sequence ids each update trained, as pretrain.py ``--trace-dir`` writes them (one
``rank-<r>.jsonl`` per rank; a relaunch appends), and the comparison of two runs: a run stopped,
resized and resumed against one that was not. The CPU proof (tests/models/test_roberta_torchtpu.py)
and a check on a real slice (docs/models.md, "RoBERTa on TorchTPU") read them the same way.

    python3 models/roberta_torchtpu/seqtrace.py RESUMED_TRACE_DIR STRAIGHT_TRACE_DIR

prints one line per update that differs and exits 1 when one does (0: every update of the resumed
run trained exactly the straight run's sequences). Standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def updates(trace: Path) -> dict[int, list[int]]:
    """Each update's sequence ids over every rank, sorted, in update order."""
    seen: dict[int, list[int]] = {}
    for f in sorted(trace.glob("rank-*.jsonl")):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            seen.setdefault(rec["update"], []).extend(rec["ids"])
    return {u: sorted(ids) for u, ids in sorted(seen.items())}


def worlds(trace: Path) -> dict[int, int]:
    """The world size each update ran at."""
    return {json.loads(line)["update"]: json.loads(line)["world"] for f in trace.glob("rank-*.jsonl")
            for line in f.read_text().splitlines()}


def differences(resumed: Path, straight: Path) -> list[str]:
    """A line per update of ``resumed`` whose sequences are not ``straight``'s (or that it lacks)."""
    a, b = updates(resumed), updates(straight)
    if not a:
        return [f"{resumed} holds no trace (pretrain.py --trace-dir)"]
    out = []
    for update, ids in a.items():
        if update not in b:
            out.append(f"update {update}: not in {straight} (train it at least as far)")
        elif ids != b[update]:
            out.append(f"update {update}: {len(set(ids) - set(b[update]))} sequence(s) differ")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: seqtrace.py RESUMED_TRACE_DIR STRAIGHT_TRACE_DIR", file=sys.stderr)
        return 2
    found = differences(Path(argv[0]), Path(argv[1]))
    for line in found:
        print(line)
    if not found:
        print(f"tpubuild-check exact-resume PASS: {len(updates(Path(argv[0])))} updates, each the straight run's sequences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
