"""models/roberta under the REAL torch_xla 2.9 (PJRT, ``PJRT_DEVICE=CPU``), through
``pjrt_compat.py``: the exact host command line ``tpubuild train roberta --dry-run`` prints for a
one-device TPU VM (v5litepod-1), adapted only by paths and environment (``PJRT_DEVICE=CPU``, the
repository's train.sh, the xla venv first on PATH, a sandboxed /run/tpubuild), on a tiny model
(``ROBERTA_EXTRA_ARGS``, part of values.env and so of the printed line).

What it proves (docs/models.md, "What is proven"):
* fairseq 0.12 trains under PJRT through the spawn path (``xmp.spawn(nprocs=None)``: the steps
  run in a child process, not in the launched one), ordinals from ``torch_xla.runtime``, the log
  step's memory statistics (``gb_free``) without the XRT keys;
* after warm-up (2 updates per process) a training step compiles no new XLA graph (torch_xla's
  ``CompileTime`` metric around every ``train_step``);
* stop at 4 updates, relaunch to 8: the relaunch loads the launcher's ``checkpoint_last.pt``,
  whose saved position is the 8 batches trained (not the loader's read-ahead), read through
  models/roberta/resume.py (the same world size: no translation), and trains on exactly the
  samples an uninterrupted 8-update run trains in updates 5..8.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO, run_tpubuild
from tests.models.test_roberta_e2e import write_corpus
from tests.support.side_venv import xla_env, xla_python

pytestmark = pytest.mark.slow

SCRIPTS = REPO / "models/roberta"
TINY = ("--encoder-layers 1 --encoder-embed-dim 16 --encoder-ffn-embed-dim 32 --encoder-attention-heads 2 "
        "--num-workers 0 --log-interval 2 --seed 7")
WARMUP = 2  # updates per process that may compile (first step; optimizer state appears in the second)
BATCH, FREQ = 2, 2


def values(make_env, mount: Path, max_updates: int) -> Path:
    return make_env(EXAMPLES / "vm-v5litepod-16.env", TPU_ACCELERATOR_TYPE="v5litepod-1", MOUNT_POINT=str(mount),
                    ROBERTA_BPE="none", ROBERTA_TOTAL_BATCH=str(BATCH * FREQ), ROBERTA_BATCH_PER_DEVICE=str(BATCH),
                    ROBERTA_SEQ_LEN="32", ROBERTA_WARMUP_UPDATES="1", ROBERTA_SAVE_INTERVAL_UPDATES="2",
                    ROBERTA_MAX_UPDATES=str(max_updates), ROBERTA_EXTRA_ARGS=TINY)  # bf16 (default true): --bf16


def printed_host_line(path: Path) -> list[str]:
    """Host 0's line exactly as ``tpubuild train roberta --dry-run`` prints it."""
    r = run_tpubuild("train", "roberta", "--dry-run", "--values", path)
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("# host 0 (log ")]
    return shlex.split(line.split(" runs: ", 1)[1])


def adapt(words: list[str]) -> list[str]:
    """Paths and environment only: PJRT on CPU, the repository's train.sh."""
    assert words[0] == "env" and "PJRT_DEVICE=TPU" in words
    words = ["PJRT_DEVICE=CPU" if w == "PJRT_DEVICE=TPU" else w for w in words]
    bash = words.index("bash")
    assert words[bash + 1] == ".tpubuild/roberta/train.sh"
    words[bash + 1] = str(SCRIPTS / "train.sh")
    assert words[words.index("--arch") + 1] == "vm" and "--tpu" in words
    return words


class Host:
    """A sandboxed TPU VM host: ready marker, empty profile, worker number 0, the xla venv."""

    def __init__(self, root: Path, python: Path) -> None:
        (root / "run").mkdir(parents=True)
        (root / "run/ready").write_text("")
        (root / "profile.d").mkdir()
        (root / "home").mkdir()
        self.trace = root / "trace.jsonl"
        self.env = xla_env(python, HOME=str(root / "home"), TPUBUILD_RUN_DIR=str(root / "run"),
                           TPUBUILD_PROFILE_D=str(root / "profile.d"), TPUBUILD_WORKER_NUMBER="0",
                           TPUBUILD_TRACE=str(self.trace), CPU_NUM_DEVICES="1",
                           TPUBUILD_TRAIN_RESTARTS="0")  # a crash fails here, with its output

    def run(self, words: list[str]) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
        """Run the line; the result carries ``pid``, the launched process's (train.sh execs Python)."""
        start = len(self.steps())
        with subprocess.Popen(adapt(words), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=self.env) as p:
            out, err = p.communicate(timeout=600)
        r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        r.pid = p.pid  # type: ignore[attr-defined]
        return r, self.steps()[start:]

    def steps(self) -> list[dict]:
        if not self.trace.exists():
            return []
        return [json.loads(line) for line in self.trace.read_text().splitlines()]


def run_probe(tmp_path: Path, body: str) -> list[str]:
    """``body`` as a script under the xla venv's Python (pjrt_compat importable), one CPU device; its
    stdout lines (it must exit 0)."""
    python = xla_python("fairseq_cli.train")
    script = tmp_path / "probe.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(SCRIPTS)!r})\n" + body)
    r = subprocess.run([str(python), str(script)], capture_output=True, text=True, timeout=300,
                       env=xla_env(python, CPU_NUM_DEVICES="1"))
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip().splitlines()


def saved_position(python: Path, checkpoint: Path) -> dict:
    code = ("import sys, json, torch; s = torch.load(sys.argv[1], map_location='cpu', weights_only=False); "
            "print(json.dumps({'updates': s['optimizer_history'][-1]['num_updates'], "
            "**s['extra_state']['train_iterator']}))")
    r = subprocess.run([str(python), "-c", code, str(checkpoint)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def assert_no_compile_after_warmup(steps: list[dict]) -> None:
    late = [s for s in steps[WARMUP:]]
    assert late and all(s["step_compiles"] == 0 for s in late), [(s["update"], s["step_compiles"]) for s in steps]
    assert steps[0]["step_compiles"] > 0  # the metric is really read: the first step compiles


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory) -> Path:
    python = xla_python("fairseq_cli.train")
    root = tmp_path_factory.mktemp("xla-data")
    write_corpus(root / "raw")
    out = root / "data-bin"
    r = subprocess.run(["bash", str(SCRIPTS / "prepare_data.sh"), "--source", str(root / "raw"), "--bpe", "none",
                        "--dest", str(out), "--python", str(python), "--workers", "1"],
                       capture_output=True, text=True, timeout=300, env=xla_env(python))
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def test_printed_line_trains_under_pjrt_and_resumes_at_the_trained_position(make_env, tmp_path, data_bin):
    python = xla_python("fairseq_cli.train")
    runs = {}
    for name in ("resumed", "straight"):
        mount = tmp_path / name / "mnt"
        shutil.copytree(data_bin, mount / "nfs_share/data-bin/v5e-pod/roberta")
        runs[name] = (mount, Host(tmp_path / name / "host", python))

    # resumed: 4 updates, then the same line with ROBERTA_MAX_UPDATES=8
    mount, host = runs["resumed"]
    save_dir = mount / "nfs_share/checkpoints/v5e-pod/roberta"
    first = printed_host_line(values(make_env, mount, 4))
    assert first[first.index("--save-dir") + 1] == str(save_dir)
    r, steps1 = host.run(first)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert "No existing checkpoint found" in r.stdout
    assert [s["update"] for s in steps1] == [1, 2, 3, 4]
    assert len({s["pid"] for s in steps1}) == 1 and steps1[0]["pid"] != r.pid  # xmp.spawn's child trained
    assert all(s["rank"] == 0 for s in steps1)
    assert "gb_free" in r.stdout  # the log step read memory statistics without the XRT keys
    assert_no_compile_after_warmup(steps1)
    # the saved position is what was trained: 4 updates x 2 batches, not the loader's read-ahead
    pos = saved_position(python, save_dir / "checkpoint_last.pt")
    assert pos["updates"] == 4 and pos["epoch"] == 1 and pos["iterations_in_epoch"] == 4 * FREQ, pos
    assert sum(len(s["ids"]) for s in steps1) == 4 * FREQ * BATCH

    again = printed_host_line(values(make_env, mount, 8))
    r, steps2 = host.run(again)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert f"Loaded checkpoint {save_dir}/checkpoint_last.pt (epoch 1 @ 4 updates)" in r.stdout
    # models/roberta/resume.py in the spawned replica: the same size, 8 batches of 2 sequences
    assert "tpubuild: resumes at update 4, sample 16 of epoch 1, translated from world size 1 to 1" in r.stdout
    assert [s["update"] for s in steps2] == [5, 6, 7, 8]
    assert_no_compile_after_warmup(steps2)
    pos = saved_position(python, save_dir / "checkpoint_last.pt")
    assert pos["updates"] == 8 and pos["iterations_in_epoch"] == 8 * FREQ, pos

    # straight: 8 updates in one go; the resumed run saw exactly its samples, in its order
    mount_b, host_b = runs["straight"]
    r, steps = host_b.run(printed_host_line(values(make_env, mount_b, 8)))
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert [s["update"] for s in steps] == list(range(1, 9))
    assert_no_compile_after_warmup(steps)
    resumed_ids = [s["ids"] for s in steps1 + steps2]
    assert resumed_ids == [s["ids"] for s in steps]
    flat = [i for ids in resumed_ids for i in ids]
    assert len(flat) == 8 * FREQ * BATCH and len(set(flat)) == len(flat)  # no sample twice, none skipped


def test_spawn_takes_a_child_process_and_pjrt_ordinals(tmp_path):
    """The shim's spawn on world size 1: fn runs in a spawned process (not the caller), with a
    private deep copy of cfg per replica, ordinals from torch_xla.runtime, and fairseq's
    distributed_utils answering world size / rank through them."""
    lines = run_probe(tmp_path,
        "import os, json\n"
        "import pjrt_compat\n"
        "from fairseq.distributed import utils as du\n"
        "def main(cfg, **kw):\n"
        "    import torch_xla.runtime as xr\n"
        "    print(json.dumps({'pid': os.getpid(), 'rank': cfg.distributed_training.distributed_rank,\n"
        "        'world': du.get_global_world_size(), 'global': du.get_global_rank(), 'xr': xr.world_size()}))\n"
        "if __name__ == '__main__':\n"
        "    assert pjrt_compat.install()\n"
        "    from fairseq import options\n"
        "    from fairseq.dataclass.utils import convert_namespace_to_omegaconf\n"
        "    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[\n"
        "        'data-bin', '--task', 'masked_lm', '--arch', 'roberta_base', '--tpu', '--distributed-world-size', '1'])\n"
        "    cfg = convert_namespace_to_omegaconf(args)  # as fairseq_cli.train.cli_main builds it\n"
        "    print('parent', os.getpid())\n"
        "    du.call_main(cfg, main)\n")
    parent = int(next(ln for ln in lines if ln.startswith("parent ")).split()[1])
    (child,) = [json.loads(ln) for ln in lines if ln.startswith("{")]
    assert child["pid"] != parent
    assert child == {**child, "rank": 0, "world": 1, "global": 0, "xr": 1}


def test_loader_starts_where_the_epoch_stood_before_its_thread_reads_ahead(tmp_path):
    """pjrt_compat.tpu_data_loader reads the epoch iterator's position and length before the
    ParallelLoader's thread starts: that thread advances ``n`` as it reads ahead, and a wrapper
    built from the advanced ``n`` yields nothing (on a busy CI host, a validation of no batch
    failed with fairseq's ``KeyError: 'loss'``). The main thread's reads of ``n`` are slowed
    here so that the thread always wins the race that a loaded host loses now and then."""
    lines = run_probe(tmp_path,
        "import threading, time, json, torch\n"
        "import pjrt_compat\n"
        "from fairseq.data import iterators\n"
        "class Slow(iterators.CountingIterator):\n"
        "    @property\n"
        "    def n(self):\n"
        "        if threading.current_thread() is threading.main_thread():\n"
        "            time.sleep(0.5)\n"
        "        return self._n\n"
        "    @n.setter\n"
        "    def n(self, value):\n"
        "        self._n = value\n"
        "itr = Slow([{'id': torch.tensor([i])} for i in range(6)], start=0)\n"
        "print(json.dumps([int(b['id'].cpu()[0]) for b in pjrt_compat.tpu_data_loader(itr)]))\n")
    assert json.loads(lines[-1]) == [0, 1, 2, 3, 4, 5]
