"""The builder service account: who the root build, every pipeline and the trigger run as.

Since 2024 Cloud Build runs builds as the Compute Engine default service account (often Editor)
or the legacy Cloud Build account, depending on the organisation's settings; Google recommends a
user-specified, least-privilege account
(https://cloud.google.com/build/docs/securing-builds/configure-user-specified-service-accounts).
tpubuild therefore names one in every build (``serviceAccount``), with
``options.logging: CLOUD_LOGGING_ONLY`` (a user-specified account needs its logs in Cloud Logging
or a user bucket).

``tpubuild initialize`` (run from a workstation: the account must exist before any build uses it)

* creates ``tb-<ENV>-cb@<PROJECT>.iam.gserviceaccount.com`` when BUILD_SERVICE_ACCOUNT is empty
  (IAM ``GetServiceAccount``, then ``CreateServiceAccount`` only when absent), or checks that the
  account BUILD_SERVICE_ACCOUNT names exists (never creates it);
* grants it on the project exactly the roles of :data:`ROLES` (read-modify-write of the
  project's IAM policy with its etag, retried on a concurrent change; nothing is written when
  every binding is already there). ``roles/storage.admin`` is conditioned on the environment's
  buckets and Cloud Build's source bucket (IAM conditions on ``resource.name``:
  https://cloud.google.com/storage/docs/access-control/iam#conditions); the other roles act on
  resources whose names tpubuild does not know before Terraform creates them, or on services
  whose IAM conditions do not cover them, so they are granted unconditioned.

README.md's role list is rendered from :data:`ROLES` (:func:`roles_markdown`; a test compares).
"""

from __future__ import annotations

from typing import Any

from builder.catalogue import modules, permissions
from builder.cloud.errors import cloud_call
from builder.facts.errors import WorldError
from builder.facts.records import record, replace


@record
class Role:
    role: str
    why: str
    conditioned: bool = False
    #: a Settings property that must be true for the role to be granted ("": always)
    only_with: str = ""


#: What the pipelines do beyond Terraform's resources (those come from the catalogue: :func:`module_roles`).
PIPELINE_ROLES: tuple[Role, ...] = (
    Role("roles/cloudbuild.builds.editor", "dispatch creates the pipeline build, follows it and lists the "
         "environment's running builds (the lock)"),
    Role("roles/storage.admin", "the state and dataset buckets: state, lock, snapshot, workspace and source "
         "objects; Cloud Build's source bucket for the root build", conditioned=True),
    Role("roles/compute.instanceAdmin.v1", "the pipeline's own Compute Engine calls: the shared PD's snapshots, "
         "the seeder VM, the MIG's resize and drain"),
    Role("roles/compute.futureReservationUser", "the calendar-mode request of TPU_PROVISIONING=calendar "
         "(mig; docs/capacity.md)"),
    Role("roles/iam.serviceAccountUser", "attach the hosts' accounts to VMs and TPUs, and run the pipeline builds "
         "as this account"),
    Role("roles/logging.logWriter", "build logs (CLOUD_LOGGING_ONLY)"),
    Role("roles/cloudquotas.viewer", "the check-capacity step reads the TPU quota (Cloud Quotas)"),
    Role("roles/iap.tunnelResourceAccessor", "only with TPU_RECOVERY (the health build relaunches training on the "
         "hosts, docs/recovery.md) or make-before-break with a MODEL (the update stops the training on the old slice "
         "and starts it on the new one, docs/pipeline.md): over IAP SSH, as `tpubuild train` does",
         only_with="reaches_hosts"),
)


def module_roles(arch: str = "") -> dict[str, str]:
    """role → why, for the Terraform resource types the modules of ``arch`` (every module: "")
    declare (builder/catalogue/modules.py ``resources``, builder/catalogue/permissions.py)."""
    found: dict[str, dict[str, list[str]]] = {}
    for spec in modules.specs(arch) if arch else modules.CATALOGUE:
        for role, types in permissions.grants(spec.resources).items():
            for t in types:
                found.setdefault(role, {}).setdefault(t, []).append(spec.tfdir.removeprefix("modules/"))
    return {role: "Terraform: " + ", ".join(f"{t} ({', '.join(dict.fromkeys(dirs))})" for t, dirs in uses.items())
            for role, uses in found.items()}


def roles(arch: str = "") -> tuple[Role, ...]:
    """Every role the builder account of an ``arch`` environment may get (every architecture's:
    ""), once each: the pipeline's and its modules' (a role in both keeps the pipeline's condition
    and both reasons)."""
    by_role = {r.role: r for r in PIPELINE_ROLES}
    for role, why in module_roles(arch).items():
        mine = by_role.get(role)
        by_role[role] = replace(mine, why=f"{mine.why}; {why}") if mine else Role(role, why)
    return tuple(by_role.values())


#: Every role of every architecture (the table docs/cloud.md shows).
ROLES: tuple[Role, ...] = roles()


def buckets_condition(settings: Any) -> dict[str, str]:
    """The IAM condition of the conditioned roles: the environment's buckets and objects, and
    Cloud Build's default source bucket (``<PROJECT>_cloudbuild``) that the root build reads."""
    names = (settings.state_bucket, settings.dataset_bucket, f"{settings.project_id}_cloudbuild")
    expression = " || ".join(f'resource.name.startsWith("projects/_/buckets/{b}")' for b in names)
    return {"title": f"tpubuild-{settings.env_name}-buckets",
            "description": f"only the buckets of tpubuild environment {settings.env_name}",
            "expression": expression}


def wanted(settings: Any) -> list[tuple[str, dict[str, str] | None]]:
    """(role, condition or None) for every binding the builder account gets."""
    return [(r.role, buckets_condition(settings) if r.conditioned else None) for r in roles(settings.arch)
            if not r.only_with or getattr(settings, r.only_with)]


def roles_markdown() -> str:
    """The table README.md and docs/cloud.md show between their ``builder-roles`` markers."""
    rows = ["| role | why |", "|---|---|"]
    for r in ROLES:
        cond = " (conditioned on the environment's buckets)" if r.conditioned else ""
        rows.append(f"| `{r.role}`{cond} | {r.why} |")
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------- the account

def account_exists(client: Any, settings: Any) -> bool:
    """Whether the builder account exists (IAM ``GetServiceAccount``)."""
    from google.api_core import exceptions as gexc
    from google.cloud import iam_admin_v1

    email = settings.builder_service_account
    name = f"projects/{settings.project_id}/serviceAccounts/{email}"
    with cloud_call(f"reading service account {email}"):
        try:
            client.get_service_account(request=iam_admin_v1.GetServiceAccountRequest(name=name))
            return True
        except gexc.NotFound:
            return False


def ensure_account(client: Any, settings: Any) -> str:
    """Create the dedicated account when absent (or check the named one exists); one line."""
    from google.api_core import exceptions as gexc
    from google.cloud import iam_admin_v1

    email = settings.builder_service_account
    if account_exists(client, settings):
        return f"service account {email}: exists"
    if settings.build_service_account:
        raise WorldError(f"service account {email} (BUILD_SERVICE_ACCOUNT) does not exist in project "
                         f"{settings.project_id}; create it, or leave BUILD_SERVICE_ACCOUNT empty and "
                         "`tpubuild initialize` creates a dedicated one")
    account = iam_admin_v1.ServiceAccount(
        display_name=f"tpubuild {settings.env_name} builds",
        description=f"Runs the Cloud Builds of tpubuild environment {settings.env_name} (least privilege)")
    with cloud_call(f"creating service account {email}"):
        try:
            client.create_service_account(request=iam_admin_v1.CreateServiceAccountRequest(
                name=f"projects/{settings.project_id}", account_id=settings.builder_service_account_id,
                service_account=account))
        except gexc.AlreadyExists:
            return f"service account {email}: exists"
    return f"service account {email}: created"


# ---------------------------------------------------------------- the project's IAM policy

def add_bindings(policy: Any, member: str, bindings: list[tuple[str, dict[str, str] | None]]) -> int:
    """Add ``member`` to each (role, condition) binding of the ``google.iam.v1.Policy`` protobuf;
    the number of bindings that changed. Conditions need policy version 3."""
    from google.type import expr_pb2

    added = 0
    for role, condition in bindings:
        expression = condition["expression"] if condition else ""
        match = next((b for b in policy.bindings
                      if b.role == role and (b.condition.expression if b.HasField("condition") else "") == expression),
                     None)
        if match is None:
            match = policy.bindings.add(role=role)
            if condition:
                match.condition.CopyFrom(expr_pb2.Expr(**condition))
        if member not in match.members:
            match.members.append(member)
            added += 1
    if any(b.HasField("condition") for b in policy.bindings):
        policy.version = 3
    return added


def _read_policy(client: Any, settings: Any) -> Any:
    from google.iam.v1 import iam_policy_pb2, options_pb2

    with cloud_call(f"reading the IAM policy of project {settings.project_id}"):
        return client.get_iam_policy(request=iam_policy_pb2.GetIamPolicyRequest(
            resource=f"projects/{settings.project_id}", options=options_pb2.GetPolicyOptions(requested_policy_version=3)))


def missing(client: Any, settings: Any) -> list[str]:
    """One line per binding :func:`wanted` that the project's policy lacks (``initialize --check``):
    a real project refuses the apply that needs it."""
    policy = _read_policy(client, settings)
    member = f"serviceAccount:{settings.builder_service_account}"
    why = {r.role: r.why for r in roles(settings.arch)}
    lacking = [(role, condition) for role, condition in wanted(settings)
               if not _has(policy, member, role, condition)]
    return [f"project {settings.project_id}: {settings.builder_service_account} lacks {role}"
            f"{' (on the environment buckets)' if condition else ''}: {why[role]}; run `tpubuild initialize`"
            for role, condition in lacking]


def _has(policy: Any, member: str, role: str, condition: dict[str, str] | None) -> bool:
    expression = condition["expression"] if condition else ""
    return any(b.role == role and member in b.members
               and (b.condition.expression if b.HasField("condition") else "") == expression for b in policy.bindings)


def grant(client: Any, settings: Any, *, attempts: int = 5) -> str:
    """Grant the builder account :data:`ROLES` on the project; one line."""
    from google.api_core import exceptions as gexc
    from google.iam.v1 import iam_policy_pb2

    resource = f"projects/{settings.project_id}"
    member = f"serviceAccount:{settings.builder_service_account}"
    for _attempt in range(attempts):
        policy = _read_policy(client, settings)
        bindings = wanted(settings)
        added = add_bindings(policy, member, bindings)
        if not added:
            return f"project {settings.project_id}: {settings.builder_service_account} has its {len(bindings)} roles"
        with cloud_call(f"writing the IAM policy of project {settings.project_id}"):
            try:
                client.set_iam_policy(request=iam_policy_pb2.SetIamPolicyRequest(resource=resource, policy=policy))
            except (gexc.Aborted, gexc.Conflict):
                continue  # someone changed the policy since we read it (etag): read it again
        return (f"project {settings.project_id}: granted {settings.builder_service_account} {added} of its "
                f"{len(bindings)} roles ({len(bindings) - added} were there)")
    raise WorldError(f"project {settings.project_id}: the IAM policy kept changing while granting "
                     f"{settings.builder_service_account} its roles; run `tpubuild initialize` again")
