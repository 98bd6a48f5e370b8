"""``tpubuild status`` after a build stopped half way (builder/cloud/interrupted.py):
which build stopped where, both slices of a make-before-break and what each bills per hour, and
the one command that finishes the job. The real TPU v2 and Cloud Build clients against the local
fakes; the lock in fake-gcs-server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLES
from tests.support.fakes.fixtures import Fakes, fakes, make_repo, unique_env  # noqa: F401 - fixtures


def _node(name: str, accel: str) -> dict[str, object]:
    return {"name": name, "state": "READY", "health": "HEALTHY", "acceleratorType": accel,
            "runtimeVersion": "tpu-ubuntu2204-base", "networkEndpoints": [{"ipAddress": "10.1.0.5"}]}


def test_a_build_killed_in_the_overlap_shows_both_slices_their_cost_and_the_command(
        fakes: Fakes, tmp_path: Path, cli, monkeypatch) -> None:
    from builder.cloud import interrupted, lock
    from builder.config import load

    values = make_repo(tmp_path / "r", unique_env(), base=EXAMPLES / "vm-v4-32.env", TPU_ACCELERATOR_TYPE="v4-64")
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    s = load(values)
    bucket = fakes.storage().bucket(s.state_bucket)
    # the update made the v4-64 beside the v4-32 (tpu-apply), checked it (tpu-swap), and was cancelled
    nodes = f"projects/{s.project_id}/locations/{s.zone}/nodes"
    fakes.google.tpu_nodes[f"{nodes}/{s.tpu_name}"] = _node(s.tpu_name, "v4-32")
    fakes.google.tpu_nodes[f"{nodes}/{s.tpu_name}-b"] = _node(f"{s.tpu_name}-b", "v4-64")
    held = lock.acquire(bucket, lock.Lock(env=s.env_name, action="update", holder="alice@laptop", created=lock.now(),
                                          scope={"tpu": True, "mig": False, "operations": [["tpu", "apply"]]}))
    lock.set_build(bucket, held, "b-killed")
    steps = [{"id": i, "status": st} for i, st in (("tpu-plan", "SUCCESS"), ("tpu-apply", "SUCCESS"),
                                                   ("tpu-swap", "SUCCESS"), ("tpu-checkpoint", "CANCELLED"))]
    fakes.google.builds["b-killed"] = {"project": s.project_id, "status": "CANCELLED", "steps": steps,
                                       "tags": ["tpubuild", f"tpubuild-env-{s.env_name}"]}
    code, out, err = cli("--values", values, "status")
    assert code == 0, err
    old, new = interrupted.slice_hourly(s, "v4-32"), interrupted.slice_hourly(s, "v4-64")
    assert old and new and new > old
    (stopped,) = [line for line in out.splitlines() if line.startswith("  stopped ")]
    assert ("build b-killed (update) ended CANCELLED at step tpu-checkpoint without finishing; finish the job: "
            "tpubuild submit --action update --tpu --wait") in stopped
    (billing,) = [line for line in out.splitlines() if line.startswith("  billing ")]
    assert (f"2 slices: {s.tpu_name}-b (v4-64, ${new:,.2f}/h) + {s.tpu_name} (v4-32, ${old:,.2f}/h) = "
            f"${old + new:,.2f}/h, until the rerun's tpu-release deletes {s.tpu_name}") in billing
    report = json.loads(cli("--values", values, "status", "--format", "json")[1])
    assert report["interrupted"]["command"] == "tpubuild submit --action update --tpu --wait"
    assert [x["name"] for x in report["interrupted"]["slices"]] == [f"{s.tpu_name}-b", s.tpu_name]
    # the rerun released the old slice and finished: nothing stopped, one slice, the lock free
    del fakes.google.tpu_nodes[f"{nodes}/{s.tpu_name}"]
    lock.release(bucket, s.env_name, "b-killed")
    code, out, err = cli("--values", values, "status")
    assert code == 0 and "  stopped " not in out and "  billing " not in out and "lock       free" in out


def test_a_build_still_working_is_not_called_stopped(fakes: Fakes, tmp_path: Path, cli, monkeypatch) -> None:
    from builder.cloud import lock
    from builder.config import load

    values = make_repo(tmp_path / "r", unique_env(), base=EXAMPLES / "vm-v4-32.env")
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    s = load(values)
    bucket = fakes.storage().bucket(s.state_bucket)
    lock.set_build(bucket, lock.acquire(bucket, lock.Lock(env=s.env_name, action="create", holder="a@b",
                                                          created=lock.now())), "b-running")
    fakes.google.builds["b-running"] = {"project": s.project_id, "status": "WORKING", "tags": []}
    code, out, _err = cli("--values", values, "status")
    assert "lock       held by build b-running" in out and "  stopped " not in out
    # marked stale by submit --wait: named with its failing step, no Cloud Build needed
    assert lock.mark_stale(bucket, s.env_name, "b-running", "TIMEOUT", "shared_pd-seed", "https://logs")
    code, out, _err = cli("--values", values, "status")
    assert ("stopped    build b-running (create) ended TIMEOUT at step shared_pd-seed without finishing; "
            "finish the job: tpubuild submit --action create --wait") in out
