"""``tpubuild status`` and ``tpubuild plan`` after a build stopped half way
(builder/cloud/interrupted.py): which build stopped where, both slices of a make-before-break and
what each bills per hour (on mig, each slot's type read from the mig module's Terraform state), and
the one command that finishes the job. The real TPU v2, Compute REST and Cloud Build clients
against the local fakes; the lock and the Terraform states in fake-gcs-server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLES, REPO, rewrite_env
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


def _killed_in_the_overlap(fakes: Fakes, s, values: Path, old: str, step_prefix: str) -> None:
    """The applied snapshot of ``values`` with the ``old`` accelerator type, and the environment lock
    of the update of the slice (``--tpu`` on vm, ``--mig`` on mig: ``step_prefix``) to the new one,
    whose build was cancelled after ``<prefix>-swap``."""
    from builder.cloud import lock, snapshot

    bucket = fakes.storage().bucket(s.state_bucket)
    applied = rewrite_env(values.read_text(), TPU_ACCELERATOR_TYPE=old).encode()
    snapshot.write(bucket, s.env_name, snapshot.Applied(values=applied, build_id="b-first", action="create",
                                                        time="t"), expected_generation=0)
    held = lock.acquire(bucket, lock.Lock(env=s.env_name, action="update", holder="alice@laptop", created=lock.now(),
                                          scope={k: k == step_prefix for k in ("tpu", "mig")}))
    lock.set_build(bucket, held, "b-killed")
    steps = [{"id": f"{step_prefix}-{i}", "status": st} for i, st in (
        ("plan", "SUCCESS"), ("apply", "SUCCESS"), ("swap", "SUCCESS"), ("checkpoint", "CANCELLED"))]
    fakes.google.builds["b-killed"] = {"project": s.project_id, "status": "CANCELLED", "steps": steps,
                                       "tags": ["tpubuild", f"tpubuild-env-{s.env_name}"]}


def test_plan_shows_the_stopped_build_both_slices_and_the_command_as_status_does(
        fakes: Fakes, tmp_path: Path, cli, monkeypatch) -> None:
    """plan with credentials reads the same section as status (text: the same lines; JSON: the same
    record); plan --applied FILE reads nothing from the cloud and shows none."""
    from builder.cloud import interrupted
    from builder.config import load

    values = make_repo(tmp_path / "r", unique_env(), base=EXAMPLES / "vm-v4-32.env", TPU_ACCELERATOR_TYPE="v4-64")
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    s = load(values)
    code, out, err = cli("--values", values, "plan", "--action", "update", "--tpu")
    assert code == 0 and "stopped half way" not in out, err  # nothing stopped: no section
    info = json.loads(cli("--values", values, "plan", "--action", "update", "--tpu", "--format", "json")[1])
    assert info["interrupted"] is None
    nodes = f"projects/{s.project_id}/locations/{s.zone}/nodes"
    fakes.google.tpu_nodes[f"{nodes}/{s.tpu_name}"] = _node(s.tpu_name, "v4-32")
    fakes.google.tpu_nodes[f"{nodes}/{s.tpu_name}-b"] = _node(f"{s.tpu_name}-b", "v4-64")
    _killed_in_the_overlap(fakes, s, values, "v4-32", "tpu")
    old, new = interrupted.slice_hourly(s, "v4-32"), interrupted.slice_hourly(s, "v4-64")
    assert old and new

    code, out, err = cli("--values", values, "plan", "--action", "update", "--tpu")
    assert code == 0, err
    assert "v4-32 → v4-64" in out, out  # compared with the applied snapshot
    shown = out.split('A build stopped half way (docs/safety.md, "Kill it anywhere, run it again"):\n', 1)[1]
    status = cli("--values", values, "status")[1].splitlines()
    assert shown.splitlines() == [x for x in status if x.startswith(("  stopped ", "  billing "))]
    assert ("build b-killed (update) ended CANCELLED at step tpu-checkpoint without finishing; finish the job: "
            "tpubuild submit --action update --tpu --wait") in shown
    assert (f"2 slices: {s.tpu_name}-b (v4-64, ${new:,.2f}/h) + {s.tpu_name} (v4-32, ${old:,.2f}/h) = "
            f"${old + new:,.2f}/h, until the rerun's tpu-release deletes {s.tpu_name}") in shown

    info = json.loads(cli("--values", values, "plan", "--action", "update", "--tpu", "--format", "json")[1])
    report = json.loads(cli("--values", values, "status", "--format", "json")[1])
    assert info["interrupted"] == report["interrupted"]
    assert [(x["name"], x["hourly"]) for x in info["interrupted"]["slices"]] == [
        (f"{s.tpu_name}-b", new), (s.tpu_name, old)]
    assert info["interrupted"]["command"] == "tpubuild submit --action update --tpu --wait"

    applied = tmp_path / "applied.env"  # offline: no section, no key
    applied.write_text(values.read_text())
    code, out, err = cli("--values", values, "plan", "--action", "update", "--tpu", "--applied", applied)
    assert code == 0 and "stopped half way" not in out, err
    info = json.loads(cli("--values", values, "plan", "--action", "update", "--tpu", "--applied", applied,
                          "--format", "json")[1])
    assert "interrupted" not in info


def _mig_state(slots: dict[str, tuple[str, str, str]]) -> bytes:
    """A mig module state whose ``slices`` output holds ``slots`` (slot -> group name, accelerator
    type, topology), each slot shaped as real Terraform wrote it (tests/data/plans)."""
    import copy

    fixture = json.loads((REPO / "tests/data/plans/tpu_mig_make_before_break.json").read_text())
    spec = fixture["planned_values"]["outputs"]["slices"]["value"]["a"]
    value = {}
    for slot, (name, accel, topology) in slots.items():
        one = copy.deepcopy(spec)
        one["name"] = name
        one["wanted"].update(accelerator_type=accel, topology=topology, accelerator_topology=topology)
        value[slot] = one
    return json.dumps({"version": 4, "outputs": {"slices": {"value": value, "type": "object"}}}).encode()


def test_mig_prices_both_slots_from_the_state_the_group_cannot_name(fakes: Fakes, tmp_path: Path, cli,
                                                                  monkeypatch) -> None:
    """A group does not name its accelerator type: each slot's comes from the mig module's state
    (its ``slices`` output, ``wanted``), priced with its own provisioning; a slot that state does not
    list is priced only when its policy is the asked topology, else unknown ("and more")."""
    from builder.cloud import interrupted
    from builder.config import load

    values = make_repo(tmp_path / "mig", unique_env(), base=EXAMPLES / "mig-v6e-16-spot.env")
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    s = load(values)
    b = f"{s.tpu_name}-b"
    groups = f"/compute/v1/projects/{s.project_id}/zones/{s.zone}/instanceGroupManagers"
    for name, topology in ((s.tpu_name, "2x4"), (b, "4x4")):
        policy = (f"https://compute.googleapis.com/compute/v1/projects/{s.project_id}/regions/{s.region}/"
                  f"resourcePolicies/{name}-{topology}")
        fakes.google.migs[f"{groups}/{name}"] = {
            "manager": {"name": name, "targetSize": 4, "status": {"isStable": True},
                        "resourcePolicies": {"workloadPolicy": policy}}, "instances": [{"instanceStatus": "RUNNING"}] * 4}
    _killed_in_the_overlap(fakes, s, values, "v6e-8", "mig")
    old, new = interrupted.slice_hourly(s, "v6e-8", "spot"), interrupted.slice_hourly(s, "v6e-16", "spot")
    assert old and new and old < new
    on_demand = interrupted.slice_hourly(s, "v6e-8", "on-demand")
    assert on_demand and on_demand > old

    bucket = fakes.storage().bucket(s.state_bucket)
    state = bucket.blob(f"{s.env_name}/mig/default.tfstate")
    state.upload_from_string(_mig_state({"a": (s.tpu_name, "v6e-8", "2x4"), "b": (b, "v6e-16", "4x4")}))
    code, out, err = cli("--values", values, "status")
    assert code == 0, err
    (billing,) = [x for x in out.splitlines() if x.startswith("  billing ")]
    assert (f"2 slices: {b} (v6e-16, ${new:,.2f}/h) + {s.tpu_name} (v6e-8, ${old:,.2f}/h) = ${old + new:,.2f}/h, "
            f"until the rerun's mig-release deletes {s.tpu_name}") in billing, billing
    assert "unknown" not in billing and "and more" not in billing
    part = json.loads(cli("--values", values, "status", "--format", "json")[1])["slice"]
    assert [(x["name"], x["accelerator_type"], x["provisioning"]) for x in part["slices"]] == [
        (b, "v6e-16", "spot"), (s.tpu_name, "v6e-8", "spot")]  # the slice part carries each slot's record
    info = json.loads(cli("--values", values, "plan", "--action", "update", "--mig", "--format", "json")[1])
    assert [(x["name"], x["accelerator_type"], x["hourly"]) for x in info["interrupted"]["slices"]] == [
        (b, "v6e-16", new), (s.tpu_name, "v6e-8", old)]
    assert info["interrupted"]["command"] == "tpubuild submit --action update --mig --wait"
    code, out, err = cli("--values", values, "plan", "--action", "update", "--mig")
    assert code == 0 and billing in out and "at step mig-checkpoint" in out, err

    # the old slot was applied on demand: it is priced so, whatever values.env asks now
    fixture = json.loads(_mig_state({"a": (s.tpu_name, "v6e-8", "2x4"), "b": (b, "v6e-16", "4x4")}))
    fixture["outputs"]["slices"]["value"]["a"]["wanted"]["provisioning"] = "on-demand"
    state.upload_from_string(json.dumps(fixture).encode())
    code, out, err = cli("--values", values, "status")
    assert f"{s.tpu_name} (v6e-8, ${on_demand:,.2f}/h) = ${on_demand + new:,.2f}/h" in out, out

    # killed inside the apply that made slot b, before its state was written: b is the asked topology
    # (priced from values.env), the old slot's type is nowhere to be read
    state.upload_from_string(_mig_state({"a": (s.tpu_name, "v6e-8", "2x4")}))
    old_only = f"{s.tpu_name} (v6e-8, ${old:,.2f}/h)"
    code, out, err = cli("--values", values, "status")
    assert f"2 slices: {b} (v6e-16, ${new:,.2f}/h) + {old_only} = ${old + new:,.2f}/h" in out, out
    state.delete()
    code, out, err = cli("--values", values, "status")
    assert (f"2 slices: {b} (v6e-16, ${new:,.2f}/h) + {s.tpu_name} (price unknown) = ${new:,.2f}/h and more"
            in out), out
