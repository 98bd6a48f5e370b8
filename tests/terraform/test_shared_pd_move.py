"""modules/shared_pd's two slots under real Terraform and the stand-in provider: the move of an
environment to another zone (docs/capacity.md, "Moving an environment to another zone") makes the
new zone's dataset disk from a snapshot of the running one, beside it (nothing deleted in that
apply), a repeat deletes nothing, the release apply deletes the old zone's disk only, and a state
written before the slots moves to slot "a" without a change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from builder.config import load
from builder.inputs import tfvars
from tests.conftest import SHIPPED
from tests.support.terraform import Terraform, Workspace, git_tree, old_values, standin_terraform

pytestmark = pytest.mark.slow

PD = 'google_compute_disk.this["{}"]'
SNAPSHOT = "pd-env-20261206-120000"


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def _changes(plan: dict[str, Any]) -> dict[str, str]:
    return {c["address"]: "+".join(c["change"]["actions"]) for c in plan.get("resource_changes", [])
            if c["type"] == "google_compute_disk"}


def _plan(tf: Terraform, work: Path, values: dict[str, Any], name: str) -> dict[str, Any]:
    (work / "terraform.tfvars.json").write_text(json.dumps(values, indent=1))
    return tf.plan_json(work, name)


def _apply(tf: Terraform, work: Path, name: str) -> dict[str, Any]:
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", f"{name}.tfplan")
    return {k: v["value"] for k, v in json.loads(tf(work, "output", "-json").stdout).items()}


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    values = tfvars.all_for(load(SHIPPED))["shared_pd"]
    assert values["move"] is False and values["snapshot"] == ""
    return values


def _elsewhere(values: dict[str, Any], **extra: Any) -> dict[str, Any]:
    zone = values["zone"]
    return {**values, "zone": zone[:-1] + ("b" if zone[-1] != "b" else "c"), **extra}


def test_a_move_makes_the_disk_from_a_snapshot_beside_then_releases(tf: Terraform, base: dict[str, Any],
                                                                    tmp_path: Path) -> None:
    work = Workspace(tmp_path / "ws").module("modules/shared_pd", "shared_pd", base)
    tf.init(work)
    tf.plan_json(work, "create")
    out = _apply(tf, work, "create")
    assert set(out["slots"]) == {"a"} and f"/zones/{base['zone']}/" in out["self_link"]

    (work / "terraform.tfvars.json").write_text(json.dumps(_elsewhere(base, move=True), indent=1))
    proc = tf(work, "plan", "-input=false", "-no-color", "-lock=false", check=False)
    assert proc.returncode != 0 and "has no snapshot" in " ".join(proc.stderr.split())

    moved = _elsewhere(base, move=True, snapshot=SNAPSHOT)
    make = _plan(tf, work, moved, "make")
    assert _changes(make) == {PD.format("a"): "no-op", PD.format("b"): "create"}
    new = next(c for c in make["resource_changes"] if c["address"] == PD.format("b"))["change"]["after"]
    assert (new["name"], new["zone"], new["snapshot"]) == (base["name"], moved["zone"], SNAPSHOT)
    out = _apply(tf, work, "make")
    assert set(out["slots"]) == {"a", "b"} and f"/zones/{moved['zone']}/" in out["self_link"]
    assert set(_changes(_plan(tf, work, moved, "again")).values()) == {"no-op"}

    release = _plan(tf, work, {**moved, "release": True}, "release")
    assert _changes(release) == {PD.format("a"): "delete", PD.format("b"): "no-op"}
    path = tmp_path / "guarded.json"
    path.write_text(json.dumps(release))
    said = subprocess.run([sys.executable, "-m", "builder", "guard", "--plan-json", str(path), "--module", "shared_pd",
                           "--action", "update"], capture_output=True, text=True, timeout=60)
    assert said.returncode == 0 and f"made from the snapshot {SNAPSHOT} of it" in said.stdout, said.stderr
    out = _apply(tf, work, "release")
    assert set(out["slots"]) == {"b"}
    # the snapshot is only read at creation: a later one never replaces the disk
    assert set(_changes(_plan(tf, work, {**moved, "snapshot": "later"}, "later")).values()) == {"no-op"}


def test_a_state_from_before_the_slots_moves_to_slot_a(tf: Terraform, base: dict[str, Any], tmp_path: Path) -> None:
    old_src = tmp_path / "old"
    old_src.mkdir()
    git_tree("main", old_src)
    if "slots" in (old_src / "modules/shared_pd/outputs.tf").read_text():
        pytest.skip("main already has the slots")
    old = Workspace(tmp_path / "ws-old", modules=old_src / "modules", state=tmp_path / "state")
    old_work = old.module("modules/shared_pd", "shared_pd", old_values(old_src / "modules/shared_pd", base))
    tf.init(old_work)
    tf(old_work, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")
    work = Workspace(tmp_path / "ws", state=tmp_path / "state").module("modules/shared_pd", "shared_pd", base)
    tf.init(work)
    plan = _plan(tf, work, base, "upgrade")
    assert _changes(plan) == {PD.format("a"): "no-op"}
    assert any(c.get("previous_address") == "google_compute_disk.this" for c in plan["resource_changes"])
    assert _changes(_plan(tf, work, _elsewhere(base, move=True, snapshot=SNAPSHOT), "move")) == {
        PD.format("a"): "no-op", PD.format("b"): "create"}
