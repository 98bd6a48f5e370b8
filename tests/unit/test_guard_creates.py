"""What lets the slice's apply run beside its guard (builder.planning.plan.asks_first,
builder/templates/_await_guard.sh.j2): a plan that only creates (every resource change ``create``,
``no-op`` or ``read``), and that Terraform marked neither errored nor unapplyable, is one the guard
proceeds with, for every plan module, every action that applies and every resource type the
providers the modules pin offer (tests/data/provider_resource_types.json), the data holders,
slices and capacity requests among them. Any other plan waits for the guard's verdict; one the
guard would refuse is among those (the last tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.catalogue import guard_classes
from builder.catalogue.modules import SLICE_RESOURCES, TRAINING_RESOURCES
from builder.facts.actions import Action
from builder.planning.guard import MODULES, evaluate

TYPES = sorted({*json.loads((Path(__file__).resolve().parents[1] / "data" / "provider_resource_types.json")
                            .read_text())["resources"], *guard_classes.DATA, *guard_classes.CAPACITY,
                *TRAINING_RESOURCES, *SLICE_RESOURCES})
APPLYING = (Action.CREATE, Action.UPDATE, Action.AUTO)


def _doc(changes: list[tuple[str, list[str]]], **flags: bool) -> dict:
    return {"format_version": "1.2", "applyable": flags.get("applyable", True), "errored": flags.get("errored", False),
            "resource_changes": [{"address": f"{t}.r{i}", "type": t, "name": f"r{i}", "mode": "managed",
                                  "change": {"actions": a, "before": None if a == ["create"] else {}, "after": {}}}
                                 for i, (t, a) in enumerate(changes)]}


@pytest.mark.parametrize("action", APPLYING, ids=str)
@pytest.mark.parametrize("module", MODULES)
def test_a_plan_that_only_creates_is_never_refused(module: str, action: Action) -> None:
    creates = [(t, ["create"]) for t in TYPES]
    untouched = [(t, ["no-op"]) for t in TYPES[::7]] + [(t, ["read"]) for t in TYPES[3::11]]
    decision = evaluate(_doc(creates + untouched), module, action)
    assert decision.proceed, decision.refusal
    assert decision.counts()["create"] == len(TYPES) and decision.counts()["delete"] == 0


@pytest.mark.parametrize("actions", [["delete"], ["delete", "create"], ["create", "delete"], ["forget"]])
def test_what_the_guard_refuses_is_never_a_plan_that_only_creates(actions: list[str]) -> None:
    """The guard refuses a data holder's delete, replace or forget: each has an action other than
    create/no-op/read, so the slice's apply waits for the verdict on it."""
    disk = "google_compute_disk"
    assert guard_classes.holds_data(disk)
    decision = evaluate(_doc([(disk, actions)]), "shared_pd", Action.UPDATE)
    assert not decision.proceed and set(actions) - {"create", "no-op", "read"}


@pytest.mark.parametrize("flags", [{"errored": True}, {"applyable": False}])
def test_a_plan_marked_errored_or_unapplyable_is_refused_even_if_it_only_creates(flags: dict[str, bool]) -> None:
    """Why _await_guard.sh.j2 waits for the verdict on such a plan (its first grep)."""
    assert not evaluate(_doc([("google_tpu_v2_vm", ["create"])], **flags), "tpu", Action.CREATE).proceed
