"""Permissions from one record: every Terraform resource type a module declares (read from its .tf
files, its child modules' included) is named by its catalogue entry and has a role that creates it
(builder/catalogue/permissions.py); the builder account's roles (builder/cloud/iam.py) are their
union for the environment's architecture, and the roles Google's role reference lists hold the
permission each create checks (tests/support/fakes/iam_roles.py, the IAM fake's table)."""

from __future__ import annotations

import pytest

from builder.catalogue import modules as M
from builder.catalogue.permissions import RESOURCE_GRANTS, TERRAFORM_OWN, grants
from tests.support.fakes.iam_roles import ROLE_PERMISSIONS, holds
from tests.support.hcl import effective_resources, load_module


def declared(tfdir: str) -> set[str]:
    """The resource types Terraform would create from ``tfdir`` and the child modules it calls."""
    return {t for t, _ in effective_resources(load_module(tfdir.removeprefix("modules/")))}


@pytest.mark.parametrize("spec", M.CATALOGUE, ids=lambda s: f"{s.name}@{s.tfdir}")
def test_each_entry_names_the_types_its_terraform_declares(spec: M.ModuleSpec) -> None:
    types = declared(spec.tfdir) - TERRAFORM_OWN
    if spec.destroy_only:  # its .tf declares nothing Google's; its state holds what the entry names
        assert not types and spec.resources, spec
    else:
        assert types == set(spec.resources), \
            f"{spec.tfdir} declares {sorted(types)}; the catalogue entry's resources say {sorted(set(spec.resources))}"


@pytest.mark.parametrize("spec", M.CATALOGUE, ids=lambda s: f"{s.name}@{s.tfdir}")
def test_every_declared_type_has_a_role_that_holds_its_create_permission(spec: M.ModuleSpec) -> None:
    for t in sorted((declared(spec.tfdir) | set(spec.resources)) - TERRAFORM_OWN):
        assert t in RESOURCE_GRANTS, f"{spec.tfdir}: {t} has no role in builder/catalogue/permissions.py"
        grant = RESOURCE_GRANTS[t]
        assert grant.role in ROLE_PERMISSIONS, f"{grant.role}: not in the IAM fake's table (Google's role reference)"
        assert holds(grant.role, grant.permission), f"{t}: {grant.role} does not hold {grant.permission}"


def test_no_record_for_a_type_no_module_declares() -> None:
    used = {t for s in M.CATALOGUE for t in s.resources}
    assert set(RESOURCE_GRANTS) == used, sorted(set(RESOURCE_GRANTS) ^ used)


@pytest.mark.parametrize("arch", M.ARCHS)
def test_the_builder_account_gets_the_union_of_its_architectures_modules(arch: str) -> None:
    from builder.cloud.iam import module_roles

    union = {role for s in M.specs(arch) for role in grants(s.resources)}
    assert set(module_roles(arch)) == union
    if arch in ("vm", "mig"):  # the gaps a real project refused: the dashboard, its metric, the Scheduler jobs
        assert {"roles/monitoring.dashboardEditor", "roles/logging.configWriter",
                "roles/cloudscheduler.admin"} <= union


def test_a_missing_role_is_refused_with_googles_message() -> None:
    from tests.support.fakes.iam_roles import refusal

    policy = {"bindings": [{"role": "roles/logging.configWriter", "members": ["serviceAccount:b@p.iam.gserviceaccount.com"]}]}
    member = "serviceAccount:b@p.iam.gserviceaccount.com"
    assert refusal(policy, member, "logging.logMetrics.create", "projects/p") is None
    denied = refusal(policy, member, "monitoring.dashboards.create", "projects/p")
    assert denied == (403, "Permission 'monitoring.dashboards.create' denied on resource 'projects/p' "
                           "(or it may not exist).")
