"""Writes the plan JSON fixtures in this folder and their MANIFEST.json.

Run: python tests/data/plans/generate.py              (the hand-made ones + MANIFEST.json)
     python tests/data/plans/generate.py --terraform  (also the ones real Terraform writes)

Most fixtures are written by real Terraform 1.11 through the stand-in provider
(tests/support/terraform_fixtures.py: create, no-op, update in place, resize, count to zero, destroy of
the real modules). The ones below (``HAND``) are shapes the stand-in cannot make Terraform write: a
replacement (the stand-in knows no ForceNew), create-before-destroy, a deposed object, an errored
plan. They are built here in Terraform 1.11's ``terraform show -json PLANFILE`` shape (format_version
1.2), copied key for key from real plans of ``terraform_data`` resources (test_guard.py compares the
two when ``terraform`` is on PATH); the resources are the google provider's types with their
attributes. MANIFEST.json lists every fixture with who made it (tests/terraform/test_plan_fixtures.py checks
it, and that each fixture is exactly what its maker writes today).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GOOGLE = "registry.terraform.io/hashicorp/google"
BETA = "registry.terraform.io/hashicorp/google-beta"
LABELS = {"managed-by": "tpubuild", "tpubuild-env": "tpu-dev1"}

FILESTORE = {
    "create_time": "2026-01-05T10:00:00.000000Z", "deletion_protection_enabled": False,
    "deletion_protection_reason": "", "description": "tpubuild shared NFS", "effective_labels": LABELS,
    "etag": "abc123", "file_shares": [{"capacity_gb": 1024, "name": "tpushare", "nfs_export_options": [],
                                        "source_backup": ""}],
    "id": "projects/my-tpu-project/locations/europe-west4-a/instances/nfs-tpu-dev1", "kms_key_name": "",
    "labels": LABELS, "location": "europe-west4-a", "name": "nfs-tpu-dev1",
    "networks": [{"connect_mode": "DIRECT_PEERING", "ip_addresses": ["10.84.0.2"], "modes": ["MODE_IPV4"],
                  "network": "default", "reserved_ip_range": "10.84.0.0/29"}],
    "project": "my-tpu-project", "protocol": "NFS_V3", "terraform_labels": LABELS, "tier": "BASIC_HDD",
    "timeouts": None, "zone": None,
}
DISK = {
    "access_mode": "", "creation_timestamp": "2026-01-05T02:00:00.000-08:00", "description": "tpubuild dataset disk",
    "effective_labels": LABELS, "id": "projects/my-tpu-project/zones/europe-west4-a/disks/pd-tpu-dev1",
    "image": "", "label_fingerprint": "42WmSpB8rSM=", "labels": LABELS, "name": "pd-tpu-dev1",
    "physical_block_size_bytes": 4096, "project": "my-tpu-project", "provisioned_iops": 0,
    "self_link": "https://www.googleapis.com/compute/v1/projects/my-tpu-project/zones/europe-west4-a/disks/pd-tpu-dev1",
    "size": 500, "snapshot": "", "terraform_labels": LABELS, "timeouts": None, "type": "pd-ssd", "users": [],
    "zone": "europe-west4-a",
}
TPU_VM = {
    "accelerator_config": [], "accelerator_type": "v4-32", "api_version": "V2", "cidr_block": "",
    "data_disks": [{"mode": "READ_ONLY", "source_disk": DISK["self_link"].replace("tpu-dev1", "v4-pod")}],
    "description": "tpubuild TPU VM", "effective_labels": {**LABELS, "tpubuild-env": "v4-pod"}, "health": "HEALTHY",
    "id": "projects/my-tpu-project/locations/us-central2-b/nodes/tpu-v4-pod",
    "labels": {**LABELS, "tpubuild-env": "v4-pod"}, "metadata": {"tpubuild-arch": "vm", "tpubuild-env": "v4-pod"},
    "name": "tpu-v4-pod", "network_config": [{"can_ip_forward": False, "enable_external_ips": False,
                                              "network": "default", "queue_count": 0, "subnetwork": ""}],
    "project": "my-tpu-project", "runtime_version": "tpu-ubuntu2204-base",
    "scheduling_config": [{"preemptible": False, "reserved": False, "spot": False}], "state": "READY",
    "terraform_labels": {**LABELS, "tpubuild-env": "v4-pod"}, "timeouts": None, "zone": "us-central2-b",
}
TEMPLATE = {
    "can_ip_forward": False, "description": "tpubuild v6e-slice: one TPU VM (ct6e-standard-4t) of v6e-16",
    "id": "projects/my-tpu-project/global/instanceTemplates/tpu-v6e-slice-20260105",
    "machine_type": "ct6e-standard-4t", "name": "tpu-v6e-slice-20260105", "name_prefix": "tpu-v6e-slice-",
    "metadata": {"tpubuild-arch": "mig", "tpubuild-env": "v6e-slice"}, "project": "my-tpu-project",
}
MIG = {
    "base_instance_name": "tpu-v6e-slice", "id": "projects/my-tpu-project/zones/us-east5-b/instanceGroupManagers/tpu-v6e-slice",
    "name": "tpu-v6e-slice", "project": "my-tpu-project", "target_size": 4, "zone": "us-east5-b",
    "version": [{"instance_template": TEMPLATE["id"], "name": ""}],
}
COMPUTED = {"google_filestore_instance": ["id", "create_time", "etag", "networks"],
            "google_compute_disk": ["id", "creation_timestamp", "label_fingerprint", "self_link", "users"],
            "google_tpu_v2_vm": ["id", "health", "state"],
            "google_compute_instance_template": ["id", "name"],
            "google_compute_instance_group_manager": ["id"]}


def _unknown(rtype: str) -> dict[str, Any]:
    return {k: True for k in COMPUTED[rtype]}


def _sensitive(values: dict[str, Any] | None) -> Any:
    if values is None:
        return False
    return {k: ([{}] * len(v) if isinstance(v, list) and v and isinstance(v[0], dict) else
                [False] * len(v) if isinstance(v, list) else {} if isinstance(v, dict) else False)
            for k, v in values.items() if isinstance(v, (list, dict))}


def _planned(values: dict[str, Any], rtype: str) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in COMPUTED[rtype]}


def change(rtype: str, name: str, actions: list[str], before: dict[str, Any] | None, after: dict[str, Any] | None,
           *, provider: str = GOOGLE, replace_paths: list[list[Any]] | None = None, reason: str | None = None,
           mode: str = "managed", deposed: str | None = None, index: int | None = None) -> dict[str, Any]:
    after_planned = _planned(after, rtype) if after is not None and actions != ["no-op"] else after
    rc: dict[str, Any] = {
        "address": f"{'data.' if mode == 'data' else ''}{rtype}.{name}" + (f"[{index}]" if index is not None else ""),
        "mode": mode, "type": rtype, "name": name, **({"index": index} if index is not None else {}),
        "provider_name": provider,
        "change": {
            "actions": actions, "before": before, "after": after_planned,
            "after_unknown": _unknown(rtype) if after is not None and "create" in actions else {},
            "before_sensitive": _sensitive(before), "after_sensitive": _sensitive(after),
        },
    }
    if deposed:
        rc["deposed"] = deposed
    if replace_paths:
        rc["change"]["replace_paths"] = replace_paths
    if reason:
        rc["action_reason"] = reason
    return rc


def plan(changes: list[dict[str, Any]], variables: dict[str, Any], *, errored: bool = False) -> dict[str, Any]:
    planned, prior = [], []
    for rc in changes:
        res = {k: rc[k] for k in ("address", "mode", "type", "name", "index", "provider_name") if k in rc}
        if rc["change"]["after"] is not None:
            planned.append({**res, "schema_version": 0, "values": rc["change"]["after"],
                            "sensitive_values": rc["change"]["after_sensitive"] or {}})
        if rc["change"]["before"] is not None:
            prior.append({**res, "schema_version": 0, "values": rc["change"]["before"],
                          "sensitive_values": rc["change"]["before_sensitive"] or {}})
    providers = sorted({rc["provider_name"] for rc in changes})
    doc: dict[str, Any] = {
        "format_version": "1.2",
        "terraform_version": "1.11.4",
        "variables": {k: {"value": v} for k, v in variables.items()},
        "planned_values": {"root_module": {"resources": planned} if planned else {}},
        "resource_changes": changes,
    }
    if prior:
        doc["prior_state"] = {"format_version": "1.0", "terraform_version": "1.11.4",
                              "values": {"root_module": {"resources": prior}}}
    doc["configuration"] = {
        "provider_config": {p.rsplit("/", 1)[1]: {"name": p.rsplit("/", 1)[1], "full_name": p,
                                                  "version_constraint": "~> 8.7"} for p in providers},
        "root_module": {
            "resources": [{"address": rc["address"], "mode": rc["mode"], "type": rc["type"], "name": rc["name"],
                           "provider_config_key": rc["provider_name"].rsplit("/", 1)[1],
                           "expressions": {"name": {"references": ["var.env_name"]}}, "schema_version": 0}
                          for rc in changes if not rc.get("deposed") and "index" not in rc],
            "variables": {k: {"description": f"{k} (from values.env)"} for k in variables},
        },
    }
    doc["timestamp"] = "2026-01-05T10:00:00Z"
    doc["applyable"] = not errored and any(set(rc["change"]["actions"]) - {"no-op", "read"} for rc in changes)
    doc["complete"] = not errored
    doc["errored"] = errored
    return doc


def with_(base: dict[str, Any], **kw: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.update(kw)
    return out


FS_VARS = {"env_name": "tpu-dev1", "project_id": "my-tpu-project", "zone": "europe-west4-a", "tier": "BASIC_HDD",
           "capacity_gb": 1024, "share_name": "tpushare", "network": "default", "labels": LABELS}
PD_VARS = {"env_name": "tpu-dev1", "project_id": "my-tpu-project", "zone": "europe-west4-a", "size_gb": 500,
           "type": "pd-ssd", "snapshot": "", "labels": LABELS}
VM_VARS = {"env_name": "v4-pod", "project_id": "my-tpu-project", "zone": "us-central2-b",
           "accelerator_type": "v4-32", "runtime_version": "tpu-ubuntu2204-base"}

FS_SSD = with_(FILESTORE, tier="BASIC_SSD",
               file_shares=[{**FILESTORE["file_shares"][0], "capacity_gb": 2560}])
FS_2048 = with_(FILESTORE, file_shares=[{**FILESTORE["file_shares"][0], "capacity_gb": 2048}])
FS_RENAMED = with_(FILESTORE, file_shares=[{**FILESTORE["file_shares"][0], "name": "data"}])
DISK_BALANCED = with_(DISK, type="pd-balanced")
VM_V4_64 = with_(TPU_VM, accelerator_type="v4-64")
TEMPLATE_NEW = with_(TEMPLATE, metadata={**TEMPLATE["metadata"], "tpubuild-setup-script": "scripts/setup.sh"})
DATA_DISK = with_(DISK, name="pd-v4-pod")

FIXTURES: dict[str, dict[str, Any]] = {
    # filestore module
    "filestore_replace_tier": plan([change("google_filestore_instance", "this", ["delete", "create"], FILESTORE, FS_SSD,
                                           replace_paths=[["tier"]], reason="replace_because_cannot_update")],
                                   {**FS_VARS, "tier": "BASIC_SSD", "capacity_gb": 2560}),
    "filestore_replace_share_name": plan([change("google_filestore_instance", "this", ["delete", "create"], FILESTORE,
                                                 FS_RENAMED, replace_paths=[["file_shares", 0, "name"]],
                                                 reason="replace_because_cannot_update")],
                                         {**FS_VARS, "share_name": "data"}),
    "filestore_deposed_delete": plan([
        change("google_filestore_instance", "this", ["no-op"], FILESTORE, FILESTORE),
        change("google_filestore_instance", "this", ["delete"], FS_SSD, None, deposed="00000001"),
    ], FS_VARS),
    "filestore_errored": plan([change("google_filestore_instance", "this", ["update"], FILESTORE, FS_2048)],
                              FS_VARS, errored=True),
    # shared_pd module
    "shared_pd_replace_create_before_destroy": plan([
        change("google_compute_disk", "this", ["create", "delete"], DISK, DISK_BALANCED,
               replace_paths=[["type"]], reason="replace_because_cannot_update")], {**PD_VARS, "type": "pd-balanced"}),
    "shared_pd_count_zero": plan([change("google_compute_disk", "this", ["delete"], DISK, None, index=0,
                                         reason="delete_because_count_index")], PD_VARS),
    # tpu module, vm architecture (google-beta)
    # a data source read deferred to apply (the shape of the tpu_vm module before it read the disk
    # through terraform_remote_state); its last create plan, as test_guard.py reads it
    "tpu_vm_create_data_read": plan([
        change("google_compute_disk", "shared", ["read"], None, DATA_DISK, mode="data", reason="read_because_dependency_pending"),
        change("google_tpu_v2_vm", "this", ["create"], None, TPU_VM, provider=BETA)], VM_VARS),
    "tpu_vm_replace": plan([change("google_tpu_v2_vm", "this", ["delete", "create"], TPU_VM, VM_V4_64, provider=BETA,
                                   replace_paths=[["accelerator_type"]], reason="replace_because_cannot_update")],
                           {**VM_VARS, "accelerator_type": "v4-64"}),
    # mig module (mig architecture, modules/tpu_mig): a new template (here: MIG_SETUP_SCRIPT set)
    # replaces the old one create-before-destroy and the MIG points at it; no data lives there
    "tpu_mig_template_replace": plan([
        change("google_compute_instance_template", "slice", ["create", "delete"], TEMPLATE, TEMPLATE_NEW,
               replace_paths=[["metadata"]], reason="replace_because_cannot_update"),
        change("google_compute_instance_group_manager", "slice", ["update"], MIG, MIG)],
        {"env_name": "v6e-slice", "setup_script": "scripts/setup.sh", "vm_count": 4}),
}


#: The hand-made fixtures and why Terraform through the stand-in cannot write them.
_REPLACE = "a replacement: the stand-in plans no ForceNew attribute, so Terraform never replaces through it"
HAND: dict[str, str] = {
    "filestore_replace_tier": _REPLACE,
    "filestore_replace_share_name": _REPLACE,
    "filestore_deposed_delete": ("a deposed object: left when the delete half of a create-before-destroy "
                                 "replacement fails, i.e. a replacement and an API error"),
    "filestore_errored": "an errored plan: needs an API error while planning, which the stand-in never returns",
    "shared_pd_replace_create_before_destroy": _REPLACE + " (create_before_destroy)",
    "shared_pd_count_zero": ("the shared_pd module's disk has no count, so no plan of it deletes an index; "
                             "the real count-to-zero shape is tpu_vm_count_zero"),
    "tpu_vm_replace": _REPLACE,
    "tpu_vm_create_data_read": ("a data source read deferred to apply (read_because_dependency_pending): no module "
                                "reads a google_compute_disk data source now (tpu_vm reads shared_pd's state), so "
                                "no plan of ours has a read in resource_changes; the guard must still not count one"),
    "tpu_mig_template_replace": _REPLACE + " (the slice's instance template, create-before-destroy)",
}
MANIFEST = "MANIFEST.json"


def manifest() -> dict[str, dict[str, str]]:
    """{file: {made_by: hand|terraform, ...}} for every fixture of this folder."""
    sys.path.insert(0, str(HERE.parents[2]))
    from tests.support.terraform_fixtures import SHAPES, names  # noqa: E402  (the repo root is not a package path here)

    out: dict[str, dict[str, str]] = {f"{name}.json": {"made_by": "hand", "by": "tests/data/plans/generate.py",
                                                       "why": why} for name, why in HAND.items()}
    origin = {}
    for env, per_dir in SHAPES.items():
        for directory in per_dir:
            origin[directory] = str(env.relative_to(HERE.parents[2]))
    for name in names():
        source = next((env for directory, env in origin.items() if name.startswith(directory + "_")), "")
        out[f"{name}.json"] = {"made_by": "terraform", "by": "tests/support/terraform_fixtures.py",
                               "values": source or "(a configuration with no resources)"}
    # real Terraform output recorded once, of a builtin-only configuration (no module of ours)
    out["forget_terraform_data.json"] = {
        "made_by": "terraform", "by": "recorded once (tests/unit/test_guard_classes.py)",
        "why": "terraform_data with a removed block (destroy = false) beside a create-before-destroy "
               "replace: Terraform's forget shape; not regenerated, no module of ours forgets"}
    return dict(sorted(out.items()))


def hand_made() -> dict[str, str]:
    """{file: text} of the hand-made fixtures and MANIFEST.json, as main() writes them."""
    out = {f"{name}.json": json.dumps(FIXTURES[name], indent=2, sort_keys=False) + "\n" for name in HAND}
    out[MANIFEST] = json.dumps(manifest(), indent=2) + "\n"
    return out


def main(argv: list[str]) -> None:
    for name, text in hand_made().items():
        (HERE / name).write_text(text)
    if "--terraform" in argv:
        sys.path.insert(0, str(HERE.parents[2]))
        from tests.support.terraform_fixtures import regenerate  # noqa: E402
        from tests.support.terraform import Terraform, standin_env  # noqa: E402

        print("\n".join(regenerate(HERE, Terraform(standin_env()))))


if __name__ == "__main__":
    main(sys.argv[1:])
