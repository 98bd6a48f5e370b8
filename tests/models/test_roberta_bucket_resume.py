"""RoBERTa's checkpoints outlive the zone: our train.sh with real fairseq on CPU (the machinery of
test_roberta_e2e.py) copies each checkpoint fairseq saves to the bucket (models/checkpoint_sync.sh,
real ``gcloud storage`` against fake-gcs-server); then Filestore is lost (a new zone has an empty
share) and the relaunch takes the bucket's checkpoint and resumes at exactly the next update and
sample."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import time
import uuid
from pathlib import Path

import pytest

from builder.config import load
from tests.conftest import NODE, require
from tests.models.test_roberta_e2e import prepare, train, two_updates
from tests.support import gcs_gcloud
from tests.support.fakes.fixtures import Fakes, fakes  # noqa: F401 - fixture

pytestmark = pytest.mark.slow


def wait_for_position(bucket, position: int, log: str, timeout: float = 240,
                      prefix: str = "workspace/tpu-dev1/checkpoints/roberta") -> dict[str, str]:
    """The manifest once it holds ``position`` (the copy runs in the background, after the save)."""
    deadline = time.monotonic() + timeout
    found: dict[str, str] = {}
    while time.monotonic() < deadline:
        blob = bucket.blob(f"{prefix}/manifest")  # a new one: the live generation
        if blob.exists():
            found = dict(line.split("=", 1) for line in blob.download_as_text().splitlines() if "=" in line)
            if found.get("position") == str(position):
                return found
        time.sleep(2)
    raise AssertionError(f"the bucket's manifest never reached position {position}: {found}\n{log[-3000:]}")


def test_resume_from_the_bucket_after_filestore_is_lost(make_env, tmp_path, fakes: Fakes):  # noqa: F811
    require("fairseq", importlib.util.find_spec("fairseq") is not None,
            "pip install torch==2.13.0 && pip install --no-build-isolation fairseq-fixed==0.12.3.1")
    require("gcloud", shutil.which("gcloud") is not None, "apt-get install google-cloud-cli")
    name = f"proj-{uuid.uuid4().hex[:10]}-tf-backend"
    client = fakes.storage()
    gcs_gcloud.bucket(client, name)
    dest = f"gs://{name}/workspace/tpu-dev1/checkpoints/roberta"
    manifest = client.bucket(name)

    launcher, job, keys = two_updates(make_env, tmp_path)
    env = {**gcs_gcloud.env(tmp_path / "home", fakes.gcs_url), "PYTHON": sys.executable, "TPUBUILD_HOST_ID": "0",
           "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1", "TPUBUILD_CHECKPOINT_BUCKET": dest, "TMPDIR": str(tmp_path)}
    assert prepare(launcher, job, env).returncode == 0

    # 2 updates: each save is copied to the bucket, the last one published by the manifest
    r = train(launcher, job, env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "No existing checkpoint found" in r.stdout and f"no checkpoint in {dest}" in r.stdout
    published = wait_for_position(manifest, 2, r.stderr)
    assert published["names"] == "checkpoint_last.pt"
    gens = {b.name.split("/")[-2] for b in client.list_blobs(name, prefix="workspace/tpu-dev1/checkpoints/roberta/g-")}
    assert gens == {published["generation"]}  # the copy of update 1 was replaced, not kept

    # the zone is lost with its Filestore: the new share has no checkpoint
    save_dir = Path(launcher.save_dir(job))
    shutil.rmtree(save_dir)
    job4 = launcher.Job.from_settings(load(make_env(NODE, ROBERTA_MAX_UPDATES="4", **keys)))
    r = train(launcher, job4, env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "resuming from the bucket's checkpoint at position 2" in r.stdout
    assert f"Loaded checkpoint {save_dir}/checkpoint_last.pt (epoch 1 @ 2 updates)" in r.stdout
    # exactly the next sample: the position a resume from Filestore reads (test_roberta_e2e.py)
    assert "tpubuild: resumes at update 2, sample 8 of epoch 1, translated from world size 1 to 1" in r.stdout
    assert "No existing checkpoint found" not in r.stdout
    assert re.search(r"num_updates: 4 >= max_update: 4", r.stdout)
    wait_for_position(manifest, 4, r.stderr)

    # Filestore's checkpoint (update 4) is now as new as the bucket's: a relaunch keeps Filestore's
    r = train(launcher, job4, env)
    assert "is as new as the bucket's (4) or newer: resuming from Filestore's" in r.stdout
    assert not [p for p in save_dir.iterdir() if p.name.startswith(".tpubuild-pull")]
    assert os.path.getsize(save_dir / "checkpoint_last.pt") > 0
