"""models/checkpoint_sync.sh with the real ``gcloud storage`` against fake-gcs-server (a versioned
bucket, as the environment's state bucket is): a checkpoint copied to the bucket is whole or not
there at all (the manifest is written last), a copy killed in the middle leaves the previous
checkpoint as what a reader takes, and a resume takes the newer of Filestore's and the bucket's by
their recorded positions; models/torchtpu/train.sh under the real torchrun copies a script's
checkpoint folder and restores it from the bucket (RoBERTa's: tests/models/test_roberta_bucket_resume.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.conftest import REPO, require
from tests.support import gcs_gcloud
from tests.support.fakes.fixtures import Fakes, fakes  # noqa: F401 - fixture

SYNC = REPO / "models/checkpoint_sync.sh"
pytestmark = pytest.mark.slow  # a gcloud start per command: minutes in all


@pytest.fixture
def box(fakes: Fakes, tmp_path: Path) -> dict:  # noqa: F811 - fixture
    require("gcloud", shutil.which("gcloud") is not None, "apt-get install google-cloud-cli")
    name = f"proj-{uuid.uuid4().hex[:10]}-tf-backend"
    client = fakes.storage()
    gcs_gcloud.bucket(client, name)
    env = gcs_gcloud.env(tmp_path / "home", fakes.gcs_url)
    env["TMPDIR"] = str(tmp_path)
    return {"env": env, "bucket": client.bucket(name), "dest": f"gs://{name}/workspace/env1/checkpoints/roberta",
            "tmp": tmp_path}


def sync(box: dict, *args: str, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SYNC), *args], env=env or box["env"], input=stdin, capture_output=True,
                          text=True, timeout=300)


def objects(box: dict) -> list[str]:
    prefix = "workspace/env1/checkpoints/roberta/"
    return sorted(b.name[len(prefix):] for b in box["bucket"].client.list_blobs(box["bucket"], prefix=prefix))


def manifest(box: dict) -> dict[str, str]:
    text = box["bucket"].blob("workspace/env1/checkpoints/roberta/manifest").download_as_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def checkpoint(folder: Path, position: int, size: int = 300_000) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"checkpoint_1_{position}.pt"
    path.write_bytes(bytes([position % 256]) * size)
    return path


def test_copy_is_published_by_its_manifest_and_replaces_the_previous(box):
    src = box["tmp"] / "filestore"
    r = sync(box, "push", "--dest", box["dest"], "--position", "2", f"{checkpoint(src, 2)}=checkpoint_last.pt")
    assert r.returncode == 0, r.stderr
    first = manifest(box)
    assert first["position"] == "2" and first["names"] == "checkpoint_last.pt"
    assert objects(box) == [f"{first['generation']}/checkpoint_last.pt", "manifest"]

    r = sync(box, "push", "--dest", box["dest"], "--position", "4", f"{checkpoint(src, 4)}=checkpoint_last.pt")
    assert r.returncode == 0, r.stderr
    second = manifest(box)
    assert second["position"] == "4" and second["generation"] != first["generation"]
    # the previous generation is gone with all its versions (the bucket is versioned)
    assert objects(box) == [f"{second['generation']}/checkpoint_last.pt", "manifest"]
    old = [b.name for b in box["bucket"].client.list_blobs(box["bucket"], versions=True) if first["generation"] in b.name]
    assert old == []

    # an older or equal position is never copied over a newer one
    r = sync(box, "push", "--dest", box["dest"], "--position", "4", f"{checkpoint(src, 4)}=checkpoint_last.pt")
    assert r.returncode == 0 and "already holds position 4" in r.stderr
    assert manifest(box)["generation"] == second["generation"]


def test_a_copy_killed_before_its_manifest_leaves_the_previous_checkpoint(box):
    src = box["tmp"] / "filestore"
    assert sync(box, "push", "--dest", box["dest"], "--position", "2", f"{checkpoint(src, 2)}=checkpoint_last.pt").returncode == 0
    published = manifest(box)
    # a gcloud that kills the copy (SIGKILL to the script) the moment it would write the manifest:
    # the new generation's files are in the bucket, the manifest still names the previous one
    shim = box["tmp"] / "shim"
    shim.mkdir()
    (shim / "gcloud").write_text(f"""#!/usr/bin/env bash
for a in "$@"; do if [[ $a == */manifest && $1 == storage && $2 == cp ]]; then kill -9 "$PPID"; exit 137; fi; done
exec {shutil.which('gcloud')} "$@"
""")
    (shim / "gcloud").chmod(0o755)
    killed = dict(box["env"], PATH=f"{shim}:{os.environ['PATH']}")
    r = sync(box, "push", "--dest", box["dest"], "--position", "4", f"{checkpoint(src, 4)}=checkpoint_last.pt", env=killed)
    assert r.returncode == -9
    orphans = [o for o in objects(box) if o.startswith("g-000000000004-")]
    assert orphans, objects(box)  # killed in the middle: its files were uploaded
    assert manifest(box) == published

    # a reader (a resume with nothing on Filestore) takes the previous complete checkpoint
    restored = box["tmp"] / "newzone"
    r = sync(box, "pull", "--dest", box["dest"], "--dir", str(restored), "--local", "-1")
    assert r.returncode == 0, r.stderr
    assert "resuming from the bucket's checkpoint at position 2" in r.stderr
    assert (restored / "checkpoint_last.pt").read_bytes() == (src / "checkpoint_1_2.pt").read_bytes()
    assert [p.name for p in restored.iterdir()] == ["checkpoint_last.pt"]  # no temporary folder left

    # the next complete copy publishes itself and removes the killed copy's files
    assert sync(box, "push", "--dest", box["dest"], "--position", "6", f"{checkpoint(src, 6)}=checkpoint_last.pt").returncode == 0
    assert [o for o in objects(box) if o != "manifest"] == [f"{manifest(box)['generation']}/checkpoint_last.pt"]


def test_resume_takes_the_newer_of_filestore_and_the_bucket(box):
    src = box["tmp"] / "filestore"
    assert sync(box, "push", "--dest", box["dest"], "--position", "4", f"{checkpoint(src, 4)}=checkpoint_last.pt").returncode == 0
    local = box["tmp"] / "save"
    local.mkdir()
    (local / "checkpoint_last.pt").write_bytes(b"filestore's, at update 6")
    r = sync(box, "pull", "--dest", box["dest"], "--dir", str(local), "--local", "6")
    assert r.returncode == 0 and "is as new as the bucket's (4) or newer" in r.stderr
    assert (local / "checkpoint_last.pt").read_bytes() == b"filestore's, at update 6"
    r = sync(box, "pull", "--dest", box["dest"], "--dir", str(local), "--local", "3")
    assert r.returncode == 0 and "position 4" in r.stderr and "newer than Filestore's (3)" in r.stderr
    assert (local / "checkpoint_last.pt").read_bytes() == (src / "checkpoint_1_4.pt").read_bytes()
    # an empty bucket prefix: Filestore's stands
    empty = box["dest"].replace("/roberta", "/other")
    r = sync(box, "pull", "--dest", empty, "--dir", str(local), "--local", "-1")
    assert r.returncode == 0 and "no checkpoint in" in r.stderr


def test_a_checkpoint_folder_round_trips_with_its_tree(box):
    folder = box["tmp"] / "filestore" / "checkpoint"
    (folder / "shards").mkdir(parents=True)
    (folder / "model.pt").write_bytes(b"m" * 1000)
    (folder / "shards" / "rank-0.pt").write_bytes(b"0" * 10)
    (folder / "shards" / "rank-1.pt").write_bytes(b"1" * 10)
    (folder / "tpubuild-position").write_text("7\n")
    r = sync(box, "watch", "--dest", box["dest"], "--dir", str(folder),
             stdin="step 6 loss 1.0\ntpubuild-checkpoint 7\nstep 8 loss 0.9\n")
    assert r.returncode == 0, r.stderr
    assert manifest(box)["position"] == "7" and manifest(box)["names"] == "checkpoint"
    restored = box["tmp"] / "newzone"
    (restored / "checkpoint").mkdir(parents=True)
    (restored / "checkpoint" / "stale.pt").write_text("older run")
    r = sync(box, "pull", "--dest", box["dest"], "--dir", str(restored), "--local", "3")
    assert r.returncode == 0, r.stderr
    got = sorted(str(p.relative_to(restored)) for p in restored.rglob("*"))
    assert got == ["checkpoint", "checkpoint/model.pt", "checkpoint/shards", "checkpoint/shards/rank-0.pt",
                   "checkpoint/shards/rank-1.pt", "checkpoint/tpubuild-position"]
    assert (restored / "checkpoint" / "shards" / "rank-1.pt").read_bytes() == b"1" * 10


def test_watch_copies_what_fairseq_says_it_saved(box):
    src = checkpoint(box["tmp"] / "filestore", 2000)
    lines = (f"2026-12-06 | INFO | fairseq.checkpoint_utils | Saved checkpoint {src} (epoch 1 @ 2000 updates, "
             "score None) (writing took 1.2 seconds)\n")
    r = sync(box, "watch", "--dest", box["dest"], "--dir", str(src.parent), stdin="train_inner | loss 3\n" + lines)
    assert r.returncode == 0, r.stderr
    assert manifest(box)["position"] == "2000"
    blob = box["bucket"].blob(f"workspace/env1/checkpoints/roberta/{manifest(box)['generation']}/checkpoint_last.pt")
    assert blob.download_as_bytes() == src.read_bytes()


def test_bad_usage_exits_2(box):
    for args in (["push", "--dest", "/not/a/bucket", "--position", "1", "x"], ["push", "--dest", box["dest"], "x"],
                 ["pull", "--dest", box["dest"], "--dir", "d", "--local", "soon"], ["move"]):
        r = sync(box, *args)
        assert r.returncode == 2 and "usage: checkpoint_sync.sh" in r.stderr, args


#: A user's TorchTPU script as docs/recovery.md asks it to checkpoint: its folder at
#: $TPUBUILD_CHECKPOINT_DIR, tpubuild-position written last, then the save line (rank 0).
SCRIPT = """
import os, pathlib
folder = pathlib.Path(os.environ["TPUBUILD_CHECKPOINT_DIR"])
pos = folder / "tpubuild-position"
start = int(pos.read_text()) if pos.exists() else 0
print(f"starts at step {start + 1}", flush=True)
for step in range(start + 1, start + 3):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.pt").write_text(f"weights after step {step}")
    pos.write_text(f"{step}\\n")
    print(f"tpubuild-checkpoint {step}", flush=True)
"""


def test_torchtpu_train_sh_copies_the_folder_and_resumes_from_the_bucket(box):
    """models/torchtpu/train.sh under the real torchrun (this machine's torch, one node): the
    script's saves are copied; with Filestore's folder gone, the relaunch starts after the
    bucket's step."""
    import importlib.util
    import socket
    import sys

    require("torch", importlib.util.find_spec("torch") is not None, "pip install torch (torchrun)")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = box["tmp"] / "train.py"
    script.write_text(SCRIPT)
    logs, ckpt = box["tmp"] / "logs", box["tmp"] / "nfs" / "checkpoint"
    env = dict(box["env"], NNODES="1", NODE_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               TPUBUILD_PYTHON=sys.executable, TPUBUILD_CHECKPOINT_DIR=str(ckpt), TPUBUILD_CHECKPOINT_BUCKET=box["dest"])
    argv = ["bash", str(REPO / "models/torchtpu/train.sh"), "--log-dir", str(logs), "--env", "env1",
            "--workdir", str(box["tmp"]), "--", str(script)]
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    log = logs / "host-0.log"  # what the script prints goes to the host's log (and its readers)
    assert "starts at step 1" in log.read_text() and manifest(box)["position"] == "2", r.stderr[-2000:]
    shutil.rmtree(ckpt)  # a new zone's empty share
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "starts at step 3" in log.read_text()
    assert "resuming from the bucket's checkpoint at position 2" in log.read_text()
    assert manifest(box)["position"] == "4" and manifest(box)["names"] == "checkpoint"
