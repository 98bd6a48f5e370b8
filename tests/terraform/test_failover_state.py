"""The failover loop's clean-up (docs/capacity.md, "The failover loop", "On mig") in real Terraform
through the stand-in provider: a refused try of a mig slice is applied (the group's create does not
fail on a stockout), then what the loop destroys (``builder.catalogue.module_parts.REFUSED_LEAVES``, by the
same ``apply -destroy -target`` per address) leaves nothing of the slice in the state (the policy,
the template, the group, the TTL and health jobs), and the next candidate, in another region, plans
creates only, which the loop requires of a later candidate."""

from __future__ import annotations

import json
import re

import pytest

from builder.catalogue.module_parts import REFUSED_LEAVES
from builder.config import load
from builder.inputs.tfvars import by_candidate
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES
from tests.support.terraform import Terraform, Workspace, apply_slice_inputs, standin_terraform

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def test_a_refused_mig_try_leaves_nothing_and_the_next_region_only_creates(tf: Terraform, tmp_path) -> None:
    settings = load(EXAMPLES / "mig-v6e-16-failover.env")
    candidates = by_candidate(settings)
    first, other = candidates["candidates/0/mig"], candidates["candidates/6/mig"]
    assert first["wait_for_instances"] is False and (first["zone"], other["zone"]) == ("us-east5-b", "us-central1-b")
    ws = Workspace(tmp_path / "ws")
    apply_slice_inputs(tf, ws, settings)
    work = ws.module(module_dir(settings, "mig"), "mig", first)
    tf.init(work)
    made = tf.plan_json(work, "c0")
    group = next(c for c in made["resource_changes"] if c["type"] == "google_compute_instance_group_manager")
    assert group["change"]["after"]["wait_for_instances"] is False  # the loop waits, not the apply
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", "c0.tfplan")
    listed = tf(work, "state", "list").stdout.split()
    leaves = "^(" + "|".join(re.escape(p) for p in REFUSED_LEAVES["mig"]) + ")"
    refused = [a for a in listed if re.match(leaves, a) and not re.search(r"(^|[.])data[.]", a)]
    assert {a.split("[")[0] for a in refused} >= {"google_compute_instance_group_manager.slice",
                                                   "google_compute_instance_template.slice"}, listed
    for address in refused:  # as the loop's drop_left does
        tf(work, "apply", "-destroy", "-input=false", "-no-color", "-lock=false", "-auto-approve",
           f"-target={address}")
    left = tf(work, "state", "list").stdout.split()
    assert not [a for a in left if not re.search(r"(^|[.])data[.]", a)], left  # nothing of the try is left
    (work / "terraform.tfvars.json").write_text(json.dumps(other, indent=1))
    nxt = tf.plan_json(work, "c6")
    actions = {c["address"]: c["change"]["actions"] for c in nxt["resource_changes"] if c["mode"] == "managed"}
    assert actions and all(a == ["create"] for a in actions.values()), actions
