"""modules/tpu_mig and the shared PD in real Terraform (stand-in provider): a slice the pipeline's
mig-attach step gives the disk (docs/pipeline.md, "The scarce resource first") has no disk in its
instance template; a slice applied by the modules before mig-attach keeps the disk in its template,
so that an update with today's modules changes nothing of it (a new template would recreate every
VM of the running slice); a calendar slice's template carries the disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builder.config import load
from builder.inputs import tfvars
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES, REPO, rewrite_env
from tests.support.terraform import (Terraform, Workspace, apply_slice_inputs, counts, old_module, resources,
                                     standin_terraform)

pytestmark = pytest.mark.slow

SPOT = EXAMPLES / "mig-v6e-16-spot.env"  # Hyperdisk ML dataset disk, seeded from GCS_DATASET
V5P = EXAMPLES / "mig-v5p-32.env"  # pd-balanced dataset disk
#: The last commit whose modules/tpu_mig put the shared PD in the instance template whenever the
#: hosts attach it (before mig-attach).
BEFORE_MIG_ATTACH = "64a69c3"


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def _settings(base: Path, tmp_path: Path, **overrides: str):  # noqa: ANN202 - Settings
    from builder.config import load_text

    return load_text(rewrite_env(base.read_text(), **overrides), REPO / base.name)


def _template_disks(plan: dict[str, Any]) -> list[dict[str, Any]]:
    [template] = [r for r in resources(plan) if r["type"] == "google_compute_instance_template"]
    return template["values"]["disk"]


def _slice_changes(plan: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    return {c["address"]: tuple(c["change"]["actions"]) for c in plan["resource_changes"]
            if c["type"] in ("google_compute_instance_template", "google_compute_instance_group_manager",
                             "google_compute_resource_policy")}


def _apply(tf: Terraform, work: Path, name: str) -> dict[str, Any]:
    plan = tf.plan_json(work, name)
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", f"{name}.tfplan")
    return plan


def _outputs(ws: Workspace) -> dict[str, Any]:
    return {k: v["value"] for k, v in json.loads((ws.state / "mig.tfstate").read_text())["outputs"].items()}


@pytest.mark.parametrize("base", [SPOT, V5P], ids=["hyperdisk-ml", "pd-balanced"])
def test_a_new_slice_has_no_disk_in_its_template_and_keeps_none(tf: Terraform, tmp_path: Path, base: Path) -> None:
    s = load(base)
    values = tfvars.for_module(s, "mig")
    assert values["shared_pd_attach"] and values["shared_pd_attached_later"]
    ws = Workspace(tmp_path / "ws")
    apply_slice_inputs(tf, ws, s)
    work = ws.module(module_dir(s, "mig"), "mig", values)
    tf.init(work)
    plan = _apply(tf, work, "create")
    disks = _template_disks(plan)
    assert [d["boot"] for d in disks] == [True], disks  # the boot disk only: mig-attach gives the dataset disk
    [template] = [r for r in resources(plan) if r["type"] == "google_compute_instance_template"]
    assert template["values"]["metadata"]["tpubuild-shared-pd-device"] == "shared-pd"  # the hosts wait for it
    assert _outputs(ws)["shared_pd_kept_in_template"] is False
    again = tf.plan_json(work, "again")
    assert set(counts(again)) <= {"no-op"}, counts(again)


@pytest.mark.parametrize("base", [SPOT, V5P], ids=["hyperdisk-ml", "pd-balanced"])
def test_a_slice_applied_before_mig_attach_keeps_its_template(tf: Terraform, tmp_path: Path, base: Path) -> None:
    """NOTHING LOST: the previous modules put the disk in the template; today's plan on that state
    changes nothing of the slice (no new template, so the MIG recreates no VM), then or after."""
    s = load(base)
    values = tfvars.for_module(s, "mig")
    state = tmp_path / "state"
    new_ws = Workspace(tmp_path / "ws-new", state=state)
    apply_slice_inputs(tf, new_ws, s)
    old = old_module(tmp_path, BEFORE_MIG_ATTACH, state, module_dir(s, "mig"), "mig", values)
    tf.init(old)
    before = _apply(tf, old, "old")
    assert [d["boot"] for d in _template_disks(before)] == [True, False]  # the old template held the disk
    assert "shared_pd_kept_in_template" not in _outputs(new_ws)
    work = new_ws.module(module_dir(s, "mig"), "mig", values)
    tf.init(work)
    plan = _apply(tf, work, "upgrade")
    assert set(_slice_changes(plan).values()) == {("no-op",)}, _slice_changes(plan)
    assert [d["boot"] for d in _template_disks(plan)] == [True, False]
    assert _outputs(new_ws)["shared_pd_kept_in_template"] is True
    again = tf.plan_json(work, "again")  # the state now says so itself: still nothing to change
    assert set(_slice_changes(again).values()) == {("no-op",)}, _slice_changes(again)
    # without the disk, the kept mark goes, and a disk attached again comes by mig-attach (in place:
    # break-before-make; make-before-break puts a changed template in the other slot,
    # tests/terraform/test_tpu_mig_slots.py)
    bbm = {**values, "make_before_break": False}
    off = new_ws.module(module_dir(s, "mig"), "mig", {**bbm, "shared_pd_attach": False})
    _apply(tf, off, "off")
    assert _outputs(new_ws)["shared_pd_kept_in_template"] is False
    on = new_ws.module(module_dir(s, "mig"), "mig", bbm)
    assert [d["boot"] for d in _template_disks(tf.plan_json(on, "on"))] == [True]


def test_a_calendar_slice_carries_the_disk_in_its_template(tf: Terraform, tmp_path: Path) -> None:
    """Calendar-mode VMs come at the reservation's start, after the build: no step would attach
    the disk, so the template carries it (and the apply waits for the seed)."""
    s = _settings(EXAMPLES / "mig-v6e-32-calendar.env", tmp_path, SHARED_PD_DISK_ATTACH="true",
                  GCS_DATASET="gs://my-tpu-project-datasets/wikitext/*")
    values = tfvars.for_module(s, "mig")
    assert values["shared_pd_attach"] and not values["shared_pd_attached_later"]
    ws = Workspace(tmp_path / "ws")
    apply_slice_inputs(tf, ws, s)
    work = ws.module(module_dir(s, "mig"), "mig", values)
    tf.init(work)
    disks = _template_disks(_apply(tf, work, "create"))
    assert [(d["boot"], d.get("mode"), d.get("device_name")) for d in disks][1:] == [(False, "READ_ONLY", "shared-pd")]
    assert _outputs(ws)["shared_pd_kept_in_template"] is False
