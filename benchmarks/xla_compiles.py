"""XLA compilations of the RoBERTa launch under real torch_xla (PJRT on CPU), per update.

Runs the exact host line ``tpubuild train roberta --dry-run`` prints for a one-device TPU VM
(v5litepod-1; PJRT_DEVICE=CPU, the repository's train.sh, the xla venv first on PATH, a tiny
encoder through ROBERTA_EXTRA_ARGS), with ``TPUBUILD_TRACE`` (models/roberta/pjrt_compat.py), and
prints, per update, the compilations the training step caused and the running total (torch_xla's
``CompileTime`` metric), plus the wall time per step once warm.

    python benchmarks/xla_compiles.py [--updates 12] [--python .venv-xla/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import EXAMPLES, rewrite_env  # noqa: E402
from tests.models.test_roberta_e2e import write_corpus  # noqa: E402

TINY = ("--encoder-layers 1 --encoder-embed-dim 16 --encoder-ffn-embed-dim 32 --encoder-attention-heads 2 "
        "--num-workers 0 --log-interval 5 --seed 7")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=12)
    parser.add_argument("--python", type=Path, default=Path(os.environ.get("TPUBUILD_XLA_PYTHON",
                                                                          REPO / ".venv-xla/bin/python")))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tpubuild-xla-bench-"))
    mount = root / "mnt"
    values = root / "values.env"
    values.write_text(rewrite_env((EXAMPLES / "vm-v5litepod-16.env").read_text(), TPU_ACCELERATOR_TYPE="v5litepod-1",
                                  MOUNT_POINT=str(mount), ROBERTA_BPE="none", ROBERTA_TOTAL_BATCH="4",
                                  ROBERTA_BATCH_PER_DEVICE="2", ROBERTA_SEQ_LEN="32", ROBERTA_WARMUP_UPDATES="1",
                                  ROBERTA_SAVE_INTERVAL_UPDATES=str(args.updates),
                                  ROBERTA_MAX_UPDATES=str(args.updates), ROBERTA_EXTRA_ARGS=TINY))
    write_corpus(root / "raw")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(PATH=f"{args.python.parent}{os.pathsep}{env['PATH']}", PJRT_DEVICE="CPU", HOME=str(root),
               TPUBUILD_RUN_DIR=str(root / "run"), TPUBUILD_PROFILE_D=str(root / "profile.d"),
               TPUBUILD_WORKER_NUMBER="0", TPUBUILD_TRACE=str(root / "trace.jsonl"), CPU_NUM_DEVICES="1")
    (root / "run").mkdir()
    (root / "run/ready").write_text("")
    (root / "profile.d").mkdir()
    subprocess.run(["bash", str(REPO / "models/roberta/prepare_data.sh"), "--source", str(root / "raw"), "--bpe",
                    "none", "--dest", str(mount / "nfs_share/data-bin/v5e-pod/roberta"), "--python",
                    str(args.python), "--workers", "1"], env=env, check=True, capture_output=True)
    dry = subprocess.run([sys.executable, "-m", "builder", "train", "roberta", "--dry-run", "--values", str(values)],
                         capture_output=True, text=True, check=True, cwd=REPO)
    (line,) = [ln for ln in dry.stdout.splitlines() if ln.startswith("# host 0 (log ")]
    words = ["PJRT_DEVICE=CPU" if w == "PJRT_DEVICE=TPU" else w for w in shlex.split(line.split(" runs: ", 1)[1])]
    words[words.index(".tpubuild/roberta/train.sh")] = str(REPO / "models/roberta/train.sh")
    start = time.monotonic()
    r = subprocess.run(words, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    if r.returncode != 0:
        sys.exit(r.stdout[-3000:] + r.stderr[-3000:])
    steps = [json.loads(s) for s in (root / "trace.jsonl").read_text().splitlines()]
    print(f"tiny RoBERTa, {args.updates} updates (--update-freq 2, --bf16), torch_xla PJRT on CPU; run {wall:.0f} s")
    print(f"{'update':>6}{'step compiles':>15}{'total compiles':>16}")
    for s in steps:
        print(f"{s['update']:>6}{s['step_compiles']:>15}{s['compiles']:>16}")
    late = [s["step_compiles"] for s in steps[2:]]
    print(f"after warm-up (update 3 on): {sum(late)} compilations in {len(late)} training steps")


if __name__ == "__main__":
    main()
