"""The TorchTPU example's checkpoints outlive the zone: models/torchtpu/examples/tiny_transformer.py
(the script of models/torchtpu/examples/values.env, a spot slice) launched by its launch lines'
train.sh under the real torchrun of the TorchTPU venv, on CPU (two hosts on this machine, gloo),
saves its checkpoint folder on "Filestore", and train.sh copies it to the state bucket
(models/checkpoint_sync.sh, real ``gcloud storage`` against fake-gcs-server). Then the zone is
lost with its Filestore (a move: the new zone's share is empty, docs/recovery.md "A recovery that
moves"), the relaunch takes the bucket's copy and resumes at exactly the next step: every step
after it trains what a run never stopped trains (the same loss, to the digit, on every rank)."""

from __future__ import annotations

import dataclasses
import re
import shutil
import uuid
from pathlib import Path

import pytest
from test_roberta_bucket_resume import wait_for_position
from test_torchtpu import EXAMPLE, LAUNCH, _job, _values

from tests.conftest import EXAMPLES, REPO, require
from tests.support import gcs_gcloud
from tests.support.fakes.fixtures import Fakes, fakes  # noqa: F401 - fixture
from tests.support.side_venv import torchtpu_python
from tests.support.torchrun_hosts import quiet_port, run_hosts

pytestmark = pytest.mark.slow
DEADLINE_S = 420


def _losses(log: str) -> dict[tuple[int, int], str]:
    """(rank, step) -> the loss each step line printed."""
    return {(int(m[1]), int(m[2])): m[3] for m in re.finditer(r"tpubuild-step rank=(\d)/2 step=(\d+) loss=(\S+)", log)}


def test_the_example_resumes_from_the_bucket_at_exactly_the_next_step(make_env, tmp_path, fakes: Fakes):  # noqa: F811
    require("gcloud", shutil.which("gcloud") is not None, "apt-get install google-cloud-cli")
    python = torchtpu_python()
    name = f"proj-{uuid.uuid4().hex[:10]}-tf-backend"
    client = fakes.storage()
    gcs_gcloud.bucket(client, name)
    job = dataclasses.replace(_job(_values(make_env, EXAMPLES / "mig-v6e-16-spot.env")), hosts=2,
                              mount_point=str(tmp_path / "mnt"))
    dest = f"gs://{name}/workspace/{job.env}/checkpoints/torchtpu"
    gcloud_env = gcs_gcloud.env(tmp_path / "home", fakes.gcs_url)

    def run(steps: int, mount: Path, out: str, bucket: str = dest) -> list[str]:
        """Both hosts of one launch; their logs (train.sh appends to each host's log)."""
        run_job = dataclasses.replace(job, args=("--steps", str(steps), "--save-every", "2"), mount_point=str(mount))
        words = LAUNCH.train_words(run_job, str(REPO / "models/torchtpu"), str(REPO))
        at = words.index("--profiler-port") + 1
        extra = {k: gcloud_env[k] for k in ("CLOUDSDK_CONFIG", "HOME", "CLOUDSDK_CORE_DISABLE_PROMPTS", "NO_PROXY")}
        checkpoints = f"{mount}/nfs_share/checkpoints/{job.env}/torchtpu/checkpoint"  # train.sh's default
        hosts = [([*words[:at], str(quiet_port()), *words[at + 1:]],
                  {**env, **extra, "TPUBUILD_MOUNT_POINT": str(mount), "TPUBUILD_CHECKPOINT_BUCKET": bucket,
                   "TMPDIR": str(tmp_path)})
                 for env in LAUNCH.host_env(run_job, ["127.0.0.1", "127.0.0.1"])]
        runs = run_hosts(python, hosts, tmp_path / out, DEADLINE_S, lambda r: Path(LAUNCH.host_log(run_job, r)))
        for r in runs:
            assert r.returncode == 0, r.stdout[-3000:]
        assert Path(checkpoints, "tpubuild-position").is_file()
        return [Path(LAUNCH.host_log(run_job, rank)).read_text() for rank in range(2)]

    straight = run(6, tmp_path / "straight", "straight", bucket="off")  # never stopped, its own share, no copy
    first = run(4, tmp_path / "zone-a", "a")  # preempted after step 4: its last save, step 4, is in the bucket
    manifest = wait_for_position(client.bucket(name), 4, first[0], prefix=f"workspace/{job.env}/checkpoints/torchtpu")
    assert manifest["names"] == "checkpoint"
    # the zone is lost: the new zone's Filestore is another, empty share; the relaunch runs there
    again = run(6, tmp_path / "zone-b", "b")
    assert "resuming from the bucket's checkpoint at position 4" in again[0]
    assert all(f"tpubuild-resume rank={rank}/2 step=4 next=5" in again[rank] for rank in range(2))
    resumed, whole = _losses(again[0] + again[1]), _losses(straight[0] + straight[1])
    assert sorted(resumed) == [(rank, step) for rank in range(2) for step in (5, 6)]  # no step again, none skipped
    assert {k: whole[k] for k in resumed} == resumed  # exactly what the unstopped run trained
    assert (Path(tmp_path / "zone-b/nfs_share/checkpoints", job.env, "torchtpu/checkpoint/tpubuild-position")
            .read_text().strip() == "6")
    assert EXAMPLE in " ".join(LAUNCH.train_words(job, "c", "w"))
