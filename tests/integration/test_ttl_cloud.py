"""The TTL end to end, offline: ``submit`` keeps the source where the TTL's build reads it, and
that build, created exactly as the Scheduler job would create it (the body Terraform gets), runs
``tpubuild dispatch`` from that source and submits the destroy pipeline of the TPU only."""

from __future__ import annotations

import io
import json
import shlex
import tarfile
from pathlib import Path

import pytest

from tests.support.fakes.fixtures import Fakes, fakes, make_repo, unique_env  # noqa: F401 - fixtures


@pytest.fixture
def ttl_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    values = make_repo(tmp_path / "repo", unique_env(), TPU_ARCH="vm", TPU_PYTORCH_VERSION="tpu-ubuntu2204-base",
                       ENV_TTL_HOURS="6")
    monkeypatch.chdir(values.parent)
    return values


def test_submit_keeps_the_ttl_source_and_the_ttl_build_destroys_only_the_tpu(fakes: Fakes, ttl_repo: Path, cli,
                                                                             tmp_path, monkeypatch):
    from builder.inputs import tfvars, ttl
    from builder.config import load

    assert cli("--values", ttl_repo, "initialize")[0] == 0
    s = load(ttl_repo)
    bucket = fakes.storage().bucket(s.state_bucket)
    def finalize(build_id: str, state: str) -> None:  # the pipeline's last step
        from builder.cli import main

        assert main(["--values", str(ttl_repo), "finalize", "--build-id", build_id, "--action", "create"]) == 0

    fakes.google.on_done = finalize
    code, _, err = cli("--values", ttl_repo, "submit", "--action", "create", "--wait")
    assert code == 0, err
    [create] = fakes.google.created
    kept = bucket.blob(ttl.source_object(s.env_name)).download_as_bytes()
    assert kept == bucket.blob(create["source"]["storageSource"]["object"]).download_as_bytes()

    # The Scheduler job POSTs this body to builds.create; play Cloud Build: unpack its source, run its step.
    body = json.loads(tfvars.for_module(s, "tpu")["ttl_build_body"])
    src = body["source"]["storageSource"]
    assert (src["bucket"], src["object"]) == (s.state_bucket, ttl.source_object(s.env_name))
    workdir = tmp_path / "workspace"
    with tarfile.open(fileobj=io.BytesIO(bucket.blob(src["object"]).download_as_bytes()), mode="r:gz") as tar:
        tar.extractall(workdir, filter="data")
    assert (workdir / "values.env").read_bytes() == ttl_repo.read_bytes()
    [step] = body["steps"]
    [line] = [ln for ln in step["args"][1].splitlines() if ln.startswith("tpubuild dispatch")]
    argv = shlex.split(line)[1:]
    monkeypatch.chdir(workdir)
    fakes.google.reset()
    monkeypatch.setenv("TPUBUILD_DISPATCH_BUILD", "ttl-build")
    code, out, err = cli(*argv)
    assert code == 0, err
    [destroy] = fakes.google.created
    ids = [st["id"] for st in destroy["steps"]]
    assert "action-destroy" in destroy["tags"]
    assert any(i.startswith("tpu-") for i in ids)
    assert not any(i.startswith(("filestore-", "shared_pd-", "shared-pd-", "mig-")) for i in ids), ids
    assert "(destroy tpu)" in out


def test_no_ttl_keeps_no_ttl_source(fakes: Fakes, tmp_path: Path, monkeypatch, cli):
    from builder.inputs import ttl
    from builder.config import load

    values = make_repo(tmp_path / "repo", unique_env())
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    assert cli("--values", values, "submit", "--action", "create")[0] == 0
    s = load(values)
    assert not fakes.storage().bucket(s.state_bucket).blob(ttl.source_object(s.env_name)).exists()


# ---------------------------------------------------------------- the Scheduler job: show, extend, status

@pytest.fixture
def scheduler(monkeypatch: pytest.MonkeyPatch):
    import importlib.util

    from tests.conftest import require

    require("google-cloud-scheduler", importlib.util.find_spec("google.cloud.scheduler_v1") is not None,
            "pip install google-cloud-scheduler")
    from tests.support.fakes.scheduler import FakeScheduler

    fake = FakeScheduler().start()
    monkeypatch.setenv("TPUBUILD_SCHEDULER_ENDPOINT", fake.url)
    yield fake
    fake.stop()


def _vm_ttl(tmp_path: Path, monkeypatch, hours: str = "6") -> Path:
    values = make_repo(tmp_path / "repo", unique_env(), TPU_ARCH="vm", TPU_PYTORCH_VERSION="tpu-ubuntu2204-base",
                       ENV_TTL_HOURS=hours)
    monkeypatch.chdir(values.parent)
    return values


def test_ttl_extend_moves_the_schedule_from_the_current_expiry(scheduler, tmp_path, monkeypatch, cli):
    import datetime

    from builder.inputs import ttl
    from builder.config import load

    values = _vm_ttl(tmp_path, monkeypatch)
    s = load(values)
    fires = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)).replace(second=0,
                                                                                                  microsecond=0)
    name = ttl.job_name(s)
    scheduler.jobs[name] = {"name": name, "schedule": ttl.cron_for(fires), "timeZone": "Etc/UTC",
                            "state": "ENABLED", "httpTarget": {"uri": "https://cloudbuild.googleapis.com/v1/"
                                                                      f"projects/{s.project_id}/builds"}}
    code, out, err = cli("--values", values, "ttl", "show")
    assert code == 0, err
    assert f"destroys the TPU at {fires:%Y-%m-%dT%H:%M}Z" in out and ("(in 1h 5" in out or "(in 2h 00m)" in out)
    code, out, err = cli("--values", values, "ttl", "extend", "4h")
    assert code == 0, err
    later = fires + datetime.timedelta(hours=4)
    [(patched, mask, body)] = scheduler.patches
    assert (patched, mask) == (name, "schedule") and body["schedule"] == ttl.cron_for(later)
    assert scheduler.jobs[name]["schedule"] == ttl.cron_for(later)
    assert f"now destroyed at {later:%Y-%m-%dT%H:%M}Z" in out and f"was {fires:%Y-%m-%dT%H:%M}Z" in out
    # twice is twice
    assert cli("--values", values, "ttl", "extend", "1d")[0] == 0
    assert scheduler.jobs[name]["schedule"] == ttl.cron_for(later + datetime.timedelta(days=1))


def test_ttl_bad_input_and_absent_job(scheduler, tmp_path, monkeypatch, cli):
    values = _vm_ttl(tmp_path, monkeypatch)
    code, _, err = cli("--values", values, "ttl", "extend", "soon")
    assert code == 2 and "4h or 2d" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli("--values", values, "ttl", "extend")
    assert code == 2 and "duration" in err
    assert scheduler.patches == []
    code, out, err = cli("--values", values, "ttl", "show")
    assert code == 0 and "absent" in out
    code, _, err = cli("--values", values, "ttl", "extend", "4h")
    assert code == 1 and "no TTL job" in err and len(err.strip().splitlines()) == 1
    plain = make_repo(tmp_path / "plain", unique_env())
    code, _, err = cli("--values", plain, "ttl", "show")
    assert code == 2 and "ENV_TTL_HOURS is not set" in err


def test_status_shows_when_the_ttl_fires(scheduler, fakes: Fakes, tmp_path, monkeypatch, cli):
    import datetime

    from builder.inputs import ttl
    from builder.config import load

    values = _vm_ttl(tmp_path, monkeypatch)
    s = load(values)
    fires = datetime.datetime(datetime.datetime.now(datetime.timezone.utc).year + 1, 1, 2, 3, 4,
                              tzinfo=datetime.timezone.utc)
    scheduler.jobs[ttl.job_name(s)] = {"name": ttl.job_name(s), "schedule": ttl.cron_for(fires),
                                       "timeZone": "Etc/UTC", "state": "ENABLED"}
    code, out, err = cli("--values", values, "status")
    assert "  ttl        destroys the TPU at " + fires.strftime("%Y-%m-%dT%H:%MZ") in out, (out, err)
