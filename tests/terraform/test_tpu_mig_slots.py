"""modules/tpu_mig's two slots under real Terraform and the stand-in provider, as modules/tpu_vm's
(tests/terraform/test_tpu_slots.py): make-before-break creates the new slice's policy, template
and MIG beside the running one (nothing of it deleted or changed), the release apply deletes the
old slot only, the next change goes back to slot a, break-before-make changes the running slot in
place, flex-start is a bulk group in each slot (no resize request), and a state written before
the slots moves to slot "a" without a change, its group (made before bulk mode) kept as it is
until a change makes a new one (docs/pipeline.md, "Make-before-break")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builder.config import load_text
from builder.inputs import tfvars
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES, REPO, rewrite_env
from tests.support.terraform import (
    Terraform, Workspace, apply_slice_inputs, old_module, standin_terraform, unintended,
)

pytestmark = pytest.mark.slow

SPOT = EXAMPLES / "mig-v6e-16-spot.env"
FLEX = EXAMPLES / "mig-v6e-16-flex.env"
#: The last commit whose modules/tpu_mig held one slice (no slots): its state has no `slices`.
BEFORE_SLOTS = "d39b825"
SLICE = {"google_compute_resource_policy": "policy", "google_compute_instance_template": "template",
         "google_compute_instance_group_manager": "mig", "google_compute_resize_request": "flex"}


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def _values(base: Path, **overrides: str) -> dict[str, dict[str, Any]]:
    """Every plan module's tfvars of ``base`` with ``overrides``."""
    return tfvars.all_for(load_text(rewrite_env(base.read_text(), **overrides), REPO / base.name))


def _mig(base: Path, make_before_break: bool = True, **overrides: str) -> dict[str, Any]:
    # replace.py keeps mig on break-before-make for now: the slots are tested with it set directly
    return {**_values(base, **overrides)["mig"], "make_before_break": make_before_break}


def _changes(plan: dict[str, Any]) -> dict[str, str]:
    """'<kind>[<slot>]' → '+'.join(actions) of every slice resource in the plan."""
    out = {}
    for c in plan.get("resource_changes", []):
        if c["type"] in SLICE and c["mode"] == "managed":
            out[f'{SLICE[c["type"]]}[{_slot(c)}]'] = "+".join(c["change"]["actions"])
    return out


def _slot(change: dict[str, Any]) -> str:
    """The slot of a slice resource: its key, or for the workload policy (slice[0] is slot a, at its
    address from before the slots; slice_b[0] slot b) its name."""
    index = change.get("index")
    return index if isinstance(index, str) else ("b" if change["name"].endswith("_b") else "a")


def _after(plan: dict[str, Any], kind: str, slot: str) -> dict[str, Any]:
    return next(c["change"]["after"] for c in plan["resource_changes"]
                if SLICE.get(c["type"]) == kind and c["mode"] == "managed" and _slot(c) == slot)


def _prepare(tf: Terraform, ws: Workspace, base: Path) -> Path:
    """Apply what the slice reads (filestore, shared_pd, tpu: tpu_mig_access); the mig folder."""
    settings = load_text(base.read_text(), REPO / base.name)
    apply_slice_inputs(tf, ws, settings)
    return ws.root / "modules" / Path(module_dir(settings, "mig")).name


def _plan(tf: Terraform, work: Path, values: dict[str, Any], name: str) -> dict[str, Any]:
    (work / "terraform.tfvars.json").write_text(json.dumps(values, indent=1))
    return tf.plan_json(work, name)


def _apply(tf: Terraform, work: Path, name: str) -> dict[str, Any]:
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", f"{name}.tfplan")
    return {k: v["value"] for k, v in json.loads(tf(work, "output", "-json").stdout).items()}


@pytest.fixture(scope="module")
def spot(tf: Terraform, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The spot v6e-16 example's slice applied (fake) once: (a) slot a only; (b) a no-op again."""
    ws = Workspace(tmp_path_factory.mktemp("mig-slots") / "ws")
    work = ws.module("modules/tpu_mig", "mig")
    _prepare(tf, ws, SPOT)
    base = _mig(SPOT)
    tf.init(work)
    first = _plan(tf, work, base, "first")
    assert _changes(first) == {"policy[a]": "create", "template[a]": "create", "mig[a]": "create"}
    out = _apply(tf, work, "first")
    name = base["name"]
    assert out["name"] == name and set(out["slices"]) == {"a"}
    assert out["slices"]["a"]["name"] == name and out["workload_policy"].endswith(f"/{name}-4x4")
    again = _plan(tf, work, base, "again")
    assert set(_changes(again).values()) == {"no-op"}, _changes(again)
    return {"work": work, "name": name, "base": base}


def test_make_before_break_creates_beside_then_releases_the_old(tf: Terraform, spot: dict[str, Any]) -> None:
    work, name = spot["work"], spot["name"]
    bigger = _mig(SPOT, TPU_ACCELERATOR_TYPE="v6e-32")

    # (c) a new topology: slot b's policy, template and MIG are created; slot a is left alone
    make = _plan(tf, work, bigger, "make")
    assert _changes(make) == {"policy[a]": "no-op", "template[a]": "no-op", "mig[a]": "no-op",
                              "policy[b]": "create", "template[b]": "create", "mig[b]": "create"}
    assert _after(make, "mig", "b")["name"] == f"{name}-b"
    assert _after(make, "policy", "b")["name"] == f"{name}-b-4x8"
    template = _after(make, "template", "b")
    assert template["name_prefix"] == f"{name}-b-"
    assert template["metadata"]["tpubuild-tpu-name"] == f"{name}-b"
    assert template["metadata"]["tpubuild-accelerator-type"] == "v6e-32"
    out = _apply(tf, work, "make")
    assert out["name"] == f"{name}-b" and set(out["slices"]) == {"a", "b"}
    assert out["slices"]["a"]["wanted"]["accelerator_type"] == "v6e-16"
    assert out["workload_policy"].endswith(f"/{name}-b-4x8") and out["vm_count"] == bigger["vm_count"]

    # the same values again (a build that failed before the release, run again): nothing changes
    again = _plan(tf, work, bigger, "again")
    assert set(_changes(again).values()) == {"no-op"}, _changes(again)

    # (d) the release apply deletes slot a's resources only
    release = _plan(tf, work, {**bigger, "release": True}, "release")
    assert _changes(release) == {"policy[a]": "delete", "template[a]": "delete", "mig[a]": "delete",
                                 "policy[b]": "no-op", "template[b]": "no-op", "mig[b]": "no-op"}
    out = _apply(tf, work, "release")
    assert out["name"] == f"{name}-b" and set(out["slices"]) == {"b"}

    # (e) the next replacing change goes back to slot a (tpu-<env>), again beside the running one
    back = _plan(tf, work, _mig(SPOT, TPU_ACCELERATOR_TYPE="v6e-64"), "back")
    assert _changes(back) == {"policy[a]": "create", "template[a]": "create", "mig[a]": "create",
                              "policy[b]": "no-op", "template[b]": "no-op", "mig[b]": "no-op"}
    assert _after(back, "policy", "a")["name"] == f"{name}-8x8"

    # (f) break-before-make: the change goes to the slot that runs, in place (the stand-in knows no
    # ForceNew, so a new policy name or template shows as update: docs/terraform.md); no slot a
    bbm = _plan(tf, work, _mig(SPOT, make_before_break=False, TPU_ACCELERATOR_TYPE="v6e-64"), "bbm")
    changes = _changes(bbm)
    assert set(changes) == {"policy[b]", "template[b]", "mig[b]"}, changes
    assert "delete" not in changes["mig[b]"] and changes["template[b]"] != "no-op", changes
    assert _after(bbm, "policy", "b")["name"] == f"{name}-b-8x8"
    assert _after(bbm, "template", "b")["metadata"]["tpubuild-tpu-name"] == f"{name}-b"


def test_two_slots_and_values_for_neither_are_refused(tf: Terraform, spot: dict[str, Any]) -> None:
    """Runs after the test above left slot b; a make-before-break apply then holds a and b."""
    work = spot["work"]
    made = _plan(tf, work, _mig(SPOT, TPU_ACCELERATOR_TYPE="v6e-16"), "made")
    assert "create" in _changes(made).values()
    _apply(tf, work, "made")
    (work / "terraform.tfvars.json").write_text(json.dumps(_mig(SPOT, TPU_ACCELERATOR_TYPE="v6e-256")))
    said = tf(work, "plan", "-input=false", "-no-color", "-lock=false", check=False)
    assert said.returncode != 0 and "Two slices run" in said.stderr, said.stderr[-2000:]


def test_flex_start_is_a_bulk_group_in_each_slot_without_a_resize_request(tf: Terraform, tmp_path: Path) -> None:
    """(g) each slot's flex-start MIG is a bulk group with repair off, made empty (mig-resize grows
    it from 0); no resize request anywhere (Google refuses one on a TPU MIG: docs/modules.md)."""
    ws = Workspace(tmp_path / "ws")
    work = ws.module("modules/tpu_mig", "mig")
    _prepare(tf, ws, FLEX)
    base = _mig(FLEX)
    name = base["name"]
    tf.init(work)
    first = _plan(tf, work, base, "first")
    assert _changes(first)["mig[a]"] == "create" and not any(k.startswith("flex") for k in _changes(first))
    group = _after(first, "mig", "a")
    assert group["target_size_policy"] == [{"mode": "BULK"}] and group["target_size"] == 0
    assert group["instance_lifecycle_policy"][0]["default_action_on_failure"] == "DO_NOTHING"
    _apply(tf, work, "first")
    make = _plan(tf, work, _mig(FLEX, TPU_ACCELERATOR_TYPE="v6e-32"), "make")
    assert {k: v for k, v in _changes(make).items() if k.startswith("mig")} == {"mig[a]": "no-op", "mig[b]": "create"}
    group = _after(make, "mig", "b")
    assert group["name"] == f"{name}-b" and group["target_size_policy"] == [{"mode": "BULK"}]
    assert not any(k.startswith("flex") for k in _changes(make))


@pytest.mark.parametrize("base", [SPOT, FLEX], ids=["spot", "flex-start"])
def test_a_state_before_the_slots_moves_to_slot_a(tf: Terraform, tmp_path: Path, base: Path) -> None:
    """(h) the single slice of the module before the slots becomes slot a: moves only, no create,
    change or delete. Its group was made without bulk mode, which Google cannot add to a running
    group: it keeps running as it is (a flex-start state forgets its resize request: a `removed`
    block, nothing deleted at Google), and the next change that makes a new slice makes a bulk-mode
    group beside it (make-before-break)."""
    state = tmp_path / "state"
    new_ws = Workspace(tmp_path / "ws-new", state=state)
    _prepare(tf, new_ws, base)
    values = _mig(base)
    old = old_module(tmp_path, BEFORE_SLOTS, state, "modules/tpu_mig", "mig", values)
    tf.init(old)
    tf(old, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")
    work = new_ws.module("modules/tpu_mig", "mig")
    tf.init(work)
    plan = _plan(tf, work, values, "upgrade")
    actions = {c["address"]: c["change"]["actions"][0] for c in plan["resource_changes"]}
    forgotten = sorted(a for a, act in actions.items() if act == "forget")
    assert forgotten == (["google_compute_resize_request.slice[0]"] if base == FLEX else []), actions
    # all else moves or stays, bar what this release updates on purpose (INTENDED_SINCE: the health job's retries)
    assert set(unintended(plan)) == set(forgotten), actions
    moved = {c.get("previous_address"): c["address"] for c in plan["resource_changes"]
             if c["type"] in SLICE and c["change"]["actions"] != ["forget"]}
    assert moved == {None: "google_compute_resource_policy.slice[0]",  # slot a's policy keeps its address
                     "google_compute_instance_template.slice": 'google_compute_instance_template.slice["a"]',
                     "google_compute_instance_group_manager.slice": 'google_compute_instance_group_manager.slice["a"]'}
    out = _apply(tf, work, "upgrade")
    assert out["name"] == values["name"] and set(out["slices"]) == {"a"}
    assert out["slices"]["a"]["wanted"]["target_size_mode"] == "INDIVIDUAL"  # as the group was made
    assert set(_changes(_plan(tf, work, values, "again")).values()) == {"no-op"}
    # a state of the slots now: the next change goes beside it, as a bulk-mode group
    following = _plan(tf, work, _mig(base, TPU_ACCELERATOR_TYPE="v6e-32"), "next")
    assert _changes(following)["mig[b]"] == "create" and _changes(following)["mig[a]"] == "no-op"
    assert _after(following, "mig", "b")["target_size_policy"] == [{"mode": "BULK"}]


def test_a_state_before_the_slots_refuses_make_before_break_of_another_shape(tf: Terraform, tmp_path: Path) -> None:
    state = tmp_path / "state"
    new_ws = Workspace(tmp_path / "ws-new", state=state)
    _prepare(tf, new_ws, SPOT)
    old = old_module(tmp_path, BEFORE_SLOTS, state, "modules/tpu_mig", "mig", _mig(SPOT))
    tf.init(old)
    tf(old, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")
    work = new_ws.module("modules/tpu_mig", "mig", _mig(SPOT, TPU_ACCELERATOR_TYPE="v6e-32"))
    tf.init(work)
    said = tf(work, "plan", "-input=false", "-no-color", "-lock=false", check=False)
    assert said.returncode != 0 and "written before make-before-break" in said.stderr, said.stderr[-2000:]
    # break-before-make changes the slice in place, in slot a (a state before the slots is taken
    # to run today's values, so its group keeps the mode it was made with)
    (work / "terraform.tfvars.json").write_text(json.dumps(_mig(SPOT, make_before_break=False, TPU_ACCELERATOR_TYPE="v6e-32")))
    changes = _changes(tf.plan_json(work, "bbm"))
    assert set(changes) == {"policy[a]", "template[a]", "mig[a]"} and "delete" not in changes["mig[a]"], changes


def test_what_makes_a_second_mig_is_what_the_catalogue_says_recreates_the_hosts() -> None:
    """One fact, two readers: modules/tpu_mig's ``wanted`` (a slot whose values differ is another
    slice) and the catalogue's SLICE_TEMPLATE (builder.planning.diff and the capacity check call a change of
    it a replacement under make-before-break) name the same variables. ``shared_pd`` is the
    module's one word for shared_pd_attach and shared_pd_attached_later; env_name names the state
    itself (another environment is another state, never a slot); target_size_mode is derived from
    accelerator_topology and provisioning (a group whose mode changes is another group)."""
    import re

    from builder.catalogue.module_parts import SLICE_TEMPLATE

    main = (REPO / "modules/tpu_mig/main.tf").read_text()
    block = main[main.index("  wanted = {"):]
    block = block[:block.index("\n  }\n")]
    keys = set(re.findall(r"^\s{4}(\w+)\s+=", block, re.M))
    expected = (SLICE_TEMPLATE - {"shared_pd_attach", "shared_pd_attached_later", "env_name"}) | {"shared_pd", "target_size_mode"}
    assert keys == expected, (keys ^ expected)
    assert re.search(r"shared_pd\s+=\s+!var\.shared_pd_attach .*var\.shared_pd_attached_later", block)


def test_a_tpubuild_upgrade_does_not_recreate_the_running_slice(tf: Terraform, tmp_path: Path) -> None:
    """(i) the boot script changes (a tpubuild upgrade): the running slot keeps the metadata it was
    made with, stored in its slot, so its template (a new one would recreate every VM) and group
    do not change; a new slot (make-before-break) takes today's script."""
    ws = Workspace(tmp_path / "ws")
    work = ws.module("modules/tpu_mig", "mig")
    _prepare(tf, ws, SPOT)
    base = _mig(SPOT)
    tf.init(work)
    _plan(tf, work, base, "first")
    made = _apply(tf, work, "first")["slices"]["a"]["metadata"]["startup-script"]
    script = ws.root / "env_setup" / "scripts" / "startup.sh"
    assert made == script.read_text()
    script.write_text(made + "\n# a later tpubuild's boot script\n")
    again = _plan(tf, work, base, "upgrade")
    assert set(_changes(again).values()) == {"no-op"}, _changes(again)
    make = _plan(tf, work, _mig(SPOT, TPU_ACCELERATOR_TYPE="v6e-32"), "make")
    assert _changes(make)["template[a]"] == "no-op" and _changes(make)["template[b]"] == "create"
    assert _after(make, "template", "b")["metadata"]["startup-script"].endswith("# a later tpubuild's boot script\n")
    assert _after(make, "template", "a")["metadata"]["startup-script"] == made


#: The last commit whose modules/tpu_mig made groups without bulk mode (its slots record no target_size_mode).
BEFORE_BULK = "4b873f9"


@pytest.mark.parametrize("make_before_break", [True, False], ids=["make-before-break", "break-before-make"])
def test_a_group_made_before_bulk_mode_runs_on_until_a_change_replaces_it(
        tf: Terraform, tmp_path: Path, make_before_break: bool) -> None:
    """(j) A multi-host group made before bulk mode: Google cannot give a running group the mode,
    and nothing else about it changes, so the upgrade plans nothing (docs/modules.md, "What an
    existing environment gets"). A change that makes a new slice makes a bulk-mode group in the
    free slot: beside the old one under make-before-break (mig-release deletes it later), in its
    place in the same apply under break-before-make (the guard shows the deletion)."""
    state = tmp_path / "state"
    new_ws = Workspace(tmp_path / "ws-new", state=state)
    _prepare(tf, new_ws, SPOT)
    values = _mig(SPOT, make_before_break=make_before_break)
    old = old_module(tmp_path, BEFORE_BULK, state, "modules/tpu_mig", "mig", values)
    tf.init(old)
    tf(old, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")
    work = new_ws.module("modules/tpu_mig", "mig")
    tf.init(work)
    assert set(_changes(_plan(tf, work, values, "upgrade")).values()) == {"no-op"}
    change = _plan(tf, work, _mig(SPOT, make_before_break=make_before_break, TPU_ACCELERATOR_TYPE="v6e-32"), "change")
    expected_a = "no-op" if make_before_break else "delete"
    assert _changes(change) == {"policy[a]": expected_a, "template[a]": expected_a, "mig[a]": expected_a,
                                "policy[b]": "create", "template[b]": "create", "mig[b]": "create"}, _changes(change)
    group = _after(change, "mig", "b")
    assert group["target_size_policy"] == [{"mode": "BULK"}] and group["name"] == f"{values['name']}-b"
    (template,) = [c["change"]["after"] for c in change["resource_changes"]
                   if c["type"] == "google_compute_instance_template" and c["index"] == "b"]
    assert template["scheduling"][0]["instance_termination_action"] == "STOP"  # a bulk Spot slice stops


@pytest.mark.parametrize(("accelerator", "reservation", "model", "affinity"), [
    ("v6e-16", "my-v6e-reservation", "RESERVATION_BOUND", "SPECIFIC_RESERVATION"),
    ("v6e-16", "", "STANDARD", "ANY_RESERVATION"),
    ("v6e-8", "my-v6e-reservation", "STANDARD", "SPECIFIC_RESERVATION"),
], ids=["named-multi-host", "none-named", "named-single-host"])
def test_a_reservation_is_consumed_as_googles_tpu_pages_do(
        tf: Terraform, tmp_path: Path, accelerator: str, reservation: str, model: str, affinity: str) -> None:
    """(k) TPU_RESERVATION named: specific affinity, and in a bulk (multi-host) group the
    reservation-bound model (Google's consume-reservation page for TPUs); none named: any matching
    reservation with standard VMs (docs/modules.md, "Google's rules for TPU MIGs")."""
    ws = Workspace(tmp_path / "ws")
    work = ws.module("modules/tpu_mig", "mig")
    _prepare(tf, ws, SPOT)
    tf.init(work)
    values = _mig(SPOT, TPU_ACCELERATOR_TYPE=accelerator, TPU_PROVISIONING="reservation", TPU_RESERVATION=reservation)
    plan = _plan(tf, work, values, "reserved")
    (sched,), (chosen,) = _after(plan, "template", "a")["scheduling"], _after(plan, "template", "a")["reservation_affinity"]
    assert (sched["provisioning_model"], chosen["type"]) == (model, affinity)
    assert sched["instance_termination_action"] == ("DELETE" if model == "RESERVATION_BOUND" else None)
    assert [r["values"] for r in chosen["specific_reservation"]] == ([[reservation]] if reservation else [])
    bulk = accelerator == "v6e-16"
    assert _after(plan, "mig", "a")["target_size_policy"] == ([{"mode": "BULK"}] if bulk else [])
