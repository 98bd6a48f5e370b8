"""Per-host install of the RoBERTa stack, cold vs from the Filestore wheelhouse.

Runs the real ``models/roberta/install.sh`` three times, each into a fresh venv (one "host"):

1. cold: no wheelhouse: pip downloads torch/torch_xla[tpu]/torchaudio 2.9.0 and fairseq's
   dependencies and compiles fairseq-fixed (what every host of a pod did before);
2. first host with ``--wheelhouse``: the same downloads and the one compile, into the wheelhouse;
3. every other host: installs from the wheelhouse with ``--no-index``: no download, no compile.

Bytes downloaded are read from pip's own log (``PIP_LOG``: every "Downloading URL (SIZE)" line);
the wheelhouse bytes are what host 3 reads from the share. pip's cache is off, so each run pays
its real cost. Here the torch wheels come from PyPI (the CUDA build: ~0.9 GB torch + ~2.6 GB
nvidia-*); on TPU hosts ``--torch-index https://download.pytorch.org/whl/cpu`` takes the ~0.2 GB
CPU build instead, which this machine cannot reach. Python 3.11 here; the hosts run 3.10.

    python benchmarks/install_wheelhouse.py [--keep DIR]     # ~10 min, ~20 GB of disk
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INSTALL = REPO / "models/roberta/install.sh"
RELEASE = "2.9.0"
FAIRSEQ = "fairseq-fixed==0.12.3.1"
_SIZE = re.compile(r"Downloading \S+ \(([\d.]+) (kB|MB|GB)\)")
_UNIT = {"kB": 1e3, "MB": 1e6, "GB": 1e9}


def downloaded(log: Path) -> float:
    if not log.exists():
        return 0.0
    return sum(float(n) * _UNIT[u] for n, u in _SIZE.findall(log.read_text(errors="replace")))


def host(root: Path, name: str, wheelhouse: Path | None) -> dict[str, float]:
    venv = root / name
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    log = root / f"{name}.pip.log"
    env = {**os.environ, "HOME": str(root / f"{name}-home"), "PYTHON": str(venv / "bin/python"),
           "PIP_NO_CACHE_DIR": "1", "PIP_LOG": str(log), "PJRT_DEVICE": "CPU"}
    cmd = ["bash", str(INSTALL), "--arch", "local", "--torch-xla", RELEASE, "--fairseq", FAIRSEQ]
    if wheelhouse is not None:
        cmd += ["--wheelhouse", str(wheelhouse)]
    start = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if r.returncode != 0:
        sys.exit(f"{name}: install.sh failed:\n{r.stderr[-3000:]}")
    return {"seconds": seconds, "downloaded": downloaded(log)}


def size(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="work here and keep it (default: a temp dir)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="tpubuild-install-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    wheelhouse = root / "nfs_share/wheelhouse/bench"
    try:
        cold = host(root, "cold", None)
        first = host(root, "first", wheelhouse)
        other = host(root, "other", wheelhouse)
        shared = size(wheelhouse)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"per-host install of torch/torch_xla[tpu]/torchaudio {RELEASE} + {FAIRSEQ} (Python "
          f"{sys.version_info.major}.{sys.version_info.minor}, pip cache off)")
    print(f"{'host':<34}{'seconds':>9}{'downloaded MB':>15}{'read from wheelhouse MB':>25}")
    print(f"{'cold (no wheelhouse)':<34}{cold['seconds']:>9.0f}{cold['downloaded'] / 1e6:>15.0f}{0:>25}")
    print(f"{'first host: fills the wheelhouse':<34}{first['seconds']:>9.0f}{first['downloaded'] / 1e6:>15.0f}{0:>25}")
    print(f"{'every other host':<34}{other['seconds']:>9.0f}{other['downloaded'] / 1e6:>15.0f}"
          f"{shared / 1e6:>25.0f}")
    print(f"a 16-host pod: {16 * cold['downloaded'] / 1e9:.1f} GB downloaded and 16 fairseq builds cold; "
          f"{first['downloaded'] / 1e9:.1f} GB and 1 build with the wheelhouse; per other host "
          f"{cold['seconds'] / max(other['seconds'], 1):.1f}x faster")


if __name__ == "__main__":
    main()
