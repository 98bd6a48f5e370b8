"""models/roberta end to end on CPU with real fairseq: our data prep (prepare_data.sh) on a small
generated corpus, then our train.sh with the launcher's exact arguments (``--tpu`` swapped for
``--cpu``, world size 1, a tiny encoder), 2 updates, then a relaunch with ROBERTA_MAX_UPDATES=4
that must resume from checkpoint_last.pt in the save dir the launcher chose."""

from __future__ import annotations

import importlib.util
import os
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from builder.commands.train import load_launcher
from builder.config import load
from tests.conftest import NODE, REPO, require

pytestmark = pytest.mark.slow

SCRIPTS = REPO / "models/roberta"
TINY = ["--encoder-layers", "1", "--encoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "2", "--num-workers", "0"]


def write_corpus(folder: Path, seed: int = 0) -> None:
    """Pre-tokenised text: numbers as tokens, blank lines between documents."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in (("train.txt", 300), ("valid.txt", 30)):
        with (folder / name).open("w") as f:
            for i in range(lines):
                f.write(" ".join(str(rng.randrange(40)) for _ in range(rng.randrange(4, 30))) + "\n")
                if i % 10 == 9:
                    f.write("\n")


def prepare(launcher, job, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    words = shlex.split(launcher.prepare_line(job))
    assert words[:2] == ["bash", f"{launcher.code_dir(job)}/prepare_data.sh"]
    cmd = ["bash", str(SCRIPTS / "prepare_data.sh"), *words[2:], "--python", sys.executable, "--workers", "1"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


def train(launcher, job, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """train.sh exactly as the host line runs it, on CPU: --tpu → --cpu, one process, tiny model."""
    words = shlex.split(launcher.host_train_line(job))
    assert words[:2] == ["bash", f"{launcher.code_dir(job)}/train.sh"]  # node: no env prefix
    ours, fairseq = words[2:words.index("--")], words[words.index("--") + 1:]
    assert ours[ours.index("--arch") + 1] == "node"
    assert ours[ours.index("--conda-env") + 1] == launcher.conda_env(job)
    ours = ["--log-dir", ours[ours.index("--log-dir") + 1], "--arch", "local"]  # this machine's Python
    fairseq[fairseq.index("--tpu")] = "--cpu"
    fairseq[fairseq.index("--distributed-world-size") + 1] = "1"
    cmd = ["bash", str(SCRIPTS / "train.sh"), *ours, "--", *fairseq, *TINY]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180)


def two_updates(make_env, tmp_path: Path) -> tuple:
    """A generated corpus at tmp_path/raw, a values.env of a tiny run saving every update up to
    update 2 (MOUNT_POINT tmp_path/mnt): the launcher, its Job and the keys (a relaunch changes
    ROBERTA_MAX_UPDATES)."""
    raw = tmp_path / "raw"
    write_corpus(raw)
    keys = dict(TPU_ACCELERATOR_TYPE="v3-8", MOUNT_POINT=str(tmp_path / "mnt"), ROBERTA_DATA_SOURCE=str(raw),
                ROBERTA_BPE="none", ROBERTA_TOTAL_BATCH="32", ROBERTA_BATCH_PER_DEVICE="2",
                ROBERTA_SEQ_LEN="32", ROBERTA_WARMUP_UPDATES="1", ROBERTA_SAVE_INTERVAL_UPDATES="1",
                ROBERTA_BF16="false")
    settings = load(make_env(NODE, ROBERTA_MAX_UPDATES="2", **keys))
    launcher, _ = load_launcher(settings, "roberta")
    return launcher, launcher.Job.from_settings(settings), keys


def test_prepare_train_two_updates_then_resume_to_four(make_env, tmp_path):
    require("fairseq", importlib.util.find_spec("fairseq") is not None,
            "pip install torch==2.13.0 && pip install --no-build-isolation fairseq-fixed==0.12.3.1")
    mount, raw = tmp_path / "mnt", tmp_path / "raw"
    launcher, job, keys = two_updates(make_env, tmp_path)
    env = {**os.environ, "PYTHON": sys.executable, "TPUBUILD_HOST_ID": "0", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}

    # data prep: builds data-bin where the launcher points fairseq, then skips when current
    data_bin = Path(launcher.data_bin(job))
    assert data_bin == mount / "nfs_share/data-bin/tpu-dev1/roberta"
    r = prepare(launcher, job, env)
    assert r.returncode == 0, r.stderr
    assert {"dict.txt", "train.bin", "train.idx", "valid.bin", "valid.idx", ".tpubuild-stamp"} <= {
        p.name for p in data_bin.iterdir()}
    built = (data_bin / "train.bin").stat().st_mtime_ns
    r = prepare(launcher, job, env)
    assert r.returncode == 0 and "is current for this input" in r.stderr and "skipped" in r.stderr
    assert (data_bin / "train.bin").stat().st_mtime_ns == built

    # 2 updates from scratch
    save_dir = Path(launcher.save_dir(job))
    assert save_dir == mount / "nfs_share/checkpoints/tpu-dev1/roberta"
    r = train(launcher, job, env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "No existing checkpoint found" in r.stdout
    assert re.search(r"num_updates: 2 >= max_update: 2", r.stdout)
    assert (save_dir / "checkpoint_last.pt").is_file()
    host_log = Path(launcher.host_log(job, 0))
    assert host_log.is_file() and "num_updates: 2 >= max_update: 2" in host_log.read_text()

    # relaunch with max_update 4: resumes at update 2 from the launcher's save dir
    job4 = launcher.Job.from_settings(load(make_env(NODE, ROBERTA_MAX_UPDATES="4", **keys)))
    assert launcher.save_dir(job4) == str(save_dir)
    r = train(launcher, job4, env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert f"Loaded checkpoint {save_dir}/checkpoint_last.pt (epoch 1 @ 2 updates)" in r.stdout
    # models/roberta/resume.py read the position (world size 1 both times: 2 updates x 2 batches of 2)
    assert "tpubuild: resumes at update 2, sample 8 of epoch 1, translated from world size 1 to 1" in r.stdout
    assert re.search(r"num_updates: 4 >= max_update: 4", r.stdout)
    assert "num_updates 3" in r.stdout or "checkpoint_1_3.pt" in r.stdout
    assert "No existing checkpoint found" not in r.stdout
    assert host_log.read_text().count("starts fairseq-train") == 2  # one log per host, appended

    # changed input: prep rebuilds (new stamp, new token in the dictionary), atomically
    first = (data_bin / ".tpubuild-stamp").read_text()
    with (raw / "train.txt").open("a") as f:
        f.write("1 2 3 4 5 6 7 8 9 1000\n")
    r = prepare(launcher, job, env)
    assert r.returncode == 0 and "wrote" in r.stderr, r.stderr
    assert (data_bin / ".tpubuild-stamp").read_text() != first
    assert "1000 1" in (data_bin / "dict.txt").read_text()
    assert not [p for p in data_bin.parent.iterdir() if p.name.startswith(".roberta.")]  # no leftovers

    # missing input: refused, and the existing data-bin is left as it was
    (raw / "valid.txt").unlink()
    r = prepare(launcher, job, env)
    assert r.returncode == 2 and "valid.txt not found" in r.stderr
    assert (data_bin / "train.bin").is_file()


@pytest.mark.parametrize("opts,msg", [
    (["--dest", "/tmp/x"], "usage: prepare_data.sh"),
    (["--source", "/nonexistent-roberta", "--dest", "/tmp/x"], "is not a folder"),
])
def test_prepare_refuses_bad_arguments(opts, msg):
    r = subprocess.run(["bash", str(SCRIPTS / "prepare_data.sh"), *opts, "--python", sys.executable],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and msg in r.stderr


def test_install_is_idempotent_with_a_stamp(tmp_path):
    """install.sh on this machine's Python (fairseq already there, so pip has nothing to do):
    the first run pins torch and records a stamp, the second sees it and does nothing."""
    require("fairseq", importlib.util.find_spec("fairseq") is not None,
            "pip install torch==2.13.0 && pip install --no-build-isolation fairseq-fixed==0.12.3.1")
    env = {**os.environ, "HOME": str(tmp_path), "PYTHON": sys.executable, "PIP_NO_INDEX": "1"}
    cmd = ["bash", str(SCRIPTS / "install.sh"), "--arch", "local"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    want = "fairseq-fixed==0.12.3.1" if sys.version_info >= (3, 11) else "fairseq==0.12.2"
    assert f"installed {want}" in first.stderr
    stamps = list((tmp_path / ".tpubuild/stamps").iterdir())
    assert len(stamps) == 1 and stamps[0].read_text().startswith(f"{want} torch==")
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0 and f"already installed: {want}" in second.stderr
    assert "installing" not in second.stderr
