"""The slice first (docs/pipeline.md, "The slice first"), in real Terraform through the stand-in
provider: the slice roots (modules/tpu_vm, modules/tpu_mig) plan and apply with no Filestore and
no disk state yet, as a create asks for the slice beside them; their hosts get no NFS export in
their metadata (they read it from the workspace at boot); once Filestore and the disk are applied,
planning the slice again changes nothing of it (a new instance template would recreate every VM
of a MIG, and a TPU VM's metadata would move). On mig the slice reads no state of its access
(modules/tpu_mig_access) either: it plans with none, runs its VMs as the account and tag that
module then makes, and planning it again once that module is applied changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from builder.config import load
from builder.inputs import tfvars
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES, SHIPPED
from tests.support.terraform import Terraform, Workspace, resources, standin_terraform

pytestmark = pytest.mark.slow

SLICE = {"google_tpu_v2_vm", "google_compute_instance_template", "google_compute_instance_group_manager",
         "google_compute_resource_policy"}


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def _apply(tf: Terraform, ws: Workspace, settings: Any, module: str, values: dict[str, Any]) -> dict[str, Any]:
    work = ws.module(module_dir(settings, module), module, values)
    tf.init(work)
    plan = tf.plan_json(work, "p")
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", "p.tfplan")
    return plan


@pytest.mark.parametrize("env", [SHIPPED, EXAMPLES / "mig-v6e-16-spot.env"], ids=lambda p: p.name)
def test_the_slice_is_made_before_the_storage_and_keeps_its_metadata_after(tf: Terraform, tmp_path, env) -> None:
    s = load(env)
    values = tfvars.all_for(s)
    accelerator = "mig" if s.arch == "mig" else "tpu"
    ws = Workspace(tmp_path / "ws")
    for module in ("filestore", "shared_pd"):  # what the slice's plan step's backend-only init leaves
        (ws.state / f"{module}.tfstate").write_text(
            '{"version": 4, "terraform_version": "1.11.0", "serial": 0, "lineage": "x", "outputs": {}, "resources": []}')
    assert not (ws.state / "tpu.tfstate").exists() or s.arch == "vm", "mig: no state of the slice's access"
    first = _apply(tf, ws, s, accelerator, values[accelerator])
    hosts = [r for r in resources(first) if r["type"] in ("google_tpu_v2_vm", "google_compute_instance_template")]
    assert hosts, "the slice was made"
    for r in hosts:
        assert r["values"]["metadata"]["tpubuild-nfs-ip"] == "" and r["values"]["metadata"]["tpubuild-nfs-share"] == ""
        assert r["values"]["metadata"]["tpubuild-shared-pd-device"]  # the hosts wait for the disk
    if s.arch == "mig":  # the account and tag the slice derived are the ones its access makes
        [template] = [r for r in hosts if r["type"] == "google_compute_instance_template"]
        assert template["values"]["tags"] == [s.tpu_name]
        assert [a["email"] for a in template["values"]["service_account"]] == [s.worker_service_account]
        _apply(tf, ws, s, "tpu", values["tpu"])
        access = json.loads((ws.state / "tpu.tfstate").read_text())["outputs"]
        assert (access["service_account_email"]["value"], access["network_tag"]["value"]) == \
            (s.worker_service_account, s.tpu_name)
    for module in ("filestore", "shared_pd"):
        _apply(tf, ws, s, module, values[module])
    work = ws.module(module_dir(s, accelerator), accelerator, values[accelerator])
    again = tf.plan_json(work, "again")
    moved = {c["address"]: c["change"]["actions"] for c in again["resource_changes"]
             if c["type"] in SLICE and c["change"]["actions"] not in (["no-op"], ["read"])}
    assert moved == {}, moved


def test_the_identity_step_plans_and_makes_exactly_the_hosts_account(tf: Terraform, tmp_path) -> None:
    """mig's tpu-identity (builder/templates/tf_identity.sh.j2): the access module planned with
    ``-target`` its catalogue entry's ``identity`` creates that account and nothing else (no role,
    no firewall rule); once applied, the same plan changes nothing, and the full plan (tpu-plan)
    makes the rest, keeping the account."""
    from builder.catalogue.modules import spec

    s = load(EXAMPLES / "mig-v6e-16-spot.env")
    entry = spec("mig", "tpu")
    assert entry is not None and entry.identity
    ws = Workspace(tmp_path / "ws")
    work = ws.module(module_dir(s, "tpu"), "tpu", tfvars.for_module(s, "tpu"))
    tf.init(work)

    def changes(plan: dict[str, Any]) -> dict[str, list[str]]:
        return {c["address"]: c["change"]["actions"] for c in plan["resource_changes"]
                if c["change"]["actions"] not in (["no-op"], ["read"])}

    target = f"-target={entry.identity}"
    assert changes(tf.plan_json(work, "identity", target)) == {entry.identity: ["create"]}
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", "identity.tfplan")
    assert changes(tf.plan_json(work, "again", target)) == {}
    rest = changes(tf.plan_json(work, "rest"))
    assert entry.identity not in rest and rest and set(map(tuple, rest.values())) == {("create",)}, rest
    assert any(a.startswith("module.slice_firewall.") for a in rest) and "google_project_iam_member.mig_reader" in rest
