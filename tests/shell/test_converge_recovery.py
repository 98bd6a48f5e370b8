"""Kill it anywhere, run it again, for the health check's recovery build (TPU_RECOVERY): the build
Terraform hands the Scheduler job (``builder.inputs.recovery.build_request``), played in the recovery
sandbox of test_recovery_sandbox.py, stopped after each of its rendered steps, and also inside
``health-prepare`` where its dispatch's update build dies (cancelled with the build that waited
for it: the environment lock left held by an ended build; or failed and marked stale by the
dispatch). The rerun is the next health check (a new build); it must leave what an uninterrupted
one leaves: the slice READY (vm: recreated in its slot; mig: every VM holding the dataset disk),
no recovery mark, the lock free, the last record ``recovered``, and the training launched after
the slice came back. The stop points come from the rendered steps, as tests/shell/test_converge.py's.

``tpubuild`` is the real CLI of this tree, ``dispatch`` included: its real storage and Cloud Build
clients take and release the environment lock (builder/cloud/lock.py) in fake-gcs-server and create
and follow the update build in the Cloud Build fake (tests/support/fakes/), from the health
build's workspace (the kept source: a minimal repository). The sandbox's ``gcloud`` reads the same
fakes (the lock, the builds), so the check sees what the real code wrote. Only the update build's
own steps are played, by the fake's ``on_done``: its apply recreates the TPU READY in the slot its
state holds, and its last step is the real ``tpubuild finalize`` (the snapshot, the lock released).
An update that dies cancelled ends with the health build that waited for it: ``on_done`` kills the
step's processes as Cloud Build reports the update CANCELLED, so the dispatch never marks its lock
stale; one that fails is reported FAILURE at ``tpu-apply`` and the real dispatch marks it stale.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_recovery_sandbox import MIG, VM, Sandbox, _launched, _sandbox

from builder.inputs import recovery
from tests.conftest import REPO
from tests.support import converge
from tests.support.fakes.fixtures import _servers, make_repo, unique_env
from tests.support.pipeline import step_env, step_script

#: tpubuild: the real CLI, every verb (the call is logged, as the sandbox's gcloud logs its calls).
TPUBUILD = """#!/usr/bin/env bash
set -u
echo "tpubuild $*" >> "$FAKE_GCLOUD_STATE/calls.log"
# -P: this tree's builder (PYTHONPATH), not the minimal one packed in the workspace (cwd); in Cloud Build the
# workspace's builder/ is the real one and `pip install .` installs it
exec "$TPUBUILD_PYTHON" -P -m builder "$@"
"""


@pytest.fixture(scope="module")
def cloud() -> Iterator[Any]:
    """The Cloud Build fake (``FakeGoogle``), with fake-gcs-server, and every client of this process
    and its children pointed at them."""
    servers = _servers()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("STORAGE_EMULATOR_HOST", servers["gcs"].url)
        for key, value in servers["google"].env().items():
            mp.setenv(key, value)
        mp.setenv("TPUBUILD_POLL_SECONDS", "0")
        mp.delenv("TPUBUILD_DISPATCH_BUILD", raising=False)
        yield servers["google"]


def _start(tmp: Path, arch: str, google: Any) -> Sandbox:
    """vm: the TPU VM was preempted. mig: the MIG recreated a lost VM (a recovery under way, its
    mark written by an earlier check): whole again, but the new VM lacks the dataset disk."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    google.reset()
    base, env = VM if arch == "vm" else MIG, unique_env()
    box = _sandbox(tmp, base, ENV_BUILD_NAME=env)
    make_repo(box.values.parent, env, base=base)  # the health build's workspace: its kept source, unpacked
    (box.root / "bin" / "tpubuild").write_text(TPUBUILD)
    s = box.settings
    box.bucket = storage.Client(project=s.project_id, credentials=AnonymousCredentials()).create_bucket(s.state_bucket)
    if arch == "vm":
        box.tpu("PREEMPTED")
    else:
        box.mig("RUNNING NONE\n" * s.hosts)
        box.put("disk_users", "".join(f"{s.tpu_name}-{i:04d}\n" for i in range(1, s.hosts)))
        box.write(recovery.objects(s)["mark"], "detected_at=2026-11-28T00:00:00Z\ndetected_s=1795824000\n"
                  "reason=3 of 4 VMs running\ntries=0\ngave_up=0\n")
    return box


def _steps(box: Sandbox) -> list[dict[str, Any]]:
    return list(recovery.build_request(box.settings)["steps"])


def _run(box: Sandbox, google: Any, build_id: str, *, upto: int | None = None, dies: str = "") -> list[int]:
    """The health build's steps in order, as Cloud Build runs them, until one fails or step ``upto``
    (the build is cancelled there). ``dies``: the update build its dispatch creates ends CANCELLED
    (killing this health build with it) or FAILURE."""
    codes: list[int] = []
    s = box.settings
    google.builds[build_id] = {"status": "WORKING", "tags": recovery.build_request(s)["tags"],
                               "project": s.project_id}  # Cloud Build knows the health build by its tags
    if dies:
        google.next_outcome(*{"cancelled": ("CANCELLED", ""), "stale": ("FAILURE", "tpu-apply")}[dies])
    running: list[subprocess.Popen[str]] = []

    def update_done(update: str, state: str) -> None:
        """The update build's steps, as far as the sandbox's world goes."""
        if state == "CANCELLED":  # cancelled with the health build waiting for it: both end here
            os.killpg(running[-1].pid, signal.SIGKILL)
        elif state == "SUCCESS":  # its apply recreated the slot the state holds; its last step:
            from builder.cli import main

            box.tpu("READY", (box.state / "held").read_text())
            assert main(["--values", str(box.values), "finalize", "--build-id", update, "--action", "update"]) == 0

    google.on_done = update_done
    for i, step in enumerate(_steps(box)):
        running.append(subprocess.Popen(
            ["bash", "-c", step_script(step, {"BUILD_ID": build_id})], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, cwd=box.values.parent, start_new_session=True,
            env={**os.environ, **step_env(step, {"BUILD_ID": build_id}), "WORKSPACE": str(box.values.parent),
                 "PATH": f"{box.root / 'bin'}:{os.environ['PATH']}", "FAKE_GCLOUD_STATE": str(box.state),
                 "PYTHONPATH": str(REPO), "TPUBUILD_PYTHON": os.environ.get("PYTHON", "python3")}))
        output, _ = running[-1].communicate(timeout=120)
        codes.append(running[-1].returncode)
        with (box.root / f"{build_id}.log").open("a") as log:  # shown when a run must pass and did not
            log.write(f"--- {step['id']} ({codes[-1]})\n{output}")
        if codes[-1] or i == upto:
            break
    last = codes[-1]  # killed, or stopped before its last step: cancelled
    google.builds[build_id]["status"] = ("CANCELLED" if last < 0 else "FAILURE" if last
                                         else "SUCCESS" if len(codes) == len(_steps(box)) else "CANCELLED")
    return codes


def _world(box: Sandbox) -> dict[str, Any]:
    """What the check leaves, the slice's names written ``tpu-<env>`` (every sandbox has an env of its
    own: the fakes' buckets and builds outlive a test)."""
    calls = box.calls()
    slot = box.settings.tpu_name
    gone = [i for i, c in enumerate(calls) if "tpu-vm delete" in c or c.startswith("tpubuild dispatch")]
    launched = [calls.index(c) for c in _launched(calls)]
    records = box.records()
    return {
        "tpus": {p.name.replace(slot, "tpu-<env>"): p.read_text().strip() for p in sorted((box.state / "tpus").glob("*"))},
        "disk_users": sorted(u.replace(slot, "tpu-<env>") for u in (box.state / "disk_users").read_text().split())
        if (box.state / "disk_users").exists() else [],
        "mark": box.mark(),
        "lock": box.text(recovery.objects(box.settings)["lock"]) is not None,
        "last_record": records[-1]["outcome"] if records else None,
        "recovered": sum(r["outcome"] == "recovered" for r in records),
        "training": bool(launched) and (not gone or max(launched) > max(gone)),
    }


def _stops(arch: str) -> list[tuple[str, int, str]]:
    """(id, step index, how the update dies): after each rendered step; inside health-prepare (vm: the only
    architecture whose recovery dispatches an update) the update build dies either way."""
    from builder.config import load_text
    from tests.conftest import rewrite_env

    base = VM if arch == "vm" else MIG
    steps = recovery.build_request(load_text(rewrite_env(base.read_text()), REPO / base.name))["steps"]
    out = [(f"after-{st['id']}", i, "") for i, st in enumerate(steps)]
    if arch == "vm":
        i = next(i for i, st in enumerate(steps) if "tpubuild dispatch" in step_script(st))
        out += [(f"in-{steps[i]['id']}-update-{how}", i, how) for how in ("cancelled", "stale")]
    return out


CASES = [(arch, *stop) for arch in ("vm", "mig") for stop in _stops(arch)]
RESULTS: dict[tuple[str, str], bool] = {}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, cloud: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for arch in ("vm", "mig"):
        box = _start(tmp_path_factory.mktemp(f"ref-{arch}"), arch, cloud)
        assert set(_run(box, cloud, "hb-1")) == {0}, (box.root / "hb-1.log").read_text()
        out[arch] = _world(box)
        assert out[arch]["last_record"] == "recovered" and out[arch]["training"] and out[arch]["mark"] == {}
    return out


@pytest.mark.parametrize(("arch", "stop", "index", "dies"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_recovery_stopped_anywhere_converges_at_the_next_check(
        arch: str, stop: str, index: int, dies: str, reference: dict[str, dict[str, Any]], cloud: Any,
        tmp_path: Path) -> None:
    RESULTS[(arch, stop)] = False
    box = _start(tmp_path, arch, cloud)
    _run(box, cloud, "hb-1", upto=index, dies=dies)
    lock = box.text(recovery.objects(box.settings)["lock"])
    if dies:  # the real dispatch's lock, with the update's build id; stale when the dispatch saw it fail
        [update] = [b for b in cloud.builds if b.endswith("-fake")]
        assert lock is not None and json.loads(lock)["build_id"] == update, "the dead update left the lock"
        assert json.loads(lock)["state"] == {"cancelled": "held", "stale": "stale"}[dies], lock
    assert set(_run(box, cloud, "hb-2")) == {0}, (box.root / "hb-2.log").read_text()
    if dies:  # the real lock code took the dead update's lock over, naming it
        assert f"taking over the stale lock of environment {box.settings.env_name}: build {update}" in \
            (box.root / "hb-2.log").read_text()
    if arch == "vm":  # the recreate was the real dispatch's update build, followed to its SUCCESS
        last = [r for b, r in cloud.builds.items() if b.endswith("-fake")][-1]
        assert (last["outcome"], last["done_hook"], "action-update" in last["tags"]) == (("SUCCESS", ""), True, True)
    world = _world(box)
    assert world == {**reference[arch], "recovered": 1}, json.dumps(world)
    RESULTS[(arch, stop)] = True


@pytest.mark.parametrize("state", ["held", "stale"])
def test_a_persons_ended_build_keeps_its_lock(state: str, cloud: Any, tmp_path: Path) -> None:
    """The lock of a person's update that ended without releasing it is theirs to look at: the
    health check recovers nothing under it (only a health build's own dispatch is taken over)."""
    box = _start(tmp_path, "vm", cloud)
    lock = recovery.objects(box.settings)["lock"]
    text = f'{{\n  "build_id": "b-7",\n  "holder": "ana@laptop",\n  "state": "{state}"\n}}\n'
    box.write(lock, text)
    cloud.builds["b-7"] = {"status": "FAILURE", "tags": [], "project": box.settings.project_id}
    assert set(_run(box, cloud, "hb-1")) == {0}
    assert box.text(lock) == text and box.records() == [] and not any(c.startswith("tpubuild dispatch")
                                                                       for c in box.calls())
    assert _world(box)["tpus"] == {"tpu-<env>": "PREEMPTED"}


def test_count(request: pytest.FixtureRequest) -> None:
    """The count CI's log shows (tests/shell/conftest.py prints it at the end of the session)."""
    line = (f"convergence (health check's recovery): {len({a for a, _ in RESULTS})} pipelines, {len(RESULTS)} "
            f"stop points, {sum(RESULTS.values())} converged")
    converge.report(request, "tpubuild/converge-recovery-summary", line, RESULTS, CASES)
