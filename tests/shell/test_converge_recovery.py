"""Kill it anywhere, run it again, for the health check's recovery build (TPU_RECOVERY): the build
Terraform hands the Scheduler job (``builder.inputs.recovery.build_request``), played in the recovery
sandbox of test_recovery_sandbox.py, stopped after each of its rendered steps, and also inside
``health-prepare`` where its dispatch's update build dies (cancelled with the build that waited
for it: the environment lock left held by an ended build; or failed and marked stale by the
dispatch). The rerun is the next health check (a new build); it must leave what an uninterrupted
one leaves: the slice READY (vm: recreated in its slot; mig: every VM holding the dataset disk),
no recovery mark, the lock free, the last record ``recovered``, and the training launched after
the slice came back. The stop points come from the rendered steps, as tests/shell/test_converge.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_recovery_sandbox import MIG, VM, Sandbox, _launched, _sandbox

from builder.inputs import recovery
from tests.conftest import REPO
from tests.support import converge
from tests.support.pipeline import step_env, step_script

#: tpubuild: the real CLI, except ``dispatch``, played as builder/cloud/lock.py and the update
#: pipeline do it: take the environment lock (over from an ended build only: a stale lock, or one
#: whose build ``builds/<id>`` says ended), recreate the TPU in the slot its state holds, release
#: the lock. NESTED_DIES=cancelled: the update build dies with the lock held; =stale: it fails
#: and the dispatch marks the lock stale.
TPUBUILD = r"""#!/usr/bin/env bash
set -u
echo "tpubuild $*" >> "$FAKE_GCLOUD_STATE/calls.log"
if [ "$1" = dispatch ]; then
  lock="$FAKE_GCLOUD_STATE/gcs/$LOCK_OBJECT"
  if [ -f "$lock" ]; then
    holder=$(sed -n 's/.*"build_id": "\([^"]*\)".*/\1/p' "$lock")
    if ! grep -q '"state": "stale"' "$lock"; then
      case "$(cat "$FAKE_GCLOUD_STATE/builds/$holder" 2>/dev/null)" in
        SUCCESS|FAILURE|CANCELLED|TIMEOUT|INTERNAL_ERROR|EXPIRED) ;;
        *) echo "environment is locked by build $holder" >&2; exit 1 ;;
      esac
    fi
  fi
  n=$(( $(cat "$FAKE_GCLOUD_STATE/nested" 2>/dev/null || echo 0) + 1 ))
  echo "$n" > "$FAKE_GCLOUD_STATE/nested"
  mkdir -p "$FAKE_GCLOUD_STATE/builds" "$(dirname "$lock")"
  printf '{\n  "build_id": "up-%s",\n  "holder": "cloud build %s",\n  "state": "held"\n}\n' "$n" "$BUILD_ID" > "$lock"
  case "${NESTED_DIES:-}" in
    cancelled) echo CANCELLED > "$FAKE_GCLOUD_STATE/builds/up-$n"; echo "build up-$n: CANCELLED" >&2; exit 1 ;;
    stale) echo FAILURE > "$FAKE_GCLOUD_STATE/builds/up-$n"
           printf '{\n  "build_id": "up-%s",\n  "holder": "cloud build %s",\n  "state": "stale"\n}\n' "$n" "$BUILD_ID" > "$lock"
           echo "build up-$n: FAILURE at step tpu-apply" >&2; exit 1 ;;
  esac
  echo READY > "$FAKE_GCLOUD_STATE/tpus/$(cat "$FAKE_GCLOUD_STATE/held")"
  echo SUCCESS > "$FAKE_GCLOUD_STATE/builds/up-$n"
  rm -f "$lock"
  exit 0
fi
exec "$TPUBUILD_PYTHON" -m builder "$@"
"""


def _start(tmp: Path, arch: str) -> Sandbox:
    """vm: the TPU VM was preempted. mig: the MIG recreated a lost VM (a recovery under way, its
    mark written by an earlier check): whole again, but the new VM lacks the dataset disk."""
    box = _sandbox(tmp, VM if arch == "vm" else MIG)
    (box.root / "bin" / "tpubuild").write_text(TPUBUILD)
    if arch == "vm":
        box.tpu("PREEMPTED")
    else:
        s = box.settings
        box.mig("RUNNING NONE\n" * s.hosts)
        box.put("disk_users", "".join(f"{s.tpu_name}-{i:04d}\n" for i in range(1, s.hosts)))
        mark = box.gcs(recovery.objects(s)["mark"])
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.write_text("detected_at=2026-11-28T00:00:00Z\ndetected_s=1795824000\nreason=3 of 4 VMs running\n"
                        "tries=0\ngave_up=0\n")
    return box


def _steps(box: Sandbox) -> list[dict[str, Any]]:
    return list(recovery.build_request(box.settings)["steps"])


def _run(box: Sandbox, build_id: str, *, upto: int | None = None, **env: str) -> list[int]:
    """The health build's steps in order, as Cloud Build runs them, until one fails or step ``upto``."""
    codes = []
    s = box.settings
    lock = f"{s.state_bucket}/{recovery.objects(s)['lock']}"
    (box.state / "builds").mkdir(exist_ok=True)  # Cloud Build knows the health build by its tags
    box.put(f"builds/{build_id}", "WORKING")
    box.put(f"builds/{build_id}.tags", ";".join(recovery.build_request(s)["tags"]))
    for i, step in enumerate(_steps(box)):
        proc = subprocess.run(
            ["bash", "-c", step_script(step, {"BUILD_ID": build_id})], capture_output=True, text=True, timeout=120,
            cwd=box.values.parent,
            env={**os.environ, **step_env(step, {"BUILD_ID": build_id}), "WORKSPACE": str(box.values.parent),
                 "PATH": f"{box.root / 'bin'}:{os.environ['PATH']}", "FAKE_GCLOUD_STATE": str(box.state),
                 "PYTHONPATH": str(REPO), "LOCK_OBJECT": lock, "TPUBUILD_PYTHON": os.environ.get("PYTHON", "python3"),
                 **env})
        codes.append(proc.returncode)
        if proc.returncode or i == upto:
            break
    return codes


def _world(box: Sandbox) -> dict[str, Any]:
    calls = box.calls()
    gone = [i for i, c in enumerate(calls) if "tpu-vm delete" in c or c.startswith("tpubuild dispatch")]
    launched = [calls.index(c) for c in _launched(calls)]
    records = box.records()
    return {
        "tpus": {p.name: p.read_text().strip() for p in sorted((box.state / "tpus").glob("*"))},
        "disk_users": sorted((box.state / "disk_users").read_text().split()) if (box.state / "disk_users").exists()
        else [],
        "mark": box.mark(),
        "lock": box.gcs(recovery.objects(box.settings)["lock"]).exists(),
        "last_record": records[-1]["outcome"] if records else None,
        "recovered": sum(r["outcome"] == "recovered" for r in records),
        "training": bool(launched) and (not gone or max(launched) > max(gone)),
    }


def _stops(arch: str) -> list[tuple[str, int, str]]:
    """(id, step index, NESTED_DIES): after each rendered step; inside health-prepare (vm: the only
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
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = {}
    for arch in ("vm", "mig"):
        box = _start(tmp_path_factory.mktemp(f"ref-{arch}"), arch)
        assert set(_run(box, "hb-1")) == {0}
        out[arch] = _world(box)
        assert out[arch]["last_record"] == "recovered" and out[arch]["training"] and out[arch]["mark"] == {}
    return out


@pytest.mark.parametrize(("arch", "stop", "index", "dies"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_recovery_stopped_anywhere_converges_at_the_next_check(
        arch: str, stop: str, index: int, dies: str, reference: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    RESULTS[(arch, stop)] = False
    box = _start(tmp_path, arch)
    _run(box, "hb-1", upto=index, **({"NESTED_DIES": dies} if dies else {}))
    if dies:
        assert box.gcs(recovery.objects(box.settings)["lock"]).exists(), "the dead update left the lock"
    assert set(_run(box, "hb-2")) == {0}
    world = _world(box)
    assert world == {**reference[arch], "recovered": 1}, json.dumps(world)
    RESULTS[(arch, stop)] = True


@pytest.mark.parametrize("state", ["held", "stale"])
def test_a_persons_ended_build_keeps_its_lock(state: str, tmp_path: Path) -> None:
    """The lock of a person's update that ended without releasing it is theirs to look at: the
    health check recovers nothing under it (only a health build's own dispatch is taken over)."""
    box = _start(tmp_path, "vm")
    lock = box.gcs(recovery.objects(box.settings)["lock"])
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(f'{{\n  "build_id": "b-7",\n  "holder": "ana@laptop",\n  "state": "{state}"\n}}\n')
    (box.state / "builds").mkdir()
    box.put("builds/b-7", "FAILURE")
    assert set(_run(box, "hb-1")) == {0}
    assert lock.exists() and box.records() == [] and _world(box)["tpus"] == {box.settings.tpu_name: "PREEMPTED"}


def test_count(request: pytest.FixtureRequest) -> None:
    """The count CI's log shows (tests/shell/conftest.py prints it at the end of the session)."""
    line = (f"convergence (health check's recovery): {len({a for a, _ in RESULTS})} pipelines, {len(RESULTS)} "
            f"stop points, {sum(RESULTS.values())} converged")
    converge.report(request, "tpubuild/converge-recovery-summary", line, RESULTS, CASES)
