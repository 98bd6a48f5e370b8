"""What the builder account needs to create each Terraform resource type our modules declare: one
record per type, the IAM permission Google's API reference says its create checks, and the
predefined role that holds it (Google's role reference lists each role's permissions:
https://cloud.google.com/iam/docs/roles-permissions/<service>, e.g. ``.../monitoring`` for
``roles/monitoring.dashboardEditor``, whose ``monitoring.dashboards.*`` includes
``monitoring.dashboards.create``).

A catalogue entry (builder/catalogue/modules.py ``resources``) names the types its Terraform
directory declares, its child modules' included; ``tpubuild initialize`` grants the builder account
the union of the roles of the environment's architecture (builder/cloud/iam.py ``wanted``), and
``tests/unit/test_permissions.py`` fails when a module declares a type with no record here, or a
catalogue entry's list differs from its ``.tf`` files. Pure: no I/O.

Decision (docs/cloud.md, "The builder service account"): a role is granted for every type the
architecture's modules *can* declare, not only those the current values use (the TTL's and the
health check's Cloud Scheduler jobs exist only with ENV_TTL_HOURS or TPU_RECOVERY): turning one off
is an update that deletes the job, which needs the same role, and turning one on must not wait for
someone to run ``initialize`` again.
"""

from __future__ import annotations

from builder.facts.records import record

#: Google's predefined-role reference, one page per service.
ROLES_DOC = "https://cloud.google.com/iam/docs/roles-permissions/"


@record
class ResourceGrant:
    """``role`` holds ``permission``, which a create of the resource type checks (``doc``: the
    role reference page that lists the role with it)."""

    role: str
    permission: str
    doc: str


def _grant(role: str, permission: str) -> ResourceGrant:
    service = role.removeprefix("roles/").split(".", 1)[0]
    return ResourceGrant(role, permission, ROLES_DOC + service)


#: Terraform resource type → the role that creates it. Terraform's own types (``terraform_data``)
#: call no API and are not listed (:data:`TERRAFORM_OWN`).
RESOURCE_GRANTS: dict[str, ResourceGrant] = {
    # Cloud Monitoring: projects.dashboards.create "requires the monitoring.dashboards.create permission"
    "google_monitoring_dashboard": _grant("roles/monitoring.dashboardEditor", "monitoring.dashboards.create"),
    # Cloud Logging: projects.metrics.create needs logging.logMetrics.create (Logs Configuration Writer)
    "google_logging_metric": _grant("roles/logging.configWriter", "logging.logMetrics.create"),
    # Cloud Scheduler Admin: cloudscheduler.* (the TTL's and the health check's jobs)
    "google_cloud_scheduler_job": _grant("roles/cloudscheduler.admin", "cloudscheduler.jobs.create"),
    "google_filestore_instance": _grant("roles/file.editor", "file.instances.create"),
    "google_tpu_v2_vm": _grant("roles/tpu.admin", "tpu.nodes.create"),
    "google_tpu_node": _grant("roles/tpu.admin", "tpu.nodes.delete"),  # legacy: destroy only
    "google_compute_disk": _grant("roles/compute.instanceAdmin.v1", "compute.disks.create"),
    "google_compute_instance_template": _grant("roles/compute.instanceAdmin.v1", "compute.instanceTemplates.create"),
    "google_compute_instance_group_manager": _grant("roles/compute.instanceAdmin.v1",
                                                    "compute.instanceGroupManagers.create"),
    "google_compute_resource_policy": _grant("roles/compute.instanceAdmin.v1", "compute.resourcePolicies.create"),
    "google_compute_future_reservation": _grant("roles/compute.futureReservationUser",
                                                "compute.futureReservations.create"),
    "google_compute_firewall": _grant("roles/compute.securityAdmin", "compute.firewalls.create"),
    "google_service_account": _grant("roles/iam.serviceAccountAdmin", "iam.serviceAccounts.create"),
    "google_service_account_iam_member": _grant("roles/iam.serviceAccountAdmin", "iam.serviceAccounts.setIamPolicy"),
    "google_project_iam_custom_role": _grant("roles/iam.roleAdmin", "iam.roles.create"),
    "google_project_iam_member": _grant("roles/resourcemanager.projectIamAdmin", "resourcemanager.projects.setIamPolicy"),
    # on the environment's buckets only: builder/cloud/iam.py conditions storage.admin on them
    "google_storage_bucket_iam_member": _grant("roles/storage.admin", "storage.buckets.setIamPolicy"),
}

#: Terraform's built-in resource types: no Google API, no role.
TERRAFORM_OWN: frozenset[str] = frozenset({"terraform_data", "null_resource"})


#: The child modules' types, as the roots that call them declare them (modules/host_identity,
#: modules/host_firewall, modules/ttl and modules/health, which declare the same types).
HOST_IDENTITY = ("google_service_account", "google_project_iam_member", "google_storage_bucket_iam_member")
HOST_FIREWALL = ("google_compute_firewall",)
SCHEDULED = ("google_cloud_scheduler_job", "google_service_account", "google_service_account_iam_member",
             "google_project_iam_member")


def grants(types: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """role → the resource types of ``types`` it is granted for, in first-seen order. KeyError on a
    type with no record (the test of the catalogue sees it first)."""
    out: dict[str, tuple[str, ...]] = {}
    for t in types:
        if t not in TERRAFORM_OWN:
            role = RESOURCE_GRANTS[t].role
            out[role] = (*out.get(role, ()), t)
    return out
