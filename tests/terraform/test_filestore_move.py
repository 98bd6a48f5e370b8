"""modules/filestore's two slots under real Terraform and the stand-in provider: the move of an
environment to another zone (docs/capacity.md, "Moving an environment to another zone") makes the
new instance, restored from a backup, beside the running one (nothing deleted in that apply), a
repeat deletes nothing, the release apply deletes the old zone's instance only, and a state written
before the slots moves to slot "a" without a change."""

from __future__ import annotations

import copy
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

RTYPE = "google_filestore_instance"

FS = 'google_filestore_instance.this["{}"]'
BACKUP = "projects/p/locations/{}/backups/nfs-env-20261206-120000"


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()



def _after(doc: dict[str, Any], address: str) -> dict[str, Any]:
    return next(c for c in doc["resource_changes"] if c["address"] == address)["change"]["after"]





@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    values = tfvars.all_for(load(SHIPPED))["filestore"]
    assert values["tier"] in ("BASIC_HDD", "BASIC_SSD", "ZONAL") and values["move"] is False
    return values



def test_a_move_restores_beside_then_releases_the_old_zone(tf: Terraform, base: dict[str, Any], tmp_path: Path) -> None:
    work = Workspace(tmp_path / "ws").module("modules/filestore", "filestore", base)
    tf.init(work)
    tf.plan_json(work, "create")
    out = apply(tf, work, "create")
    assert set(out["slots"]) == {"a"} and out["location"] == base["zone"]
    moved = elsewhere(base, move=True, source_backup=BACKUP.format(base["region"]))

    # no backup named: the move is refused before anything is made (the pipeline takes one first)
    (work / "terraform.tfvars.json").write_text(json.dumps({**moved, "source_backup": ""}, indent=1))
    proc = tf(work, "plan", "-input=false", "-no-color", "-lock=false", check=False)
    assert proc.returncode != 0 and "has no source_backup" in " ".join(proc.stderr.split())

    make = plan(tf, work, moved, "make")
    assert changes(make, RTYPE) == {FS.format("a"): "no-op", FS.format("b"): "create"}
    new = _after(make, FS.format("b"))
    assert (new["name"], new["location"]) == (base["name"], moved["zone"])
    assert new["file_shares"][0]["source_backup"] == moved["source_backup"]
    out = apply(tf, work, "make")
    assert set(out["slots"]) == {"a", "b"} and out["location"] == moved["zone"]
    assert out["slots"]["a"]["location"] == base["zone"] and out["slots"]["a"]["source_backup"] == ""

    # the same apply again (a move killed after it, run again): nothing is deleted or made
    assert set(changes(plan(tf, work, moved, "again"), RTYPE).values()) == {"no-op"}

    release = plan(tf, work, {**moved, "release": True}, "release")
    assert changes(release, RTYPE) == {FS.format("a"): "delete", FS.format("b"): "no-op"}
    # the guard lets the old zone's instance go without _ALLOW_DATA_LOSS: its copy is kept
    said = guard(tmp_path, release, "filestore")
    assert said.returncode == 0, said.stderr
    assert f'MOVED: {FS.format("a")} (the old zone\'s) is deleted: {FS.format("b")} in {moved["zone"]} was made ' \
           f'from the backup {moved["source_backup"]}' in said.stdout
    # the same delete with no copy beside it loses the share: refused
    blank = copy.deepcopy(release)
    for rc in blank["resource_changes"]:
        if rc["address"] == FS.format("b"):
            rc["change"]["before"]["file_shares"][0]["source_backup"] = None
    refused = guard(tmp_path, blank, "filestore")
    assert refused.returncode == 2 and "_ALLOW_DATA_LOSS" in refused.stderr
    out = apply(tf, work, "release")
    assert set(out["slots"]) == {"b"} and out["location"] == moved["zone"]
    # a change that keeps the zone goes to the slot that holds it; nothing moves
    grown = plan(tf, work, {**moved, "capacity_gb": base["capacity_gb"] + 1024}, "grown")
    assert changes(grown, RTYPE) == {FS.format("b"): "update"}


def test_without_move_a_zone_change_replaces_in_place(tf: Terraform, base: dict[str, Any], tmp_path: Path) -> None:
    """TPU_MOVE="false" (and every build until the move's steps run): today's one slot, changed in
    place; Google replaces a zonal instance whose location changes, which the guard refuses."""
    work = Workspace(tmp_path / "ws").module("modules/filestore", "filestore", base)
    tf.init(work)
    tf.plan_json(work, "create")
    apply(tf, work, "create")
    found = changes(plan(tf, work, elsewhere(base), "zone"), RTYPE)
    assert set(found) == {FS.format("a")} and found[FS.format("a")] != "no-op"


def test_a_state_from_before_the_slots_moves_to_slot_a(tf: Terraform, base: dict[str, Any], tmp_path: Path) -> None:
    work = upgraded(tf, tmp_path, "modules/filestore", "filestore", base)
    upgrade = plan(tf, work, base, "upgrade")
    assert changes(upgrade, RTYPE) == {FS.format("a"): "no-op"}
    assert any(c.get("previous_address") == "google_filestore_instance.this" for c in upgrade["resource_changes"])
    moved = plan(tf, work, elsewhere(base, move=True, source_backup=BACKUP.format(base["region"])), "move")
    assert changes(moved, RTYPE) == {FS.format("a"): "no-op", FS.format("b"): "create"}
