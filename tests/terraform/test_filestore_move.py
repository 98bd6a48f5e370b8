"""modules/filestore's two slots under real Terraform and the stand-in provider: the move of an
environment to another zone (docs/capacity.md, "Moving an environment to another zone") makes the
new instance, restored from a backup, beside the running one (nothing deleted in that apply), a
repeat deletes nothing, the release apply deletes the old zone's instance only, and a state written
before the slots moves to slot "a" without a change."""

from __future__ import annotations

import copy
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

FS = 'google_filestore_instance.this["{}"]'
BACKUP = "projects/p/locations/{}/backups/nfs-env-20261206-120000"


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def _changes(plan: dict[str, Any]) -> dict[str, str]:
    return {c["address"]: "+".join(c["change"]["actions"]) for c in plan.get("resource_changes", [])
            if c["type"] == "google_filestore_instance"}


def _after(plan: dict[str, Any], address: str) -> dict[str, Any]:
    return next(c for c in plan["resource_changes"] if c["address"] == address)["change"]["after"]


def _plan(tf: Terraform, work: Path, values: dict[str, Any], name: str) -> dict[str, Any]:
    (work / "terraform.tfvars.json").write_text(json.dumps(values, indent=1))
    return tf.plan_json(work, name)


def _apply(tf: Terraform, work: Path, name: str) -> dict[str, Any]:
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", f"{name}.tfplan")
    return {k: v["value"] for k, v in json.loads(tf(work, "output", "-json").stdout).items()}


def _guard(tmp: Path, plan: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = tmp / "guarded.json"
    path.write_text(json.dumps(plan))
    return subprocess.run([sys.executable, "-m", "builder", "guard", "--plan-json", str(path), "--module", "filestore",
                           "--action", "update"], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    values = tfvars.all_for(load(SHIPPED))["filestore"]
    assert values["tier"] in ("BASIC_HDD", "BASIC_SSD", "ZONAL") and values["move"] is False
    return values


def _elsewhere(values: dict[str, Any], **extra: Any) -> dict[str, Any]:
    zone = values["zone"]
    other = zone[:-1] + ("b" if zone[-1] != "b" else "c")
    return {**values, "zone": other, **extra}


def test_a_move_restores_beside_then_releases_the_old_zone(tf: Terraform, base: dict[str, Any], tmp_path: Path) -> None:
    work = Workspace(tmp_path / "ws").module("modules/filestore", "filestore", base)
    tf.init(work)
    tf.plan_json(work, "create")
    out = _apply(tf, work, "create")
    assert set(out["slots"]) == {"a"} and out["location"] == base["zone"]
    moved = _elsewhere(base, move=True, source_backup=BACKUP.format(base["region"]))

    # no backup named: the move is refused before anything is made (the pipeline takes one first)
    (work / "terraform.tfvars.json").write_text(json.dumps({**moved, "source_backup": ""}, indent=1))
    proc = tf(work, "plan", "-input=false", "-no-color", "-lock=false", check=False)
    assert proc.returncode != 0 and "has no source_backup" in " ".join(proc.stderr.split())

    make = _plan(tf, work, moved, "make")
    assert _changes(make) == {FS.format("a"): "no-op", FS.format("b"): "create"}
    new = _after(make, FS.format("b"))
    assert (new["name"], new["location"]) == (base["name"], moved["zone"])
    assert new["file_shares"][0]["source_backup"] == moved["source_backup"]
    out = _apply(tf, work, "make")
    assert set(out["slots"]) == {"a", "b"} and out["location"] == moved["zone"]
    assert out["slots"]["a"]["location"] == base["zone"] and out["slots"]["a"]["source_backup"] == ""

    # the same apply again (a move killed after it, run again): nothing is deleted or made
    assert set(_changes(_plan(tf, work, moved, "again")).values()) == {"no-op"}

    release = _plan(tf, work, {**moved, "release": True}, "release")
    assert _changes(release) == {FS.format("a"): "delete", FS.format("b"): "no-op"}
    # the guard lets the old zone's instance go without _ALLOW_DATA_LOSS: its copy is kept
    said = _guard(tmp_path, release)
    assert said.returncode == 0, said.stderr
    assert f'MOVED: {FS.format("a")} (the old zone\'s) is deleted: {FS.format("b")} in {moved["zone"]} was made ' \
           f'from the backup {moved["source_backup"]}' in said.stdout
    # the same delete with no copy beside it loses the share: refused
    blank = copy.deepcopy(release)
    for rc in blank["resource_changes"]:
        if rc["address"] == FS.format("b"):
            rc["change"]["before"]["file_shares"][0]["source_backup"] = None
    refused = _guard(tmp_path, blank)
    assert refused.returncode == 2 and "_ALLOW_DATA_LOSS" in refused.stderr
    out = _apply(tf, work, "release")
    assert set(out["slots"]) == {"b"} and out["location"] == moved["zone"]
    # a change that keeps the zone goes to the slot that holds it; nothing moves
    grown = _plan(tf, work, {**moved, "capacity_gb": base["capacity_gb"] + 1024}, "grown")
    assert _changes(grown) == {FS.format("b"): "update"}


def test_without_move_a_zone_change_replaces_in_place(tf: Terraform, base: dict[str, Any], tmp_path: Path) -> None:
    """TPU_MOVE="false" (and every build until the move's steps run): today's one slot, changed in
    place; Google replaces a zonal instance whose location changes, which the guard refuses."""
    work = Workspace(tmp_path / "ws").module("modules/filestore", "filestore", base)
    tf.init(work)
    tf.plan_json(work, "create")
    _apply(tf, work, "create")
    plan = _plan(tf, work, _elsewhere(base), "zone")
    changes = _changes(plan)
    assert set(changes) == {FS.format("a")} and changes[FS.format("a")] != "no-op"


def test_a_state_from_before_the_slots_moves_to_slot_a(tf: Terraform, base: dict[str, Any], tmp_path: Path) -> None:
    old_src = tmp_path / "old"
    old_src.mkdir()
    git_tree("main", old_src)
    old = Workspace(tmp_path / "ws-old", modules=old_src / "modules", state=tmp_path / "state")
    old_work = old.module("modules/filestore", "filestore", old_values(old_src / "modules/filestore", base))
    if "slots" in (old_src / "modules/filestore/outputs.tf").read_text():
        pytest.skip("main already has the slots")
    tf.init(old_work)
    tf(old_work, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")
    work = Workspace(tmp_path / "ws", state=tmp_path / "state").module("modules/filestore", "filestore", base)
    tf.init(work)
    plan = _plan(tf, work, base, "upgrade")
    assert _changes(plan) == {FS.format("a"): "no-op"}
    assert any(c.get("previous_address") == "google_filestore_instance.this" for c in plan["resource_changes"])
    moved = _plan(tf, work, _elsewhere(base, move=True, source_backup=BACKUP.format(base["region"])), "move")
    assert _changes(moved) == {FS.format("a"): "no-op", FS.format("b"): "create"}
