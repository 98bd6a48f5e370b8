"""submit / dispatch / finalize end to end through the CLI: the real google-cloud-build client
(REST) talks to the local fake, the real google-cloud-storage client to fake-gcs-server."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from tests.support.fakes.fixtures import Fakes, fakes, repo  # noqa: F401 - fixtures


@pytest.fixture
def env(fakes: Fakes, repo: Path, cli):
    from builder.config import load

    assert cli("--values", repo, "initialize")[0] == 0
    s = load(repo)
    return s, fakes.storage().bucket(s.state_bucket)


def _finalize_on_success(fakes: Fakes, cli, values: Path, action: str) -> list[tuple[int, str, str]]:
    """Play the pipeline's last step: on SUCCESS run `tpubuild finalize` as the build would."""
    ran: list[tuple[int, str, str]] = []

    def done(build_id: str, state: str) -> None:
        if state == "SUCCESS":
            from builder.cli import main

            ran.append((main(["--values", str(values), "finalize", "--build-id", build_id, "--action", action]),
                        build_id, state))

    fakes.google.on_done = done
    return ran


def _tar_names(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: m for m in tar.getmembers()}


def test_dispatch_create_submits_the_pipeline_from_a_content_addressed_tarball(env, fakes: Fakes, repo: Path, cli):
    from builder.cloud import lock, snapshot

    s, bucket = env
    finals = _finalize_on_success(fakes, cli, repo, "create")
    code, out, err = cli("--values", repo, "dispatch", "--action", "create", "--tpu", "default", "--mig", "default")
    assert code == 0, err
    [body] = fakes.google.created
    storage_source = body["source"]["storageSource"]
    assert storage_source["bucket"] == s.state_bucket
    sha = storage_source["object"].removeprefix("source/").removesuffix(".tgz")
    tgz = bucket.blob(storage_source["object"]).download_as_bytes()
    assert hashlib.sha256(gzip.decompress(tgz)).hexdigest() == sha
    members = _tar_names(tgz)
    assert {"values.env", "setup.cfg", "pyproject.toml", "README.md", "builder/__init__.py",
            "modules/tpu_node/main.tf", "env_setup/scripts/startup.sh", "models/roberta/train.sh",
            "tfvars/tpu.tfvars.json", "tfvars/filestore.tfvars.json"} <= set(members)
    assert not any("__pycache__" in n for n in members)
    assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in members.values())
    assert members["env_setup/scripts/startup.sh"].mode == 0o755
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        assert tar.extractfile("values.env").read() == repo.read_bytes()
        from builder.inputs import tfvars
        assert json.loads(tar.extractfile("tfvars/tpu.tfvars.json").read()) == tfvars.for_module(s, "tpu")
    step_ids = [st["id"] for st in body["steps"]]
    assert "tpu-apply" in step_ids and step_ids[-1] == "finalize"
    assert "tpubuild" in body["tags"] and "action-create" in body["tags"]
    # streamed: each step's state changes, then the outcome
    build_id = finals[0][1]
    assert f"build {build_id}: QUEUED" in out and f"build {build_id}: WORKING" in out
    assert "  tpu-apply: WORKING" in out and "  tpu-apply: SUCCESS" in out
    assert out.rstrip().splitlines()[-1].startswith(f"build {build_id}: SUCCESS; logs: https://")
    # the last step recorded the snapshot and released the lock
    assert finals[0][0] == 0
    applied = snapshot.read(bucket, s.env_name)
    assert applied.values == repo.read_bytes() and applied.build_id == build_id and applied.action == "create"
    assert applied.outstanding == frozenset() and applied.absent == frozenset()
    assert lock.read(bucket, s.env_name) is None
    record = json.loads(bucket.blob(snapshot.record_path(s.env_name)).download_as_bytes())
    assert record["build_id"] == build_id


def test_same_sources_give_the_same_tarball(env, fakes: Fakes, repo: Path, cli):
    _finalize_on_success(fakes, cli, repo, "update")
    assert cli("--values", repo, "submit", "--action", "update", "--tpu", "--wait")[0] == 0
    assert cli("--values", repo, "submit", "--action", "update", "--tpu", "--wait")[0] == 0
    first, second = (b["source"]["storageSource"]["object"] for b in fakes.google.created)
    assert first == second
    (repo.parent / "modules/tpu_node/main.tf").write_text("# changed\n")
    assert cli("--values", repo, "submit", "--action", "update", "--tpu", "--wait")[0] == 0
    assert fakes.google.created[-1]["source"]["storageSource"]["object"] != first


@pytest.mark.parametrize("status", ["FAILURE", "TIMEOUT", "CANCELLED"])
def test_failed_build_exits_1_naming_step_and_logs_and_leaves_a_stale_lock(env, fakes: Fakes, repo: Path, cli,
                                                                          status: str):
    from builder.cloud import lock, snapshot

    s, bucket = env
    before = bucket.blob(f"workspace/{s.env_name}/values.env").download_as_bytes()
    fakes.google.next_outcome(status, "tpu-apply")
    finals = _finalize_on_success(fakes, cli, repo, "update")
    code, out, err = cli("--values", repo, "dispatch", "--action", "update", "--tpu", "true", "--mig", "default")
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("tpubuild: error:")]
    assert len(lines) == 1 and "Traceback" not in err
    [build_id] = fakes.google.builds
    assert f"build {build_id} {status} at step tpu-apply" in lines[0]
    assert f"logs: https://console.cloud.google.com/cloud-build/builds/{build_id}" in lines[0]
    assert finals == []  # finalize never ran
    assert snapshot.read(bucket, s.env_name) is None  # no snapshot for a failed build
    stale = lock.read(bucket, s.env_name)
    assert stale.state == "stale" and stale.outcome == status and stale.failed_step == "tpu-apply"
    # the workspace is the one the failed build ran with (uploaded before it), not half of it
    assert bucket.blob(f"workspace/{s.env_name}/values.env").download_as_bytes() == before == repo.read_bytes()
    # the next dispatch names the failed build, takes the lock over and runs
    fakes.google.next_outcome("SUCCESS")
    code, out, err = cli("--values", repo, "dispatch", "--action", "update", "--tpu", "true", "--mig", "default")
    assert code == 0, err
    assert f"taking over the stale lock of environment {s.env_name}: build {build_id}" in err
    assert f"ended {status} at step tpu-apply" in err


def test_dispatch_refused_while_another_build_holds_the_lock(env, fakes: Fakes, repo: Path, cli):
    from builder.cloud import lock

    s, bucket = env
    held = lock.acquire(bucket, lock.Lock(env=s.env_name, action="create", holder="cloud build root-1",
                                          created=lock.now()))
    lock.set_build(bucket, held, "b-running")
    fakes.google.builds["b-running"] = {"status": "WORKING"}
    code, out, err = cli("--values", repo, "dispatch", "--action", "update", "--tpu", "default", "--mig", "default")
    assert code == 1
    assert err.strip().splitlines() == [
        f"tpubuild: error: environment {s.env_name} is locked by build b-running (create, since {held.created}, "
        "by cloud build root-1); wait for that build to finish, or run `tpubuild unlock --force` if you are sure "
        "it is gone"]
    assert fakes.google.created == []
    assert lock.read(bucket, s.env_name).build_id == "b-running"


def test_dispatch_initialize_runs_in_process(fakes: Fakes, repo: Path, cli):
    code, out, err = cli("--values", repo, "dispatch", "--action", "initialize", "--tpu", "default",
                         "--mig", "default")
    assert code == 0, err
    assert ": created in EUROPE-WEST4" in out and "workspace uploaded" in out
    assert fakes.google.created == []


def test_dispatch_without_state_bucket_is_one_line(fakes: Fakes, repo: Path, cli):
    from builder.config import load

    code, out, err = cli("--values", repo, "dispatch", "--action", "create")
    assert code == 1
    assert err.strip().splitlines() == [
        f"tpubuild: error: the state bucket gs://{load(repo).state_bucket} does not exist; run `tpubuild initialize` "
        "(or the build with _BUILD_ACTION=initialize) first"]


@pytest.mark.parametrize("args, message", [
    (["--action", "deploy"], "_BUILD_ACTION: 'deploy' is not an action"),
    (["--action", "create", "--tpu", "yes please"], "_TPU: 'yes please' is not a flag value"),
    (["--action", "update", "--allow-data-loss", "maybe"], "_ALLOW_DATA_LOSS: 'maybe' is not a flag value"),
    (["--action", "auto", "--tpu", "true"], "auto decides the modules itself"),
])
def test_dispatch_bad_substitutions_exit_2(fakes: Fakes, repo: Path, cli, args, message):
    code, out, err = cli("--values", repo, "dispatch", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert fakes.google.created == []


def test_dispatch_passes_allow_flags_into_the_pipeline(env, fakes: Fakes, repo: Path, cli):
    _finalize_on_success(fakes, cli, repo, "update")
    code, out, err = cli("--values", repo, "dispatch", "--action", "update", "--tpu", "TRUE", "--mig", "default",
                         "--allow-data-loss", "true", "--allow-wipe", "false")
    assert code == 0, err
    text = json.dumps(fakes.google.created[0])
    assert "--allow-data-loss" in text


def test_auto_without_snapshot_creates_then_nothing_then_the_changed_module(env, fakes: Fakes, repo: Path, cli):
    from builder.cloud import snapshot

    s, bucket = env
    _finalize_on_success(fakes, cli, repo, "create")
    code, out, err = cli("--values", repo, "dispatch", "--action", "auto")
    assert code == 0, err
    assert "auto: create" in out and "no applied snapshot" in out
    assert "tpu-apply" in [st["id"] for st in fakes.google.created[-1]["steps"]]

    code, out, err = cli("--values", repo, "dispatch", "--action", "auto")
    assert code == 0, err
    assert "auto: nothing changed since the applied snapshot; nothing to do" in out
    assert len(fakes.google.created) == 1

    repo.write_text(repo.read_text().replace('SHARED_FS_CAPACITY="1024"', 'SHARED_FS_CAPACITY="2048"'))
    _finalize_on_success(fakes, cli, repo, "update")
    code, out, err = cli("--values", repo, "dispatch", "--action", "auto")
    assert code == 0, err
    assert "auto: update filestore" in out and "SHARED_FS_CAPACITY: 1024 → 2048 (filestore)" in out
    ids = [st["id"] for st in fakes.google.created[-1]["steps"]]
    assert "filestore-apply" in ids and "tpu-apply" not in ids and "mig-apply" not in ids
    assert snapshot.read(bucket, s.env_name).values == repo.read_bytes()


def test_auto_refuses_to_move_the_environment(env, fakes: Fakes, repo: Path, cli):
    _finalize_on_success(fakes, cli, repo, "create")
    assert cli("--values", repo, "dispatch", "--action", "create")[0] == 0
    # europe-west4-b offers v5e, not v3 (builder/data/tpu_offers.json): move and change generation
    repo.write_text(repo.read_text().replace('ZONE="europe-west4-a"', 'ZONE="europe-west4-b"')
                    .replace('TPU_ACCELERATOR_TYPE="v3-32"', 'TPU_ACCELERATOR_TYPE="v5litepod-16"')
                    .replace('TPU_RUNTIME_VERSION="tpu-ubuntu2204-base"', 'TPU_RUNTIME_VERSION="v2-alpha-tpuv5-lite"'))
    code, out, err = cli("--values", repo, "dispatch", "--action", "auto")
    assert code == 2
    assert "ZONE: changed from 'europe-west4-a' to 'europe-west4-b' since the applied snapshot" in err
    assert "auto does not move an environment" in err
    assert len(fakes.google.created) == 1


def test_auto_refuses_a_resize_training_cannot_resume_across_before_any_build(env, fakes: Fakes, repo: Path, cli):
    """The model's rules on the change (models/roberta: the checkpoint counts batches of 16
    sequences), from the applied snapshot, before a build is submitted; the resize alone goes on."""
    _finalize_on_success(fakes, cli, repo, "create")
    assert cli("--values", repo, "dispatch", "--action", "create")[0] == 0
    applied = repo.read_text()
    repo.write_text(applied.replace('TPU_ACCELERATOR_TYPE="v3-32"', 'TPU_ACCELERATOR_TYPE="v3-128"')
                    .replace('ROBERTA_BATCH_PER_DEVICE="16"', 'ROBERTA_BATCH_PER_DEVICE="8"'))
    code, out, err = cli("--values", repo, "dispatch", "--action", "auto")
    assert code == 2
    (line,) = err.strip().splitlines()
    assert f"{repo}:" in line and "ROBERTA_BATCH_PER_DEVICE: ROBERTA_BATCH_PER_DEVICE changes from 16 to 8" in line
    assert len(fakes.google.created) == 1
    repo.write_text(applied.replace('TPU_ACCELERATOR_TYPE="v3-32"', 'TPU_ACCELERATOR_TYPE="v3-128"'))
    code, out, err = cli("--values", repo, "dispatch", "--action", "auto")
    assert code == 0, err
    assert "auto: update tpu" in out and len(fakes.google.created) == 2


def test_scoped_update_keeps_other_changes_outstanding_for_auto(env, fakes: Fakes, repo: Path, cli):
    from builder.cloud import snapshot

    s, bucket = env
    _finalize_on_success(fakes, cli, repo, "create")
    assert cli("--values", repo, "dispatch", "--action", "create")[0] == 0
    repo.write_text(repo.read_text().replace('TPU_ACCELERATOR_TYPE="v3-32"', 'TPU_ACCELERATOR_TYPE="v3-128"')
                    .replace('SHARED_FS_CAPACITY="1024"', 'SHARED_FS_CAPACITY="2048"'))
    _finalize_on_success(fakes, cli, repo, "update")
    assert cli("--values", repo, "dispatch", "--action", "update", "--tpu", "true")[0] == 0
    assert snapshot.read(bucket, s.env_name).outstanding == frozenset({"filestore"})
    code, out, err = cli("--values", repo, "dispatch", "--action", "auto")
    assert code == 0, err
    assert "auto: update filestore" in out and "filestore: outstanding" in out


def test_scoped_destroy_leaves_the_module_absent_for_auto(env, fakes: Fakes, repo: Path, cli):
    from builder.cloud import snapshot

    s, bucket = env
    _finalize_on_success(fakes, cli, repo, "create")
    assert cli("--values", repo, "dispatch", "--action", "create")[0] == 0
    _finalize_on_success(fakes, cli, repo, "destroy")
    assert cli("--values", repo, "dispatch", "--action", "destroy", "--tpu", "true")[0] == 0
    assert snapshot.read(bucket, s.env_name).absent == frozenset({"tpu"})
    repo.write_text(repo.read_text().replace('TPU_ACCELERATOR_TYPE="v3-32"', 'TPU_ACCELERATOR_TYPE="v3-128"'))
    code, out, err = cli("--values", repo, "dispatch", "--action", "auto")
    assert code == 0, err
    assert "auto leaves it absent" in out and "nothing to do" in out
    assert len(fakes.google.created) == 2


def test_finalize_writes_with_a_generation_precondition(env, fakes: Fakes, repo: Path):
    from builder.cloud import snapshot
    from builder.facts.errors import WorldError

    s, bucket = env
    first = snapshot.Applied(values=b"A=1\n", build_id="b1", action="create", time="t")
    snapshot.write(bucket, s.env_name, first, expected_generation=0)
    with pytest.raises(WorldError, match="the applied snapshot changed while build b2 was finishing"):
        snapshot.write(bucket, s.env_name, snapshot.Applied(values=b"A=2\n", build_id="b2", action="update",
                                                            time="t"), expected_generation=0)
    assert snapshot.read(bucket, s.env_name).values == b"A=1\n"


def test_submit_without_wait_leaves_the_lock_to_the_build(env, fakes: Fakes, repo: Path, cli, monkeypatch):
    from builder.cloud import lock

    s, bucket = env
    monkeypatch.setenv("TPUBUILD_DISPATCH_BUILD", "root-7")
    code, out, err = cli("--values", repo, "submit", "--action", "update", "--tpu")
    assert code == 0, err
    held = lock.read(bucket, s.env_name)
    [created] = [b for b, r in fakes.google.builds.items()]
    assert held.holder == "cloud build root-7" and held.build_id == created and held.state == "held"
    assert held.scope["operations"] == [["tpu", "apply"]]
    assert f"logs: https://console.cloud.google.com/cloud-build/builds/{created}" in out
    assert "QUEUED" not in out  # not followed


def test_build_creation_refused_gives_the_lock_back(env, fakes: Fakes, repo: Path, cli):
    from builder.cloud import lock

    s, bucket = env
    fakes.google.fail[f"/v1/projects/{s.project_id}/builds"] = 403
    code, out, err = cli("--values", repo, "submit", "--action", "create", "--wait")
    assert code == 1
    assert err.strip().splitlines()[-1].startswith(f"tpubuild: error: creating the build in project {s.project_id}:")
    assert "permission denied" in err and len(err.strip().splitlines()) == 1
    assert lock.read(bucket, s.env_name) is None


def test_auto_that_would_create_refuses_a_calendar_start_in_the_past(env, fakes: Fakes, repo: Path, cli):
    """auto with nothing applied is a create, which submits a new calendar request: a start that
    has passed is refused with one line before any build (builder/config/calendar.py)."""
    from tests.conftest import EXAMPLES

    s, _ = env
    text = (EXAMPLES / "mig-v6e-32-calendar.env").read_text().replace('ENV_BUILD_NAME="v6e-cal"', f'ENV_BUILD_NAME="{s.env_name}"')
    repo.write_text(text.replace('TPU_CALENDAR_START="+14d"', 'TPU_CALENDAR_START="2026-11-25T00:00:00Z"'))
    code, out, err = cli("--values", repo, "dispatch", "--action", "auto")
    assert code == 2, out + err
    (line,) = err.strip().splitlines()
    assert "TPU_CALENDAR_START: 2026-11-25T00:00:00Z is in the past: a create submits a new calendar-mode request" in line
    assert fakes.google.created == []
