"""modules/shared_pd's two slots under real Terraform and the stand-in provider: the move of an
environment to another zone (docs/capacity.md, "Moving an environment to another zone") makes the
new zone's dataset disk from a snapshot of the running one, beside it (nothing deleted in that
apply), a repeat deletes nothing, the release apply deletes the old zone's disk only, and a state
written before the slots moves to slot "a" without a change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builder.config import load
from builder.inputs import tfvars
from tests.conftest import SHIPPED
from tests.support.slots import apply, changes, elsewhere, guard, plan, upgraded
from tests.support.terraform import Terraform, Workspace, standin_terraform

pytestmark = pytest.mark.slow

RTYPE = "google_compute_disk"

PD = 'google_compute_disk.this["{}"]'
SNAPSHOT = "pd-env-20261206-120000"


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()





@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    values = tfvars.all_for(load(SHIPPED))["shared_pd"]
    assert values["move"] is False and values["snapshot"] == ""
    return values



def test_a_move_makes_the_disk_from_a_snapshot_beside_then_releases(tf: Terraform, base: dict[str, Any],
                                                                    tmp_path: Path) -> None:
    work = Workspace(tmp_path / "ws").module("modules/shared_pd", "shared_pd", base)
    tf.init(work)
    tf.plan_json(work, "create")
    out = apply(tf, work, "create")
    assert set(out["slots"]) == {"a"} and f"/zones/{base['zone']}/" in out["self_link"]

    (work / "terraform.tfvars.json").write_text(json.dumps(elsewhere(base, move=True), indent=1))
    proc = tf(work, "plan", "-input=false", "-no-color", "-lock=false", check=False)
    assert proc.returncode != 0 and "has no snapshot" in " ".join(proc.stderr.split())

    moved = elsewhere(base, move=True, snapshot=SNAPSHOT)
    make = plan(tf, work, moved, "make")
    assert changes(make, RTYPE) == {PD.format("a"): "no-op", PD.format("b"): "create"}
    new = next(c for c in make["resource_changes"] if c["address"] == PD.format("b"))["change"]["after"]
    assert (new["name"], new["zone"], new["snapshot"]) == (base["name"], moved["zone"], SNAPSHOT)
    out = apply(tf, work, "make")
    assert set(out["slots"]) == {"a", "b"} and f"/zones/{moved['zone']}/" in out["self_link"]
    assert set(changes(plan(tf, work, moved, "again"), RTYPE).values()) == {"no-op"}

    release = plan(tf, work, {**moved, "release": True}, "release")
    assert changes(release, RTYPE) == {PD.format("a"): "delete", PD.format("b"): "no-op"}
    said = guard(tmp_path, release, "shared_pd")
    assert said.returncode == 0 and f"made from the snapshot {SNAPSHOT} of it" in said.stdout, said.stderr
    out = apply(tf, work, "release")
    assert set(out["slots"]) == {"b"}
    # the snapshot is only read at creation: a later one never replaces the disk
    assert set(changes(plan(tf, work, {**moved, "snapshot": "later"}, "later"), RTYPE).values()) == {"no-op"}


def test_a_state_from_before_the_slots_moves_to_slot_a(tf: Terraform, base: dict[str, Any], tmp_path: Path) -> None:
    work = upgraded(tf, tmp_path, "modules/shared_pd", "shared_pd", base)
    upgrade = plan(tf, work, base, "upgrade")
    assert changes(upgrade, RTYPE) == {PD.format("a"): "no-op"}
    assert any(c.get("previous_address") == "google_compute_disk.this" for c in upgrade["resource_changes"])
    assert changes(plan(tf, work, elsewhere(base, move=True, snapshot=SNAPSHOT), "move"), RTYPE) == {
        PD.format("a"): "no-op", PD.format("b"): "create"}
