"""The Terraform state locks a dead build leaves: a submit that takes the environment
lock over from a finished build breaks the state locks (``<env>/<module>/default.tflock``, as
Terraform's GCS backend writes them) that build took, and leaves any other alone, naming it.
The real google-cloud-storage client against fake-gcs-server, the real Cloud Build client against
the local fake, the real ``tpubuild submit``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fakes.fixtures import Fakes, fakes, repo  # noqa: F401 - fixtures


@pytest.fixture
def env(fakes: Fakes, repo: Path, cli):
    from builder.config import load

    assert cli("--values", repo, "initialize")[0] == 0
    s = load(repo)
    return s, fakes.storage().bucket(s.state_bucket)


def _tflock(bucket, env: str, module: str, created: str) -> None:
    """A state lock as Terraform 1.x writes it (its Who is the step container's user@host)."""
    info = {"ID": f"id-{module}", "Path": f"gs://{bucket.name}/{env}/{module}/default.tflock",
            "Operation": "OperationTypeApply", "Who": "root@5f2c1d9e0a7b", "Version": "1.16.4", "Created": created,
            "Info": ""}
    bucket.blob(f"{env}/{module}/default.tflock").upload_from_string(json.dumps(info))


def test_the_state_lock_a_finished_build_left_is_broken_and_no_other(env, fakes: Fakes, repo: Path, cli) -> None:
    from builder.cloud import lock

    s, bucket = env
    held = lock.acquire(bucket, lock.Lock(env=s.env_name, action="update", holder="a@x", created=lock.now()))
    lock.set_build(bucket, held, "b-dead")
    fakes.google.builds["b-dead"] = {"project": s.project_id, "status": "CANCELLED",
                                     "tags": ["tpubuild", f"tpubuild-env-{s.env_name}"]}
    _tflock(bucket, s.env_name, "tpu", lock.now().replace("Z", ".000000001Z"))  # taken by b-dead, in nanoseconds, not after now
    _tflock(bucket, s.env_name, "filestore", "2020-01-01T00:00:00.5Z")  # before b-dead: someone else's
    code, out, err = cli("--values", repo, "submit", "--action", "update", "--tpu")
    assert code == 0, err
    assert not bucket.blob(f"{s.env_name}/tpu/default.tflock").exists()
    assert bucket.blob(f"{s.env_name}/filestore/default.tflock").exists()
    broke = [line for line in err.splitlines() if "broke the Terraform state lock id-tpu of tpu" in line]
    assert len(broke) == 1 and "left by build b-dead, which ended CANCELLED" in broke[0]
    left = [line for line in err.splitlines() if "id-filestore" in line]
    assert len(left) == 1 and "not taken by build b-dead; left alone" in left[0]
    assert "terraform force-unlock id-filestore" in left[0]


def test_a_released_lock_breaks_nothing(env, fakes: Fakes, repo: Path, cli) -> None:
    """No takeover (the last build finalized): a state lock is a person's, and is left to them."""
    from builder.cloud import lock

    s, bucket = env
    _tflock(bucket, s.env_name, "tpu", lock.now())
    code, _out, err = cli("--values", repo, "submit", "--action", "update", "--tpu")
    assert code == 0, err
    assert bucket.blob(f"{s.env_name}/tpu/default.tflock").exists() and "state lock" not in err


@pytest.mark.parametrize(("created", "finished", "left"), [
    ("2026-11-28T10:00:00.000000001Z", "2026-11-28T11:00:00+00:00", True),
    ("2026-11-28T09:59:59Z", "2026-11-28T11:00:00+00:00", False),  # before the build held the lock
    ("2026-11-28T11:00:01Z", "2026-11-28T11:00:00+00:00", False),  # after it finished
    ("not a time", "", False),
])
def test_left_by_is_the_builds_window(created: str, finished: str, left: bool) -> None:
    from builder.cloud import lock

    prev = lock.Lock(env="e", action="update", holder="h", created="2026-11-28T10:00:00Z", build_id="b")
    assert lock.left_by({"Created": created}, prev, finished) is left
