"""The builder service account, who the root build, every pipeline and the push triggers run as,
and the plan account, who the pull-request plan builds run as.

Since 2024 Cloud Build runs builds as the Compute Engine default service account (often Editor)
or the legacy Cloud Build account, depending on the organisation's settings; Google recommends a
user-specified, least-privilege account
(https://cloud.google.com/build/docs/securing-builds/configure-user-specified-service-accounts).
tpubuild therefore names one in every build (``serviceAccount``), with
``options.logging: CLOUD_LOGGING_ONLY`` (a user-specified account needs its logs in Cloud Logging
or a user bucket).

``tpubuild initialize`` (run from a workstation: the accounts must exist before any build uses them)

* creates ``tb-<ENV>-cb@<PROJECT>.iam.gserviceaccount.com`` when BUILD_SERVICE_ACCOUNT is empty
  (IAM ``GetServiceAccount``, then ``CreateServiceAccount`` only when absent), or checks that the
  account BUILD_SERVICE_ACCOUNT names exists (never creates it); and ``tb-<ENV>-pl``, the plan
  account (:data:`PLAN_ROLES`: it reads what a plan reads and writes only its plans);
* grants them on the project exactly their roles (:func:`accounts`), in one read-modify-write of
  the project's IAM policy with its etag, retried on a concurrent change; nothing is written when
  every binding is already there. The builder's roles are :data:`PIPELINE_ROLES` (what the
  pipelines do beyond Terraform) and, for each resource type the architecture's modules declare,
  the role that creates it (:func:`module_roles`, from the catalogue: builder/catalogue/modules.py
  ``resources``, builder/catalogue/permissions.py). Storage roles are conditioned on the
  environment's buckets or objects (IAM conditions on ``resource.name``:
  https://cloud.google.com/storage/docs/access-control/iam#conditions); the other roles act on
  resources whose names tpubuild does not know before Terraform creates them, or on services whose
  IAM conditions do not cover them, so they are granted unconditioned.

``initialize --check`` lists what is missing (:func:`missing`); ``dispatch`` tests the builder
account's own permissions before it locks anything (:func:`preflight`). docs/cloud.md's role tables
are rendered from :data:`ROLES` and :data:`PLAN_ROLES` (:func:`roles_markdown`; a test compares).
"""

from __future__ import annotations

from typing import Any

from builder.catalogue import modules, permissions
from builder.cloud import lock
from builder.cloud.errors import cloud_call
from builder.config import applied_objects
from builder.inputs.gitops import PLAN_FILES
from builder.facts.errors import WorldError
from builder.facts.records import record, replace


@record
class Role:
    role: str
    why: str
    #: the IAM condition it is granted under (:data:`SCOPES`): "" none, "buckets" the environment's
    #: buckets, "state" its state bucket, "reads" the applied snapshot's and the lock's objects in it,
    #: "plans" the plan builds' prefix in it
    scope: str = ""
    #: a Settings property that must be true for the role to be granted ("": always)
    only_with: str = ""
    #: the architectures it is granted for (empty: all)
    archs: tuple[str, ...] = ()


#: What the pipelines do beyond Terraform's resources (those come from the catalogue: :func:`module_roles`).
PIPELINE_ROLES: tuple[Role, ...] = (
    Role("roles/cloudbuild.builds.editor", "dispatch creates the pipeline build, follows it and lists the "
         "environment's running builds (the lock)"),
    Role("roles/storage.admin", "the state and dataset buckets: state, lock, snapshot, workspace and source "
         "objects; Cloud Build's source bucket for the root build", scope="buckets"),
    Role("roles/compute.instanceAdmin.v1", "the pipeline's own Compute Engine calls: the shared PD's snapshots, "
         "the seeder VM, the MIG's resize and drain"),
    Role("roles/compute.futureReservationUser", "the calendar-mode request of TPU_PROVISIONING=calendar "
         "(mig; docs/capacity.md)"),
    Role("roles/iam.serviceAccountUser", "attach the hosts' accounts to VMs and TPUs, and run the pipeline builds "
         "as this account"),
    Role("roles/logging.logWriter", "build logs (CLOUD_LOGGING_ONLY)"),
    Role("roles/cloudquotas.viewer", "the check-capacity step reads the TPU quota (Cloud Quotas)"),
    Role("roles/compute.networkViewer", "the check-capacity step reads the slice's subnetwork and its region's Cloud "
         "Routers (the hosts' egress preflight: Private Google Access, Cloud NAT; docs/cloud.md)"),
    Role("roles/iap.tunnelResourceAccessor", "only with TPU_RECOVERY (the health build relaunches training on the "
         "hosts, docs/recovery.md) or make-before-break with a MODEL (the update stops the training on the old slice "
         "and starts it on the new one, docs/pipeline.md): over IAP SSH, as `tpubuild train` does",
         only_with="reaches_hosts"),
    Role("roles/logging.viewer", "only with TPU_RECOVERY_MOVE: the health build reads its failed recreate's build log "
         "(`gcloud builds log`; the builds log to Cloud Logging only) for its zone's refusals, docs/recovery.md",
         only_with="recovery_move"),
)

#: The pull-request plan builds' account (``tb-<ENV>-pl``): it reads, and writes only its plans
#: (docs/cloud.md, "The trigger pair"). A plan reads the applied snapshot and the lock from the
#: state bucket, and, when the lock names a build that stopped half way, that build and its slice.
PLAN_ROLES: tuple[Role, ...] = (
    Role("roles/storage.bucketViewer", "the state bucket's metadata (plan checks it exists)", scope="state"),
    Role("roles/storage.objectViewer", "the applied snapshot and the lock (never the Terraform state)", scope="reads"),
    Role("roles/storage.objectCreator", f"the plan's artifacts ({', '.join(PLAN_FILES)}) under plans/<ENV>/",
         scope="plans"),
    Role("roles/logging.logWriter", "build logs (CLOUD_LOGGING_ONLY)"),
    Role("roles/cloudbuild.builds.viewer", "the build the lock names, when it stopped half way"),
    Role("roles/tpu.viewer", "that build's slice, as status reads it", archs=("vm", "node")),
    Role("roles/compute.viewer", "that build's slice (its MIG), as status reads it", archs=("mig",)),
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
    return _condition(settings, "buckets", "only the buckets of tpubuild environment {env}",
                      settings.state_bucket, settings.dataset_bucket, f"{settings.project_id}_cloudbuild")


def condition(settings: Any, scope: str) -> dict[str, str] | None:
    """The IAM condition of a role's ``scope`` (None: unconditioned)."""
    if scope == "buckets":
        return buckets_condition(settings)
    if scope == "state":
        return _condition(settings, "state", "only the state bucket of tpubuild environment {env}", settings.state_bucket)
    if scope == "reads":
        return _condition(settings, "reads", "only the applied snapshot and the lock of tpubuild environment {env}",
                          f"{settings.state_bucket}/objects/{applied_objects.values_object(settings.env_name)}",
                          f"{settings.state_bucket}/objects/{lock.path(settings.env_name)}")
    if scope == "plans":
        return _condition(settings, "plans", "only the plan builds' objects of tpubuild environment {env}",
                          f"{settings.state_bucket}/objects/plans/{settings.env_name}/")
    return None


def _condition(settings: Any, scope: str, description: str, *prefixes: str) -> dict[str, str]:
    """``resource.name`` starts with one of ``projects/_/buckets/<prefix>`` (IAM conditions on Cloud
    Storage: https://cloud.google.com/storage/docs/access-control/iam#conditions)."""
    expression = " || ".join(f'resource.name.startsWith("projects/_/buckets/{p}")' for p in prefixes)
    return {"title": f"tpubuild-{settings.env_name}-{scope}", "description": description.format(env=settings.env_name),
            "expression": expression}


def _granted(settings: Any, table: tuple[Role, ...]) -> list[tuple[str, dict[str, str] | None]]:
    return [(r.role, condition(settings, r.scope)) for r in table
            if (not r.only_with or getattr(settings, r.only_with)) and (not r.archs or settings.arch in r.archs)]


def wanted(settings: Any) -> list[tuple[str, dict[str, str] | None]]:
    """(role, condition or None) for every binding the builder account gets."""
    return _granted(settings, roles(settings.arch))


def plan_wanted(settings: Any) -> list[tuple[str, dict[str, str] | None]]:
    """(role, condition or None) for every binding the plan account gets."""
    return _granted(settings, PLAN_ROLES)


@record
class Account:
    """One account ``initialize`` makes and grants: ``account_id`` "" when values.env names it (checked,
    never created)."""

    email: str
    account_id: str
    display_name: str
    description: str
    bindings: list[tuple[str, dict[str, str] | None]]
    why: dict[str, str]


def accounts(settings: Any) -> tuple[Account, Account]:
    """The builder account and the pull-request plan account."""
    env = settings.env_name
    return (Account(settings.builder_service_account, settings.builder_service_account_id, f"tpubuild {env} builds",
                    f"Runs the Cloud Builds of tpubuild environment {env} (least privilege)", wanted(settings),
                    {r.role: r.why for r in roles(settings.arch)}),
            Account(settings.plan_service_account, settings.plan_service_account_id, f"tpubuild {env} plans",
                    f"Runs the pull-request plan builds of tpubuild environment {env} (read-only)",
                    plan_wanted(settings), {r.role: r.why for r in PLAN_ROLES}))


#: How the role tables show a scope.
SCOPES = {"buckets": "conditioned on the environment's buckets", "state": "conditioned on the state bucket",
          "reads": "conditioned on the snapshot's and the lock's objects",
          "plans": "conditioned on plans/<ENV>/ in the state bucket"}


def roles_markdown(table: tuple[Role, ...] = ROLES) -> str:
    """The table docs/cloud.md shows between its ``builder-roles`` (``plan-roles``: :data:`PLAN_ROLES`) markers."""
    rows = ["| role | why |", "|---|---|"]
    for r in table:
        cond = f" ({SCOPES[r.scope]})" if r.scope else ""
        archs = f" ({', '.join(r.archs)} only)" if r.archs else ""
        rows.append(f"| `{r.role}`{cond}{archs} | {r.why} |")
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------- the accounts

def account_exists(client: Any, settings: Any, email: str) -> bool:
    """Whether the service account ``email`` exists (IAM ``GetServiceAccount``)."""
    from google.api_core import exceptions as gexc
    from google.cloud import iam_admin_v1

    name = f"projects/{settings.project_id}/serviceAccounts/{email}"
    with cloud_call(f"reading service account {email}"):
        try:
            client.get_service_account(request=iam_admin_v1.GetServiceAccountRequest(name=name))
            return True
        except gexc.NotFound:
            return False


def ensure_account(client: Any, settings: Any, account: Account) -> str:
    """Create ``account`` when absent (or check a named one exists); one line."""
    from google.api_core import exceptions as gexc
    from google.cloud import iam_admin_v1

    email = account.email
    if account_exists(client, settings, email):
        return f"service account {email}: exists"
    if not account.account_id:
        raise WorldError(f"service account {email} (BUILD_SERVICE_ACCOUNT) does not exist in project "
                         f"{settings.project_id}; create it, or leave BUILD_SERVICE_ACCOUNT empty and "
                         "`tpubuild initialize` creates a dedicated one")
    body = iam_admin_v1.ServiceAccount(display_name=account.display_name, description=account.description)
    with cloud_call(f"creating service account {email}"):
        try:
            client.create_service_account(request=iam_admin_v1.CreateServiceAccountRequest(
                name=f"projects/{settings.project_id}", account_id=account.account_id, service_account=body))
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
        match = next((b for b in policy.bindings if b.role == role and _expression(b) == _text(condition)), None)
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


def _expression(binding: Any) -> str:
    return binding.condition.expression if binding.HasField("condition") else ""


def _text(condition: dict[str, str] | None) -> str:
    return condition["expression"] if condition else ""


def _read_policy(client: Any, settings: Any) -> Any:
    from google.iam.v1 import iam_policy_pb2, options_pb2

    with cloud_call(f"reading the IAM policy of project {settings.project_id}"):
        return client.get_iam_policy(request=iam_policy_pb2.GetIamPolicyRequest(
            resource=f"projects/{settings.project_id}", options=options_pb2.GetPolicyOptions(requested_policy_version=3)))


def missing(client: Any, settings: Any) -> list[str]:
    """One line per binding of :func:`accounts` that the project's policy lacks (``initialize
    --check``): a real project refuses the call that needs it."""
    policy = _read_policy(client, settings)
    lines = []
    for account in accounts(settings):
        member = f"serviceAccount:{account.email}"
        for role, condition in account.bindings:
            if not any(b.role == role and member in b.members and _expression(b) == _text(condition)
                       for b in policy.bindings):
                scoped = f" ({condition['description']})" if condition else ""
                lines.append(f"project {settings.project_id}: {account.email} lacks {role}{scoped}: "
                             f"{account.why[role]}; run `tpubuild initialize`")
    return lines


def grant(client: Any, settings: Any, *, attempts: int = 5) -> list[str]:
    """Grant each of :func:`accounts` its roles on the project, in one read-modify-write; a line each."""
    from google.api_core import exceptions as gexc
    from google.iam.v1 import iam_policy_pb2

    resource = f"projects/{settings.project_id}"
    for _attempt in range(attempts):
        policy = _read_policy(client, settings)
        added = [(a, add_bindings(policy, f"serviceAccount:{a.email}", a.bindings)) for a in accounts(settings)]
        if any(n for _, n in added):
            with cloud_call(f"writing the IAM policy of project {settings.project_id}"):
                try:
                    client.set_iam_policy(request=iam_policy_pb2.SetIamPolicyRequest(resource=resource, policy=policy))
                except (gexc.Aborted, gexc.Conflict):
                    continue  # someone changed the policy since we read it (etag): read it again
        return [f"project {settings.project_id}: granted {a.email} {n} of its {len(a.bindings)} roles "
                f"({len(a.bindings) - n} were there)" if n else
                f"project {settings.project_id}: {a.email} has its {len(a.bindings)} roles" for a, n in added]
    raise WorldError(f"project {settings.project_id}: the IAM policy kept changing while granting "
                     f"{settings.builder_service_account} its roles; run `tpubuild initialize` again")


def preflight(client: Any, settings: Any) -> str:
    """In the root build (``dispatch``, which runs as the builder account): refuse, before anything is
    locked or billed, when the account lacks a permission the environment's modules create with
    (Resource Manager ``testIamPermissions``: the caller's own permissions, granted by any role,
    custom ones included). An environment made before a module needed a new role gets one line that
    says which, instead of a refusal at that module's apply. Storage permissions are left out: they
    are conditioned on the buckets, which a project-level test cannot see. Returns a warning when the
    project would not answer the question (nothing is refused then)."""
    from google.api_core import exceptions as gexc
    from google.iam.v1 import iam_policy_pb2

    needs = {g.permission: g.role for spec in modules.specs(settings.arch) for t in spec.resources
             if t not in permissions.TERRAFORM_OWN
             for g in [permissions.RESOURCE_GRANTS[t]] if not g.permission.startswith("storage.")}
    with cloud_call(f"testing the permissions of {settings.builder_service_account} in project {settings.project_id}"):
        try:
            held = client.test_iam_permissions(request=iam_policy_pb2.TestIamPermissionsRequest(
                resource=f"projects/{settings.project_id}", permissions=sorted(needs))).permissions
        except gexc.InvalidArgument as exc:
            return f"could not test the builder account's permissions ({exc.message}); going on"
    lacking = sorted(set(needs) - set(held))
    if lacking:
        raise WorldError(f"project {settings.project_id}: {settings.builder_service_account} lacks "
                         + ", ".join(f"{p} ({needs[p]})" for p in lacking)
                         + "; the pipeline would be refused at the step that needs it. Run `tpubuild initialize` "
                           "from a workstation (it grants the roles; `tpubuild initialize --check` lists them)")
    return ""
