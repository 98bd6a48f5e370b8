"""RoBERTa on TorchTPU (``MODEL="roberta_torchtpu"``, examples/*roberta-torchtpu.env) keeps its
checkpoints beyond the zone: pretrain.py under its launch lines' train.sh and the real torchrun of the
TorchTPU venv (two hosts on this machine, CPU) publishes each checkpoint_last.pt in
``$TPUBUILD_CHECKPOINT_DIR`` and train.sh copies that folder to the state bucket (real ``gcloud
storage`` against fake-gcs-server). The zone is lost with its Filestore (the new zone's share is
empty); the relaunch takes the bucket's copy and resumes at exactly the next sequence, every rank."""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from pathlib import Path

import pytest
from test_roberta_bucket_resume import wait_for_position
from test_roberta_torchtpu import DEADLINE_S, LAUNCH, LAUNCHER, TINY, _job, data_bin  # noqa: F401 - fixture

from tests.conftest import REPO, require
from tests.support import gcs_gcloud
from tests.support.fakes.fixtures import Fakes, fakes  # noqa: F401 - fixture
from tests.support.side_venv import torchtpu_python
from tests.support.torchrun_hosts import run_hosts

pytestmark = pytest.mark.slow


def test_resume_from_the_bucket_after_filestore_is_lost(data_bin, tmp_path, fakes: Fakes) -> None:  # noqa: F811
    require("gcloud", shutil.which("gcloud") is not None, "apt-get install google-cloud-cli")
    python = torchtpu_python()
    name = f"proj-{uuid.uuid4().hex[:10]}-tf-backend"
    client = fakes.storage()
    gcs_gcloud.bucket(client, name)
    gcloud_env = gcs_gcloud.env(tmp_path / "home", fakes.gcs_url)

    def train(zone: str, stop_at: int) -> tuple[object, list[str]]:
        """One launch in ``zone`` (its own Filestore), 2 hosts, until update ``stop_at``; the job and the logs."""
        root = tmp_path / zone
        root.mkdir()
        job = _job(root, data_bin, TINY.format(trace=root / "trace") +
                   f" --stop-at-update {stop_at} --save-interval-updates 1")
        job = dataclasses.replace(job, hosts=2)
        words = LAUNCH.train_words(job, str(REPO / "models/torchtpu"), str(REPO))
        assert words[words.index("--model") + 1] == "roberta_torchtpu"  # its folder, on Filestore and in the bucket
        words[words.index("--profiler-port") + 1] = ""
        env = {k: gcloud_env[k] for k in ("CLOUDSDK_CONFIG", "HOME", "CLOUDSDK_CORE_DISABLE_PROMPTS", "NO_PROXY")}
        env.update(TPUBUILD_MOUNT_POINT=job.mount_point, TMPDIR=str(tmp_path),
                   TPUBUILD_CHECKPOINT_BUCKET=f"gs://{name}/workspace/{job.env}/checkpoints/roberta_torchtpu")
        hosts = [(words, {**h, **env}) for h in LAUNCH.host_env(job, ["127.0.0.1"] * 2)]
        logs = [Path(LAUNCH.host_log(job, rank)) for rank in range(2)]
        for rank, r in enumerate(run_hosts(python, hosts, root / "out", DEADLINE_S, lambda rank: logs[rank])):
            assert r.returncode == 0, logs[rank].read_text(errors="replace")[-3000:] if logs[rank].exists() else r.stdout
        return job, [p.read_text() for p in logs]

    job, first = train("zone-a", 2)
    assert "tpubuild-done updates=2 consumed=32 world=2" in first[0]
    assert "tpubuild-checkpoint 2" in first[0]
    published = wait_for_position(client.bucket(name), 2, first[0], prefix=f"workspace/{job.env}/checkpoints/roberta_torchtpu")
    assert published["names"] == "checkpoint"
    files = {b.name.rsplit("/", 1)[-1] for b in client.list_blobs(name, prefix=f"workspace/{job.env}/checkpoints/"
                                                                              f"roberta_torchtpu/{published['generation']}/")}
    assert files == {"checkpoint_last.pt", "tpubuild-position"}  # not the numbered checkpoints

    job_b, again = train("zone-b", 4)  # a new zone: its Filestore holds nothing
    assert "resuming from the bucket's checkpoint at position 2" in again[0]
    assert all(f"tpubuild-resume update=2 next_position=32 epoch=0 offset=32 saved_world=2 world=2 rank={rank}"
               in again[rank] for rank in range(2))
    assert "tpubuild-done updates=4 consumed=64 world=2" in again[0]
    assert not any("update=1 " in line or "update=2 " in line for log in again for line in log.splitlines()
                   if line.startswith("tpubuild-step"))  # nothing trained twice
    assert Path(LAUNCHER.save_dir(job_b), "checkpoint_last.pt").is_file()
