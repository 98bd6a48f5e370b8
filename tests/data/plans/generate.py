"""Writes the plan JSON fixtures in this folder. Run: python tests/data/plans/generate.py

The shape is Terraform 1.11's ``terraform show -json PLANFILE`` output (format_version 1.2), copied
key for key from real plans of ``terraform_data`` resources (test_guard.py compares the two when
``terraform`` is on PATH); the resources are the google provider's types with their attributes.
Each fixture is one plan module's plan, as the pipeline's ``<module>-plan`` step writes it.
"""

from __future__ import annotations

import copy
import json
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
TPU_NODE = {
    "accelerator_type": "v3-32", "cidr_block": "10.3.0.0/29", "description": "tpubuild TPU Node",
    "effective_labels": LABELS, "id": "projects/my-tpu-project/locations/europe-west4-a/nodes/tpu-tpu-dev1",
    "labels": LABELS, "name": "tpu-tpu-dev1", "network": "default",
    "network_endpoints": [{"ip_address": "10.3.0.2", "port": 8470}, {"ip_address": "10.3.0.3", "port": 8470}],
    "project": "my-tpu-project", "scheduling_config": [{"preemptible": False, "reserved": False}],
    "service_account": "service-1@cloud-tpu.iam.gserviceaccount.com", "tensorflow_version": "pytorch-1.13",
    "terraform_labels": LABELS, "timeouts": None, "use_service_networking": False, "zone": "europe-west4-a",
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
    "can_ip_forward": False, "description": "tpubuild worker", "id": "projects/my-tpu-project/global/instanceTemplates/worker-tpu-dev1-20260105",
    "machine_type": "n1-standard-16", "name": "worker-tpu-dev1-20260105", "name_prefix": "worker-tpu-dev1-",
    "metadata": {"tpubuild-arch": "node", "tpubuild-env": "tpu-dev1"}, "project": "my-tpu-project",
}
MIG = {
    "base_instance_name": "worker-tpu-dev1", "id": "projects/my-tpu-project/zones/europe-west4-a/instanceGroupManagers/worker-tpu-dev1",
    "name": "worker-tpu-dev1", "project": "my-tpu-project", "target_size": 4, "zone": "europe-west4-a",
    "version": [{"instance_template": TEMPLATE["id"], "name": ""}],
}
COMPUTED = {"google_filestore_instance": ["id", "create_time", "etag", "networks"],
            "google_compute_disk": ["id", "creation_timestamp", "label_fingerprint", "self_link", "users"],
            "google_tpu_node": ["id", "network_endpoints", "service_account"],
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
                                                  "version_constraint": "~> 6.50"} for p in providers},
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
NODE_VARS = {"env_name": "tpu-dev1", "project_id": "my-tpu-project", "zone": "europe-west4-a",
             "accelerator_type": "v3-32", "runtime_version": "pytorch-1.13", "cidr_block": "10.3.0.0/29"}
VM_VARS = {"env_name": "v4-pod", "project_id": "my-tpu-project", "zone": "us-central2-b",
           "accelerator_type": "v4-32", "runtime_version": "tpu-ubuntu2204-base"}

FS_SSD = with_(FILESTORE, tier="BASIC_SSD",
               file_shares=[{**FILESTORE["file_shares"][0], "capacity_gb": 2560}])
FS_2048 = with_(FILESTORE, file_shares=[{**FILESTORE["file_shares"][0], "capacity_gb": 2048}])
FS_RENAMED = with_(FILESTORE, file_shares=[{**FILESTORE["file_shares"][0], "name": "data"}])
DISK_1000 = with_(DISK, size=1000)
DISK_BALANCED = with_(DISK, type="pd-balanced")
NODE_128 = with_(TPU_NODE, accelerator_type="v3-128")
VM_LABELS = with_(TPU_VM, labels={**TPU_VM["labels"], "team": "nlp"})
VM_V4_64 = with_(TPU_VM, accelerator_type="v4-64")
TEMPLATE_NEW = with_(TEMPLATE, machine_type="n1-standard-32")
DATA_DISK = with_(DISK, name="pd-v4-pod")

FIXTURES: dict[str, dict[str, Any]] = {
    # filestore module
    "filestore_create": plan([change("google_filestore_instance", "this", ["create"], None, FILESTORE)], FS_VARS),
    "filestore_noop": plan([change("google_filestore_instance", "this", ["no-op"], FILESTORE, FILESTORE)], FS_VARS),
    "filestore_update_in_place": plan([change("google_filestore_instance", "this", ["update"], FILESTORE, FS_2048)],
                                      {**FS_VARS, "capacity_gb": 2048}),
    "filestore_replace_tier": plan([change("google_filestore_instance", "this", ["delete", "create"], FILESTORE, FS_SSD,
                                           replace_paths=[["tier"]], reason="replace_because_cannot_update")],
                                   {**FS_VARS, "tier": "BASIC_SSD", "capacity_gb": 2560}),
    "filestore_replace_share_name": plan([change("google_filestore_instance", "this", ["delete", "create"], FILESTORE,
                                                 FS_RENAMED, replace_paths=[["file_shares", 0, "name"]],
                                                 reason="replace_because_cannot_update")],
                                         {**FS_VARS, "share_name": "data"}),
    "filestore_destroy": plan([change("google_filestore_instance", "this", ["delete"], FILESTORE, None)], FS_VARS),
    "filestore_deposed_delete": plan([
        change("google_filestore_instance", "this", ["no-op"], FILESTORE, FILESTORE),
        change("google_filestore_instance", "this", ["delete"], FS_SSD, None, deposed="00000001"),
    ], FS_VARS),
    "filestore_errored": plan([change("google_filestore_instance", "this", ["update"], FILESTORE, FS_2048)],
                              FS_VARS, errored=True),
    # shared_pd module
    "shared_pd_create": plan([change("google_compute_disk", "this", ["create"], None, DISK)], PD_VARS),
    "shared_pd_resize": plan([change("google_compute_disk", "this", ["update"], DISK, DISK_1000)],
                             {**PD_VARS, "size_gb": 1000}),
    "shared_pd_replace_create_before_destroy": plan([
        change("google_compute_disk", "this", ["create", "delete"], DISK, DISK_BALANCED,
               replace_paths=[["type"]], reason="replace_because_cannot_update")], {**PD_VARS, "type": "pd-balanced"}),
    "shared_pd_count_zero": plan([change("google_compute_disk", "this", ["delete"], DISK, None, index=0,
                                         reason="delete_because_count_index")], PD_VARS),
    "shared_pd_destroy": plan([change("google_compute_disk", "this", ["delete"], DISK, None)], PD_VARS),
    # tpu module, node architecture
    "tpu_node_create": plan([change("google_tpu_node", "this", ["create"], None, TPU_NODE)], NODE_VARS),
    "tpu_node_replace": plan([change("google_tpu_node", "this", ["delete", "create"], TPU_NODE, NODE_128,
                                     replace_paths=[["accelerator_type"]], reason="replace_because_cannot_update")],
                             {**NODE_VARS, "accelerator_type": "v3-128"}),
    "tpu_node_noop": plan([change("google_tpu_node", "this", ["no-op"], TPU_NODE, TPU_NODE)], NODE_VARS),
    "tpu_node_destroy": plan([change("google_tpu_node", "this", ["delete"], TPU_NODE, None)], NODE_VARS),
    # tpu module, vm architecture (google-beta; reads the shared PD as a data source)
    "tpu_vm_create": plan([
        change("google_compute_disk", "shared", ["read"], None, DATA_DISK, mode="data", reason="read_because_dependency_pending"),
        change("google_tpu_v2_vm", "this", ["create"], None, TPU_VM, provider=BETA)], VM_VARS),
    "tpu_vm_update_in_place": plan([
        change("google_compute_disk", "shared", ["read"], None, DATA_DISK, mode="data", reason="read_because_dependency_pending"),
        change("google_tpu_v2_vm", "this", ["update"], TPU_VM, VM_LABELS, provider=BETA)], VM_VARS),
    "tpu_vm_replace": plan([change("google_tpu_v2_vm", "this", ["delete", "create"], TPU_VM, VM_V4_64, provider=BETA,
                                   replace_paths=[["accelerator_type"]], reason="replace_because_cannot_update")],
                           {**VM_VARS, "accelerator_type": "v4-64"}),
    "tpu_vm_destroy": plan([change("google_tpu_v2_vm", "this", ["delete"], TPU_VM, None, provider=BETA)], VM_VARS),
    # mig module (node): a new template replaces the old one create-before-destroy; no data lives there
    "mig_update": plan([
        change("google_compute_instance_template", "worker", ["create", "delete"], TEMPLATE, TEMPLATE_NEW,
               replace_paths=[["machine_type"]], reason="replace_because_cannot_update"),
        change("google_compute_instance_group_manager", "workers", ["update"], MIG, MIG)],
        {"env_name": "tpu-dev1", "machine_type": "n1-standard-32", "target_size": 4}),
    "mig_destroy": plan([
        change("google_compute_instance_group_manager", "workers", ["delete"], MIG, None),
        change("google_compute_instance_template", "worker", ["delete"], TEMPLATE, None)],
        {"env_name": "tpu-dev1", "machine_type": "n1-standard-16", "target_size": 4}),
    # a plan with nothing in it (a module whose state is empty and config has no resources)
    "empty": {"format_version": "1.2", "terraform_version": "1.11.4", "planned_values": {"root_module": {}},
              "configuration": {"root_module": {}}, "timestamp": "2026-01-05T10:00:00Z",
              "applyable": False, "complete": True, "errored": False},
}


def main() -> None:
    for name, doc in FIXTURES.items():
        (HERE / f"{name}.json").write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")


if __name__ == "__main__":
    main()
