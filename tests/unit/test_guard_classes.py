"""The guard classifies by what a resource holds (builder/catalogue/guard_classes.py), refuses forgetting a
data holder and unknown action combinations; property tests across types and actions."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.catalogue import guard_classes
from builder.planning.guard import KNOWN_ACTIONS, PROTECTED_TYPES, evaluate, loses
from tests.conftest import REPO

PLANS = REPO / "tests" / "data" / "plans"
PROVIDER_TYPES: list[str] = json.loads((REPO / "tests" / "data" / "provider_resource_types.json").read_text())["resources"]
MODULE_TYPES = sorted({m.group(1) for tf in (REPO / "modules").rglob("*.tf")
                       for m in re.finditer(r'^\s*resource\s+"(google_[a-z0-9_]+)"', tf.read_text(), re.M)})
FAMILIES = sorted({re.match(r"google_[a-z0-9]+_?", t).group(0).rstrip("_") + "_" for t in MODULE_TYPES})
NEIGHBOURS = sorted(t for t in PROVIDER_TYPES if t.startswith(tuple(FAMILIES)))
CLASSIFIED = set(guard_classes.DATA) | set(guard_classes.TPU) | set(guard_classes.CAPACITY) | guard_classes.NO_DATA


def test_the_schema_lists_are_real() -> None:
    assert len(PROVIDER_TYPES) > 1000 and "google_tpu_v2_vm" in PROVIDER_TYPES
    assert {"google_compute_disk", "google_filestore_instance", "google_tpu_v2_vm"} <= set(MODULE_TYPES)
    assert "google_compute_" in FAMILIES and "google_filestore_" in FAMILIES and len(NEIGHBOURS) > 150


@pytest.mark.parametrize("rtype", MODULE_TYPES)
def test_every_type_in_our_modules_is_classified_explicitly(rtype: str) -> None:
    assert rtype in CLASSIFIED, f"{rtype} (used in modules/) is not in builder/catalogue/guard_classes.py"


def test_every_neighbour_that_sounds_like_data_is_classified_explicitly() -> None:
    unclassified = [t for t in NEIGHBOURS
                    if guard_classes.DATA_WORDS.search(t.removeprefix("google_")) and t not in CLASSIFIED]
    assert unclassified == []


def test_every_classified_type_exists_in_the_provider() -> None:
    assert sorted(CLASSIFIED - set(PROVIDER_TYPES)) == []


@pytest.mark.parametrize("rtype", ["google_compute_disk", "google_compute_region_disk", "google_compute_snapshot",
                                   "google_compute_image", "google_filestore_instance", "google_filestore_backup",
                                   "google_storage_bucket", "google_storage_bucket_object"])
def test_the_issue_types_hold_data(rtype: str) -> None:
    assert guard_classes.holds_data(rtype)


def test_an_unclassified_type_that_sounds_like_data_counts_as_data() -> None:
    assert guard_classes.holds_data("google_compute_hyperdisk_pool")
    assert not guard_classes.holds_data("google_compute_router")
    assert not guard_classes.holds_data("google_storage_bucket_iam_member")


# ---------------------------------------------------------------- evaluate over every data type

def _plan(changes: list[tuple[str, list[str]]]) -> dict:
    base = json.loads((PLANS / "filestore_destroy.json").read_text())
    template = base["resource_changes"][0]
    rcs = []
    for i, (rtype, actions) in enumerate(changes):
        rc = copy.deepcopy(template)
        rc.update(address=f"{rtype}.r{i}", type=rtype, name=f"r{i}")
        rc["change"]["actions"] = actions
        rcs.append(rc)
    base["resource_changes"] = rcs
    return base


DATA_TYPES = sorted(guard_classes.DATA)


@pytest.mark.parametrize("rtype", DATA_TYPES)
@pytest.mark.parametrize("actions", [["delete"], ["delete", "create"], ["create", "delete"]])
def test_deleting_or_replacing_any_data_holder_is_refused_outside_destroy(rtype: str, actions: list[str]) -> None:
    for action in ("create", "update", "auto"):
        decision = evaluate(_plan([(rtype, actions)]), "tpu", action)
        assert not decision.proceed and f"{rtype}.r0 would be" in decision.refusal
        assert loses(rtype) in decision.refusal and "_ALLOW_DATA_LOSS=true" in decision.refusal
        allowed = evaluate(_plan([(rtype, actions)]), "tpu", action, allow_data_loss=True)
        assert allowed.proceed and any("DATA LOSS ALLOWED" in w for w in allowed.warnings)


@pytest.mark.parametrize("rtype", DATA_TYPES)
def test_destroy_deletes_only_the_share_and_the_disk_without_override(rtype: str) -> None:
    decision = evaluate(_plan([(rtype, ["delete"])]), "shared_pd", "destroy")
    if rtype in PROTECTED_TYPES:
        assert decision.proceed
    else:
        assert not decision.proceed and "keeps snapshots, backups and buckets" in decision.refusal
        assert evaluate(_plan([(rtype, ["delete"])]), "shared_pd", "destroy", allow_data_loss=True).proceed


@pytest.mark.parametrize("rtype", DATA_TYPES)
@pytest.mark.parametrize("actions", [["forget"], ["create", "forget"]])
def test_forgetting_a_data_holder_is_refused_with_its_own_message(rtype: str, actions: list[str]) -> None:
    for action in ("create", "update", "auto", "destroy"):
        decision = evaluate(_plan([(rtype, actions)]), "filestore", action)
        assert not decision.proceed
        assert f"{rtype}.r0 would be forgotten during {action}" in decision.refusal
        assert "orphaning" in decision.refusal and "'removed' block" in decision.refusal
    allowed = evaluate(_plan([(rtype, actions)]), "filestore", "update", allow_data_loss=True)
    assert allowed.proceed and any(w.startswith("DATA ORPHANED") for w in allowed.warnings)


def test_forgetting_what_holds_no_data_proceeds() -> None:
    decision = evaluate(_plan([("google_compute_firewall", ["forget"])]), "tpu", "update")
    assert decision.proceed and decision.summary().endswith("0 to destroy, 1 to forget; proceed")


def test_real_terraform_forget_output_through_the_cli(cli, tmp_path: Path) -> None:
    """tests/data/plans/forget_terraform_data.json is real Terraform 1.11 output (a removed block
    with destroy = false next to a create-before-destroy replace of terraform_data). The builtin
    type holds no data, so it proceeds; the same document with the forgotten resource being a
    Filestore instance is refused, exit 2, one line."""
    real = json.loads((PLANS / "forget_terraform_data.json").read_text())
    assert [rc["change"]["actions"] for rc in real["resource_changes"]] == [["forget"], ["create", "delete"]]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(real))
    code, out, err = cli("guard", "--plan-json", path, "--module", "filestore", "--action", "update")
    assert code == 0 and "1 to forget; proceed" in out
    gone = real["resource_changes"][0]
    gone.update(type="google_filestore_instance", address="google_filestore_instance.this",
                provider_name="registry.terraform.io/hashicorp/google")
    path.write_text(json.dumps(real))
    code, out, err = cli("guard", "--plan-json", path, "--module", "filestore", "--action", "update")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "google_filestore_instance.this would be forgotten during update" in err


@pytest.mark.parametrize("actions", [["delete", "forget"], ["update", "create"], ["read", "delete"],
                                     ["create", "create"], ["forget", "create"]])
def test_unknown_action_combinations_are_refused(actions: list[str]) -> None:
    decision = evaluate(_plan([("google_compute_firewall", actions)]), "tpu", "update")
    assert not decision.proceed and "is not an action combination Terraform documents" in decision.refusal


# ---------------------------------------------------------------- properties

TYPES = st.sampled_from(sorted(set(MODULE_TYPES) | set(DATA_TYPES) | set(guard_classes.TPU)
                               | {"google_compute_router", "google_compute_hyperdisk_pool", "terraform_data"}))
ACTION_LISTS = st.sampled_from(sorted(KNOWN_ACTIONS)).map(list) | st.lists(
    st.sampled_from(["create", "delete", "update", "no-op", "read", "forget"]), min_size=1, max_size=3)
PROPS = settings(max_examples=300, deadline=None, derandomize=True, database=None)


@PROPS
@given(st.lists(st.tuples(TYPES, ACTION_LISTS), max_size=6), st.sampled_from(["create", "update", "auto", "destroy"]),
       st.booleans())
def test_guard_properties_across_types_and_actions(changes, action: str, allow: bool) -> None:
    doc = _plan([(t, a) for t, a in changes])
    decision = evaluate(doc, "filestore", action, allow_data_loss=allow)
    known = all(tuple(a) in KNOWN_ACTIONS for _t, a in changes)
    harmful = [(t, a) for t, a in changes if guard_classes.holds_data(t)
               and ("forget" in a or ("delete" in a and (action != "destroy" or t not in PROTECTED_TYPES)))]
    building = action == "destroy" and any(set(a) & {"create", "update"} for _t, a in changes)
    if not decision.proceed:
        assert decision.refusal and "\n" not in decision.refusal
        assert any(f"{t}.r{i}" in decision.refusal for i, (t, _a) in enumerate(changes))
    # nothing that loses or orphans data ever proceeds without the override
    if harmful and not allow:
        assert not decision.proceed
    # unknown combinations never proceed, override or not
    if not known:
        assert not decision.proceed
    # a plan with only known actions that touches no data proceeds (outside a destroy that builds)
    if known and not harmful and not building:
        assert decision.proceed
    # the override never turns a proceed into a refusal; order never matters
    if decision.proceed:
        assert evaluate(doc, "filestore", action, allow_data_loss=True).proceed
    reordered = _plan(list(reversed([(t, a) for t, a in changes])))
    assert evaluate(reordered, "filestore", action, allow_data_loss=allow).proceed == decision.proceed
