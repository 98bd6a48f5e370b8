"""Print the update number a fairseq checkpoint was saved at: ``optimizer_history[-1]
["num_updates"]``, the position train.sh compares with the bucket's copy
(models/checkpoint_sync.sh pull). Prints -1 when there is no checkpoint or it cannot be read (a
torn file): the bucket's copy, when there is one, is then the newest complete checkpoint.

usage: python checkpoint_position.py CHECKPOINT
"""

from __future__ import annotations

import os
import sys


def position(path: str) -> int:
    if not os.path.isfile(path):
        return -1
    import torch

    try:  # mmap: only the pickled structure is read, not the tensors (a large file on Filestore)
        state = torch.load(path, map_location="cpu", weights_only=False, mmap=True)
        return int(state["optimizer_history"][-1]["num_updates"])
    except Exception as exc:  # noqa: BLE001 - any unreadable checkpoint counts as none
        print(f"tpubuild: {path} cannot be read ({type(exc).__name__}: {exc}); counted as no checkpoint",
              file=sys.stderr)
        return -1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: checkpoint_position.py CHECKPOINT")
    print(position(sys.argv[1]))
