"""The environment lock against fake-gcs-server (which answers 412 on a generation conflict)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.support.fakes.fixtures import Fakes, fakes, repo  # noqa: F401 - fixtures


@pytest.fixture
def state(fakes: Fakes, repo: Path, cli):
    from builder.config import load

    assert cli("--values", repo, "initialize")[0] == 0
    s = load(repo)
    return s, fakes.storage().bucket(s.state_bucket)


def _lock(env: str, holder: str = "alice@laptop"):
    from builder.cloud import lock

    return lock.Lock(env=env, action="create", holder=holder, created=lock.now())


def test_two_concurrent_acquires_have_exactly_one_winner(state) -> None:
    from builder.cloud import lock
    from builder.facts.errors import WorldError

    s, _bucket = state
    results: list[object] = []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        # each thread its own client, as separate dispatches would have
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        bucket = storage.Client(project=s.project_id, credentials=AnonymousCredentials()).bucket(s.state_bucket)
        barrier.wait()
        try:
            results.append(lock.acquire(bucket, _lock(s.env_name, f"thread-{i}")))
        except WorldError as exc:
            results.append(exc)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if isinstance(r, lock.Lock)]
    losers = [r for r in results if isinstance(r, WorldError)]
    assert len(winners) == 1 and len(losers) == 7
    held = lock.read(state[1], s.env_name)
    assert held is not None and held.holder == winners[0].holder
    for exc in losers:
        assert f"environment {s.env_name} is locked by" in str(exc) and winners[0].holder in str(exc)


def test_release_only_by_its_build_and_force_unlock(state, cli, repo: Path) -> None:
    from builder.cloud import lock

    s, bucket = state
    held = lock.acquire(bucket, _lock(s.env_name))
    held = lock.set_build(bucket, held, "build-1")
    assert "not by build build-2; left alone" in lock.release(bucket, s.env_name, "build-2")
    assert lock.read(bucket, s.env_name).build_id == "build-1"
    code, out, err = cli("--values", repo, "unlock")
    assert code == 2 and "needs --force" in err
    code, out, err = cli("--values", repo, "unlock", "--force")
    assert code == 0 and "removed the lock of build build-1 (create, since" in out and "alice@laptop" in out
    assert lock.read(bucket, s.env_name) is None
    assert cli("--values", repo, "unlock", "--force")[1].strip().endswith("not locked")
    lock.acquire(bucket, _lock(s.env_name))  # free again


def test_held_lock_refuses_and_names_holder_and_time(state) -> None:
    from builder.cloud import lock
    from builder.facts.errors import WorldError

    s, bucket = state
    held = lock.set_build(bucket, lock.acquire(bucket, _lock(s.env_name)), "b-running")
    with pytest.raises(WorldError) as info:
        lock.acquire(bucket, _lock(s.env_name, "bob@ci"), lookup=lambda _id: "WORKING")
    message = str(info.value)
    assert "locked by build b-running (create, since " + held.created in message
    assert "alice@laptop" in message and "tpubuild unlock --force" in message
    # a build that cannot be looked up is respected as well
    with pytest.raises(WorldError):
        lock.acquire(bucket, _lock(s.env_name, "bob@ci"), lookup=lambda _id: None)


def test_stale_lock_is_taken_over_naming_its_build(state) -> None:
    from builder.cloud import lock

    s, bucket = state
    lock.set_build(bucket, lock.acquire(bucket, _lock(s.env_name)), "b-failed")
    assert lock.mark_stale(bucket, s.env_name, "b-failed", "FAILURE", "tpu-apply", "https://logs/b-failed")
    stale = lock.read(bucket, s.env_name)
    assert stale.state == "stale" and stale.outcome == "FAILURE" and stale.failed_step == "tpu-apply"
    warnings: list[str] = []
    mine = lock.acquire(bucket, _lock(s.env_name, "bob@ci"), warn=warnings.append)
    assert mine.holder == "bob@ci"
    assert len(warnings) == 1
    assert "build b-failed" in warnings[0] and "ended FAILURE at step tpu-apply" in warnings[0]
    assert "https://logs/b-failed" in warnings[0]


def test_lock_of_a_finished_build_that_never_released_is_stale(state) -> None:
    from builder.cloud import lock

    s, bucket = state
    lock.set_build(bucket, lock.acquire(bucket, _lock(s.env_name)), "b-cancelled")
    warnings: list[str] = []
    lock.acquire(bucket, _lock(s.env_name, "carol@ci"), lookup={"b-cancelled": "CANCELLED"}.get,
                 warn=warnings.append)
    assert "build b-cancelled" in warnings[0] and "CANCELLED" in warnings[0]
    assert lock.read(bucket, s.env_name).holder == "carol@ci"


def test_set_build_after_someone_broke_the_lock_is_an_error(state) -> None:
    from builder.cloud import lock
    from builder.facts.errors import WorldError

    s, bucket = state
    held = lock.acquire(bucket, _lock(s.env_name))
    lock.force_unlock(bucket, s.env_name)
    lock.acquire(bucket, _lock(s.env_name, "someone-else"))
    with pytest.raises(WorldError, match="changed by someone else"):
        lock.set_build(bucket, held, "b-late")


def test_a_write_that_landed_but_lost_its_answer_is_recognised_as_ours(state) -> None:
    """The storage client retries a create whose answer timed out; the retry gets 412 from GCS.
    The lock is then ours (same token), not 'held by a submit that has not created its build'."""
    from builder.cloud import lock
    from builder.facts.errors import WorldError

    s, bucket = state
    mine = _lock(s.env_name)
    landed = lock._write(bucket, mine, 0)  # the first attempt reached GCS
    assert landed is not None
    held = lock.acquire(bucket, mine)  # the retry: 412, then recognised
    assert held.token == mine.token and held.generation == landed.generation
    updated = lock.set_build(bucket, held, "b-1")
    assert lock.set_build(bucket, held, "b-1").generation == updated.generation  # same again: ours
    with pytest.raises(WorldError, match="locked by build b-1"):
        lock.acquire(bucket, _lock(s.env_name, holder="bob@laptop"))  # another taker still refused
