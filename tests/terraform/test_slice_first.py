"""The slice first (docs/pipeline.md, "The slice first"), in real Terraform through the stand-in
provider: the slice roots (modules/tpu_vm, modules/tpu_mig) plan and apply with no Filestore and
no disk state yet, as a create asks for the slice beside them; their hosts get no NFS export in
their metadata (they read it from the workspace at boot); once Filestore and the disk are applied,
planning the slice again changes nothing of it (a new instance template would recreate every VM
of a MIG, and a TPU VM's metadata would move)."""

from __future__ import annotations

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
    if s.arch == "mig":  # the slice's access (identity, firewall): the one module the slice waits for
        _apply(tf, ws, s, "tpu", values["tpu"])
    first = _apply(tf, ws, s, accelerator, values[accelerator])
    hosts = [r for r in resources(first) if r["type"] in ("google_tpu_v2_vm", "google_compute_instance_template")]
    assert hosts, "the slice was made"
    for r in hosts:
        assert r["values"]["metadata"]["tpubuild-nfs-ip"] == "" and r["values"]["metadata"]["tpubuild-nfs-share"] == ""
        assert r["values"]["metadata"]["tpubuild-shared-pd-device"]  # the hosts wait for the disk
    for module in ("filestore", "shared_pd"):
        _apply(tf, ws, s, module, values[module])
    work = ws.module(module_dir(s, accelerator), accelerator, values[accelerator])
    again = tf.plan_json(work, "again")
    moved = {c["address"]: c["change"]["actions"] for c in again["resource_changes"]
             if c["type"] in SLICE and c["change"]["actions"] not in (["no-op"], ["read"])}
    assert moved == {}, moved
