"""The lock against live builds: the real google-cloud-storage client against
fake-gcs-server and the real google-cloud-build client (ListBuilds with a filter, CreateBuild,
GetBuild) against the local Cloud Build fake, with builds that stay WORKING.

Each race is played for real: a submit SIGKILLed between CreateBuild and set_build, a stale lock
while an orphan build works, `unlock --force` under a working build, a finalize whose build lost
the lock, a delete racing a rewrite, and N concurrent submits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from builder.facts.records import replace
from tests.support.fakes.fixtures import Fakes, fakes, repo  # noqa: F401 - fixtures


@pytest.fixture
def env(fakes: Fakes, repo: Path, cli):
    from builder.config import load

    assert cli("--values", repo, "initialize")[0] == 0
    s = load(repo)
    return s, fakes.storage().bucket(s.state_bucket)


def _age(bucket, env_name: str) -> None:
    """Make the current lock older than ORPHAN_SECONDS (as if its submit died long ago)."""
    from builder.cloud import lock

    current = lock.read(bucket, env_name)
    assert lock._write(bucket, replace(current, created="2020-01-01T00:00:00Z"), current.generation)


def _live_env_build(fakes: Fakes, s, build_id: str, status: str = "WORKING", env_name: str | None = None) -> None:
    fakes.google.builds[build_id] = {"project": s.project_id, "status": status,
                                     "tags": ["tpubuild", f"tpubuild-env-{env_name or s.env_name}"]}


def test_live_builds_are_asked_with_a_filter_on_the_env_tag(env, fakes: Fakes) -> None:
    from builder.cloud import builds, clients

    s, _bucket = env
    _live_env_build(fakes, s, "b-work")
    _live_env_build(fakes, s, "b-queued", "QUEUED")
    _live_env_build(fakes, s, "b-done", "SUCCESS")
    _live_env_build(fakes, s, "b-other-env", "WORKING", env_name="someone-else")
    found = builds.live(clients.cloudbuild(), s.project_id, s.env_name, exclude=("b-queued",))
    assert [b.id for b in found] == ["b-work"]
    assert fakes.google.list_filters == [
        f'tags="tpubuild-env-{s.env_name}" AND (status="QUEUED" OR status="WORKING")']


def test_submit_killed_between_create_build_and_set_build(env, fakes: Fakes, repo: Path, cli) -> None:
    """The orphan's build keeps WORKING; after ORPHAN_SECONDS its build-less lock looks stale.
    The next submit must refuse naming that build, unlock --force must refuse, the orphan's
    finalize must not record the applied snapshot, and --even-if-running is the way out."""
    from builder.cloud import lock, snapshot

    s, bucket = env
    fakes.google.hold_working = True
    created, go_on = threading.Event(), threading.Event()
    orphan: list[str] = []

    def stall(build_id: str) -> None:
        orphan.append(build_id)
        created.set()
        go_on.wait(30)  # the answer never reaches the submitter: it is killed meanwhile

    fakes.google.on_create = stall
    tpubuild = Path(sys.executable).parent / "tpubuild"  # the console script (cwd has a builder/ folder)
    proc = subprocess.Popen([str(tpubuild), "--values", str(repo), "submit", "--action", "update",
                             "--tpu"], cwd=repo.parent, env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(240):
            if created.wait(0.5) or proc.poll() is not None:
                break
        assert created.is_set(), proc.communicate(timeout=5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        go_on.set()
        if proc.poll() is None:
            proc.kill()
    fakes.google.on_create = None
    [build_id] = orphan
    held = lock.read(bucket, s.env_name)
    assert held is not None and held.build_id == "", "the kill must land between CreateBuild and set_build"
    _age(bucket, s.env_name)

    code, out, err = cli("--values", repo, "submit", "--action", "update", "--tpu")
    assert code == 1, err
    assert len(err.strip().splitlines()) == 1
    assert f"build {build_id} (WORKING;" in err and "looks stale" in err
    assert "tpubuild unlock --force --even-if-running" in err
    assert len(fakes.google.created) == 1  # no second pipeline beside the first

    code, out, err = cli("--values", repo, "unlock", "--force")
    assert code == 1 and f"build {build_id} (WORKING;" in err and "refusing to break the lock" in err
    assert lock.read(bucket, s.env_name) is not None

    code, out, err = cli("--values", repo, "finalize", "--build-id", build_id, "--action", "update")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert f"build {build_id} no longer holds the lock" in err and "NOT recorded" in err
    assert snapshot.read(bucket, s.env_name) is None
    assert lock.read(bucket, s.env_name) is not None  # finalize never removes a lock it does not hold

    code, out, err = cli("--values", repo, "unlock", "--force", "--even-if-running")
    assert code == 0, err
    assert "removed the lock of a submit that has not created its build yet" in out
    assert lock.read(bucket, s.env_name) is None


def test_stale_lock_is_not_taken_over_while_another_build_of_the_env_works(env, fakes: Fakes) -> None:
    from builder.cloud import builds, clients, lock
    from builder.facts.errors import WorldError

    s, bucket = env
    lock.set_build(bucket, lock.acquire(bucket, lock.Lock(env=s.env_name, action="update", holder="a@x",
                                                          created=lock.now())), "b-failed")
    assert lock.mark_stale(bucket, s.env_name, "b-failed", "FAILURE", "tpu-apply", "https://logs")
    _live_env_build(fakes, s, "b-orphan")
    _live_env_build(fakes, s, "b-elsewhere", env_name="other-env")
    cb = clients.cloudbuild()

    def live():
        return builds.live(cb, s.project_id, s.env_name)

    with pytest.raises(WorldError, match=r"build b-orphan \(WORKING; logs: .*\) of this environment is still WORKING"):
        lock.acquire(bucket, lock.Lock(env=s.env_name, action="update", holder="b@y", created=lock.now()),
                     live=live)
    assert lock.read(bucket, s.env_name).build_id == "b-failed"  # untouched
    fakes.google.builds["b-orphan"]["status"] = "CANCELLED"
    warnings: list[str] = []
    mine = lock.acquire(bucket, lock.Lock(env=s.env_name, action="update", holder="b@y", created=lock.now()),
                        live=live, warn=warnings.append)
    assert mine.holder == "b@y" and "b-failed" in warnings[0]


def test_unlock_force_refuses_while_the_holder_works_and_finalize_of_the_loser_fails(env, fakes: Fakes,
                                                                                    repo: Path, cli) -> None:
    from builder.cloud import lock, snapshot

    s, bucket = env
    fakes.google.hold_working = True
    assert cli("--values", repo, "submit", "--action", "create")[0] == 0
    [first] = list(fakes.google.builds)
    code, out, err = cli("--values", repo, "unlock", "--force")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert f"refusing to break the lock of build {first} (create" in err and f"gcloud builds cancel {first}" in err
    assert lock.read(bucket, s.env_name).build_id == first
    code, out, err = cli("--values", repo, "unlock", "--even-if-running")
    assert code == 2 and "needs --force" in err and "--even-if-running alone" in err
    code, out, err = cli("--values", repo, "unlock", "--force", "--even-if-running")
    assert code == 0 and f"removed the lock of build {first}" in out
    # someone else now takes the environment; the first build finishing must not record its apply
    other = lock.acquire(bucket, lock.Lock(env=s.env_name, action="update", holder="bob@ci", created=lock.now()))
    lock.set_build(bucket, other, "b-bob")
    code, out, err = cli("--values", repo, "finalize", "--build-id", first, "--action", "create")
    assert code == 1 and f"build {first} no longer holds the lock (it is held by build b-bob" in err
    assert snapshot.read(bucket, s.env_name) is None
    assert lock.read(bucket, s.env_name).build_id == "b-bob"


def test_finalize_of_the_holder_still_records(env, fakes: Fakes, repo: Path, cli) -> None:
    from builder.cloud import lock, snapshot

    s, bucket = env
    fakes.google.hold_working = True
    assert cli("--values", repo, "submit", "--action", "create")[0] == 0
    [first] = list(fakes.google.builds)
    code, out, err = cli("--values", repo, "finalize", "--build-id", first, "--action", "create")
    assert code == 0, err
    assert snapshot.read(bucket, s.env_name).build_id == first and lock.read(bucket, s.env_name) is None


def _recording_bucket(s):
    """The state bucket through a real storage client whose HTTP session records each request."""
    import requests
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    session = requests.Session()
    sent: list[tuple[str, str]] = []
    session.hooks["response"].append(lambda r, *_a, **_k: sent.append((r.request.method, r.request.url)))
    client = storage.Client(project=s.project_id, credentials=AnonymousCredentials(), _http=session)
    return client.bucket(s.state_bucket), sent


def test_force_unlock_deletes_only_the_generation_it_read(env) -> None:
    """A lock rewritten between unlock's read and its delete (here: set_build landing while
    unlock asks Cloud Build): the DELETE carries the generation unlock read, so GCS answers 412
    rather than removing the newer lock. fake-gcs-server does not enforce ifGenerationMatch on
    DELETE (it does on uploads), so this asserts the request the real client sends, and the
    412 handling is checked through a write conflict in test_lock.py."""
    from builder.cloud import lock

    s, bucket = env
    recording, sent = _recording_bucket(s)
    held = lock.acquire(bucket, lock.Lock(env=s.env_name, action="create", holder="a@x", created=lock.now()))
    later: list[int] = []

    def meanwhile():
        later.append(lock.set_build(bucket, held, "b-late").generation)
        return []

    lock.force_unlock(recording, s.env_name, live=meanwhile)
    [delete] = [url for method, url in sent if method == "DELETE"]
    assert f"ifGenerationMatch={held.generation}" in delete and later[0] != held.generation


@pytest.mark.parametrize("start", ["free", "stale"])
def test_concurrent_submits_make_exactly_one_build(env, fakes: Fakes, repo: Path, start: str) -> None:
    """N submits at once (each its own clients, as separate machines would have): exactly one
    CreateBuild, the others refused naming the holder. From a stale lock too: exactly one takes
    it over (the takeover is a generation-conditioned replace)."""
    from builder.cloud import lock
    from builder.commands.submit import submit
    from builder.config import load
    from builder.facts.errors import WorldError

    s, bucket = env
    fakes.google.hold_working = True
    if start == "stale":
        lock.set_build(bucket, lock.acquire(bucket, lock.Lock(env=s.env_name, action="update", holder="a@x",
                                                              created=lock.now())), "b-failed")
        assert lock.mark_stale(bucket, s.env_name, "b-failed", "FAILURE", "tpu-apply", "https://logs")
    n = 6
    barrier = threading.Barrier(n)
    results: list[object] = []

    def one() -> None:
        settings = load(repo)
        barrier.wait()
        try:
            results.append(submit(settings, "update", tpu=True))
        except WorldError as exc:
            results.append(exc)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == n
    assert results.count(0) == 1, results
    assert len(fakes.google.created) == 1
    [winner] = list(fakes.google.builds)
    assert lock.read(bucket, s.env_name).build_id == winner
    for exc in (r for r in results if r != 0):
        assert "is locked by" in str(exc) or "still WORKING" in str(exc), exc
