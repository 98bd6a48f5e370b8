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

from tests.fakes.fixtures import Fakes, fakes, make_repo, unique_env  # noqa: F401 - fixtures


@pytest.fixture
def ttl_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    values = make_repo(tmp_path / "repo", unique_env(), TPU_ARCH="vm", TPU_PYTORCH_VERSION="tpu-ubuntu2204-base",
                       ENV_TTL_HOURS="6")
    monkeypatch.chdir(values.parent)
    return values


def test_submit_keeps_the_ttl_source_and_the_ttl_build_destroys_only_the_tpu(fakes: Fakes, ttl_repo: Path, cli,
                                                                             tmp_path, monkeypatch):
    from builder import tfvars, ttl
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
    from builder import ttl
    from builder.config import load

    values = make_repo(tmp_path / "repo", unique_env())
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    assert cli("--values", values, "submit", "--action", "create")[0] == 0
    s = load(values)
    assert not fakes.storage().bucket(s.state_bucket).blob(ttl.source_object(s.env_name)).exists()
