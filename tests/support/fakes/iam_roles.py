"""What a real project's IAM decides, for the fakes: the permissions of the predefined roles tpubuild
grants (the part of each role we use, copied from Google's role reference,
https://cloud.google.com/iam/docs/roles-permissions/<service>: e.g. ``.../monitoring`` lists
Monitoring Dashboard Configuration Editor with ``monitoring.dashboards.*``, ``.../logging`` Logs
Configuration Writer with ``logging.logMetrics.*``, ``.../cloudscheduler`` Cloud Scheduler Admin with
``cloudscheduler.*``), and :func:`refusal`, the answer a project gives a principal whose policy
bindings hold no role with the permission: HTTP 403 PERMISSION_DENIED, "Permission 'P' denied on
resource 'R' (or it may not exist)." (the wording Google's APIs use).

Deliberately independent of builder/catalogue/permissions.py: the catalogue says which role creates
a type; this table says whether Google's role really holds the permission that create checks.
"""

from __future__ import annotations

import re
from typing import Any


def _expand(service: str, nouns: dict[str, str]) -> frozenset[str]:
    """``{"dashboards": "create delete get"}`` → ``monitoring.dashboards.create``, ..."""
    return frozenset(f"{service}.{noun}.{verb}" for noun, verbs in nouns.items() for verb in verbs.split())


_CRUD = "create delete get list update"

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    "roles/monitoring.dashboardEditor": _expand("monitoring", {"dashboards": _CRUD}),
    "roles/logging.configWriter": _expand("logging", {"logMetrics": _CRUD, "sinks": _CRUD, "exclusions": _CRUD}),
    "roles/cloudscheduler.admin": _expand("cloudscheduler", {"jobs": f"{_CRUD} enable pause run fullView",
                                                             "locations": "get list"}),
    "roles/file.editor": _expand("file", {"instances": f"{_CRUD} restore", "backups": _CRUD}),
    "roles/tpu.admin": _expand("tpu", {"nodes": f"{_CRUD} start stop", "queuedResources": _CRUD}),
    "roles/compute.instanceAdmin.v1": _expand("compute", {
        "disks": f"{_CRUD} use useReadOnly setLabels", "instanceTemplates": "create delete get list useReadOnly",
        "instanceGroupManagers": f"{_CRUD} use", "resourcePolicies": f"{_CRUD} use",
        "snapshots": "create delete get list useReadOnly setLabels", "instances": f"{_CRUD} setMetadata attachDisk"}),
    "roles/compute.futureReservationUser": _expand("compute", {"futureReservations": f"{_CRUD} cancel"}),
    "roles/compute.securityAdmin": _expand("compute", {"firewalls": _CRUD, "networks": "updatePolicy"}),
    "roles/iam.serviceAccountAdmin": _expand("iam", {"serviceAccounts": f"{_CRUD} getIamPolicy setIamPolicy"}),
    "roles/iam.serviceAccountUser": _expand("iam", {"serviceAccounts": "actAs get list"}),
    "roles/iam.roleAdmin": _expand("iam", {"roles": f"{_CRUD} undelete"}),
    "roles/resourcemanager.projectIamAdmin": _expand("resourcemanager", {"projects": "get getIamPolicy setIamPolicy"}),
    "roles/storage.admin": _expand("storage", {"buckets": f"{_CRUD} getIamPolicy setIamPolicy",
                                               "objects": f"{_CRUD} getIamPolicy setIamPolicy"}),
    "roles/storage.objectViewer": _expand("storage", {"objects": "get list"}),
    "roles/storage.objectCreator": _expand("storage", {"objects": "create"}),
    "roles/cloudbuild.builds.editor": _expand("cloudbuild", {"builds": "create get list update"}),
    "roles/logging.logWriter": _expand("logging", {"logEntries": "create"}),
    "roles/cloudquotas.viewer": _expand("cloudquotas", {"quotas": "get", "quotaInfos": "get list"}),
    "roles/compute.networkViewer": _expand("compute", {"networks": "get list", "subnetworks": "get list",
                                                       "routers": "get list"}),
    "roles/iap.tunnelResourceAccessor": _expand("iap", {"tunnelInstances": "accessViaIAP"}),
    # the read-only roles of the plan account
    "roles/storage.bucketViewer": _expand("storage", {"buckets": "get list"}),
    "roles/cloudbuild.builds.viewer": _expand("cloudbuild", {"builds": "get list"}),
    "roles/tpu.viewer": _expand("tpu", {"nodes": "get list", "queuedResources": "get list"}),
    "roles/compute.viewer": _expand("compute", {"instanceGroupManagers": "get list", "disks": "get list",
                                                "futureReservations": "get list", "instances": "get list"}),
}


def holds(role: str, permission: str) -> bool:
    return permission in ROLE_PERMISSIONS.get(role, frozenset())


_STARTS = re.compile(r'resource\.name\.startsWith\("([^"]*)"\)')


def _applies(binding: dict[str, Any], resource: str) -> bool:
    """An unconditioned binding applies everywhere; a condition made of ``resource.name.startsWith``
    terms joined by ``||`` applies where one matches (anything else: not understood, not granted)."""
    expression = (binding.get("condition") or {}).get("expression", "")
    if not expression:
        return True
    terms = [t.strip() for t in expression.split("||")]
    prefixes = [m.group(1) for t in terms if (m := _STARTS.fullmatch(t))]
    return len(prefixes) == len(terms) and any(resource.startswith(p) for p in prefixes)


def refusal(policy: dict[str, Any], member: str, permission: str, resource: str) -> tuple[int, str] | None:
    """None when ``policy`` grants ``member`` a role holding ``permission`` on ``resource``; else
    the (HTTP code, message) the real API answers."""
    for binding in policy.get("bindings", []):
        if member in binding.get("members", []) and holds(binding["role"], permission) and _applies(binding, resource):
            return None
    return 403, f"Permission '{permission}' denied on resource '{resource}' (or it may not exist)."
