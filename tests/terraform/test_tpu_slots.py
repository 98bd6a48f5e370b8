"""modules/tpu_vm's two slots under real Terraform and the stand-in provider: make-before-break
creates the new slice beside the running one (no delete in that apply), the release apply deletes
the old one only, a repeat of the first apply deletes nothing, break-before-make replaces in place,
and a state written before the slots moves to slot "a" without a change (docs/pipeline.md,
"Make-before-break")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from builder.config import load
from builder.inputs import tfvars
from builder.planning.plan import module_dir
from tests.conftest import SHIPPED
from tests.support.terraform import Terraform, Workspace, standin_terraform

pytestmark = pytest.mark.slow

TPU = 'google_tpu_v2_vm.this["{}"]'


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def _changes(plan: dict[str, Any]) -> dict[str, str]:
    """address → '+'.join(actions) of every TPU VM in the plan."""
    return {c["address"]: "+".join(c["change"]["actions"]) for c in plan.get("resource_changes", [])
            if c["type"] == "google_tpu_v2_vm"}


def _values(tmp: Path, **keys: str) -> dict[str, Any]:
    text = SHIPPED.read_text()
    for key, value in keys.items():
        text = "\n".join(line for line in text.splitlines() if not line.startswith(f"{key}=")) + f'\n{key}="{value}"\n'
    path = tmp / f"values-{len(list(tmp.glob('values-*')))}.env"
    path.write_text(text)
    return tfvars.all_for(load(path))


def _up_to_tpu(tf: Terraform, ws: Workspace, settings: Any, values: dict[str, Any]) -> Path:
    """filestore, shared_pd, then tpu applied (fake) into ``ws``; the tpu module's work dir."""
    for module in ("filestore", "shared_pd", "tpu"):
        work = ws.module(module_dir(settings, module), module, values[module])
        tf.init(work)
        tf.plan_json(work, "create")
        tf(work, "apply", "-input=false", "-no-color", "-lock=false", "create.tfplan")
    return work


@pytest.fixture(scope="module")
def env(tf: Terraform, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shipped values applied (fake) up to the TPU VM: filestore, shared_pd, then tpu at v3-32."""
    tmp = tmp_path_factory.mktemp("slots")
    ws = Workspace(tmp / "ws")
    settings = load(SHIPPED)
    values = tfvars.all_for(settings)
    work = _up_to_tpu(tf, ws, settings, values)
    return {"work": work, "tmp": tmp, "values": values["tpu"]}


def _plan(tf: Terraform, work: Path, values: dict[str, Any], name: str, *args: str) -> dict[str, Any]:
    (work / "terraform.tfvars.json").write_text(json.dumps(values, indent=1))
    return tf.plan_json(work, name, *args)


def _guard(work: Path, plan: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = work / "guarded.json"
    path.write_text(json.dumps(plan))
    return subprocess.run([sys.executable, "-m", "builder", "guard", "--plan-json", str(path), "--module", "tpu",
                           "--action", "update"], capture_output=True, text=True, timeout=60)


def _apply(tf: Terraform, work: Path, name: str) -> dict[str, Any]:
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", f"{name}.tfplan")
    return {k: v["value"] for k, v in json.loads(tf(work, "output", "-json").stdout).items()}


def test_make_before_break_creates_beside_then_releases_the_old(tf: Terraform, env: dict[str, Any]) -> None:
    work, tmp = env["work"], env["tmp"]
    base = env["values"]
    assert base["make_before_break"] is True  # the default on vm
    name = base["name"]
    bigger = _values(tmp, TPU_ACCELERATOR_TYPE="v3-128")["tpu"]

    make = _plan(tf, work, bigger, "make")
    assert _changes(make) == {TPU.format("a"): "no-op", TPU.format("b"): "create"}
    created = next(c for c in make["resource_changes"] if c["address"] == TPU.format("b"))["change"]["after"]
    assert (created["name"], created["accelerator_type"]) == (f"{name}-b", "v3-128")
    assert created["metadata"]["tpubuild-tpu-name"] == f"{name}-b"
    # the guard announces the double billing from Terraform's own plan: new slice, kept slice
    said = _guard(work, make)
    assert said.returncode == 0, said.stderr
    billing = [line for line in said.stdout.splitlines() if "DOUBLE BILLING" in line]
    assert len(billing) == 1 and f"{name}-b (v3-128) is created beside {name} (v3-32)" in billing[0], said.stdout
    out = _apply(tf, work, "make")
    assert out["name"] == f"{name}-b" and set(out["slices"]) == {"a", "b"}
    assert out["slices"]["a"]["wanted"]["accelerator_type"] == "v3-32"

    # the same values again (a build that failed at tpu-swap, run again): nothing is deleted
    again = _plan(tf, work, bigger, "again")
    assert set(_changes(again).values()) == {"no-op"}, _changes(again)
    assert "DOUBLE BILLING" not in _guard(work, again).stdout

    release = _plan(tf, work, {**bigger, "release": True}, "release")
    assert _changes(release) == {TPU.format("a"): "delete", TPU.format("b"): "no-op"}
    assert {c["address"] for c in release["resource_changes"] if c["change"]["actions"] != ["no-op"]} == {TPU.format("a")}
    out = _apply(tf, work, "release")
    assert out["name"] == f"{name}-b" and set(out["slices"]) == {"b"}

    # the next replacing change goes back to slot a (tpu-<env>), again beside the running one
    back = _plan(tf, work, _values(tmp, TPU_ACCELERATOR_TYPE="v3-64")["tpu"], "back")
    assert _changes(back) == {TPU.format("a"): "create", TPU.format("b"): "no-op"}

    # break-before-make: the change goes to the slot that runs (Google replaces it there: one slice
    # billed at a time); the stand-in knows no ForceNew, so its plan says update (docs/terraform.md)
    bbm = _plan(tf, work, _values(tmp, TPU_ACCELERATOR_TYPE="v3-64", TPU_REPLACE="break-before-make")["tpu"], "bbm")
    assert _changes(bbm) == {TPU.format("b"): "update"}
    changed = next(c for c in bbm["resource_changes"] if c["address"] == TPU.format("b"))["change"]
    assert (changed["before"]["name"], changed["after"]["accelerator_type"]) == (f"{name}-b", "v3-64")

    # a change that keeps the slice (a label, the mount point) updates it in place, in its slot
    label = _plan(tf, work, {**bigger, "labels": {**bigger["labels"], "team": "nlp"}}, "label")
    assert _changes(label) == {TPU.format("b"): "update"}


def test_a_move_to_another_zone_makes_the_slice_beside_the_old_zones(tf: Terraform, tmp_path: Path) -> None:
    """The move of an environment (docs/capacity.md, "Moving an environment to another zone"): the
    new zone's slice goes to the free slot beside the running one in its own zone (a zone is
    ForceNew: in the running slot it would replace the slice in place), the release deletes the old
    zone's; a slot recorded before zones were is taken to be in previous_zone."""
    ws = Workspace(tmp_path / "ws")
    settings = load(SHIPPED)
    values = tfvars.all_for(settings)
    work = _up_to_tpu(tf, ws, settings, values)
    base = values["tpu"]
    other = base["zone"][:-1] + ("b" if base["zone"][-1] != "b" else "c")
    moved = {**base, "zone": other, "shared_pd_attach": False}
    make = _plan(tf, work, moved, "move")
    assert _changes(make) == {TPU.format("a"): "no-op", TPU.format("b"): "create"}
    new = next(c for c in make["resource_changes"] if c["address"] == TPU.format("b"))["change"]["after"]
    assert (new["zone"], new["name"]) == (other, f"{base['name']}-b")
    out = _apply(tf, work, "move")
    assert (out["slices"]["a"]["zone"], out["slices"]["b"]["zone"]) == (base["zone"], other)
    release = _plan(tf, work, {**moved, "release": True}, "release")
    assert _changes(release) == {TPU.format("a"): "delete", TPU.format("b"): "no-op"}
    _apply(tf, work, "release")

    # a state whose slot records no zone (written before the move): previous_zone says where it is
    state = ws.state / "tpu.tfstate"
    doc = json.loads(state.read_text())
    for slot in doc["outputs"]["slices"]["value"].values():
        slot.pop("zone")
    kind = doc["outputs"]["slices"]["type"]
    kind[1][1] = {k: v for k, v in kind[1][1].items() if k != "zone"}
    state.write_text(json.dumps(doc))
    assert set(_changes(_plan(tf, work, moved, "same")).values()) == {"no-op"}
    back = {**base, "shared_pd_attach": False, "previous_zone": other}
    assert _changes(_plan(tf, work, back, "back")) == {TPU.format("a"): "create", TPU.format("b"): "no-op"}
