"""A fresh project, as the fakes play it with Google's refusals: after `initialize`'s grant (the real
google-cloud-resource-manager client against FakeGoogle), the builder account holds, for every
example, a role with the permission each of its modules' resource types' create checks; the fake
refuses what a missing role leaves out, as a real project does, and `initialize --check` names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, NODE, SHIPPED
from tests.support.fakes.fixtures import Fakes, fakes, repo  # noqa: F401 - fixtures


def _resource(settings, permission: str) -> str:
    """Where a create checks ``permission``: a bucket's IAM policy on the bucket, the rest on the project."""
    if permission.startswith("storage."):
        return f"projects/_/buckets/{settings.dataset_bucket}"
    return f"projects/{settings.project_id}"


@pytest.mark.parametrize("values", [SHIPPED, NODE, *sorted(EXAMPLES.glob("*.env"))], ids=lambda p: p.name)
def test_every_module_type_of_every_example_is_granted(fakes: Fakes, values: Path) -> None:
    from builder.catalogue.modules import specs
    from builder.catalogue.permissions import RESOURCE_GRANTS, TERRAFORM_OWN
    from builder.cloud import clients, iam
    from builder.config import load

    s = load(values)
    fakes.google.caller = f"serviceAccount:{s.builder_service_account}"
    assert fakes.google.refusal(s.project_id, "monitoring.dashboards.create")  # a fresh project refuses
    fakes.google.caller = ""
    iam.grant(clients.projects(), s)  # initialize's grant
    fakes.google.caller = f"serviceAccount:{s.builder_service_account}"
    refused = [(spec.tfdir, t, fakes.google.refusal(s.project_id, RESOURCE_GRANTS[t].permission,
                                                    _resource(s, RESOURCE_GRANTS[t].permission)))
               for spec in specs(s.arch) for t in spec.resources if t not in TERRAFORM_OWN]
    assert [r for r in refused if r[2]] == []
    assert len(refused) >= 3


def test_check_names_each_missing_role_and_the_fake_refuses_it(fakes: Fakes, repo: Path, cli) -> None:
    from google.cloud.devtools import cloudbuild_v1

    from builder.cloud import builds, clients
    from builder.config import load
    from builder.facts.errors import WorldError

    s = load(repo)
    member = f"serviceAccount:{s.builder_service_account}"
    code, out, err = cli("--values", repo, "initialize", "--check")
    assert code == 1 and err.strip().splitlines() == [
        f"tpubuild: service account {email} does not exist in project {s.project_id}; run `tpubuild initialize`"
        for email in (s.builder_service_account, s.plan_service_account)]
    assert cli("--values", repo, "initialize")[0] == 0
    code, out, err = cli("--values", repo, "initialize", "--check")
    assert code == 0 and "has its" in out, err

    # someone removes two roles by hand: --check names each, one line, and a real project refuses
    policy = fakes.google.policies[s.project_id]
    for b in policy["bindings"]:
        if b["role"] in ("roles/monitoring.dashboardEditor", "roles/cloudbuild.builds.editor"):
            b["members"].remove(member)
    code, out, err = cli("--values", repo, "initialize", "--check")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 2, err
    assert "lacks roles/cloudbuild.builds.editor: dispatch creates the pipeline build" in lines[0]
    assert "lacks roles/monitoring.dashboardEditor: Terraform: google_monitoring_dashboard (dashboard)" in lines[1]
    assert all(line.endswith("run `tpubuild initialize`") for line in lines)
    fakes.google.caller = member
    assert fakes.google.refusal(s.project_id, "monitoring.dashboards.create") == (
        403, f"Permission 'monitoring.dashboards.create' denied on resource 'projects/{s.project_id}' "
             "(or it may not exist).")
    # the real Cloud Build client, as the root build's dispatch step calls it, is refused
    with pytest.raises(WorldError, match="cloudbuild.builds.create' denied"):
        builds.create(clients.cloudbuild(), s.project_id, cloudbuild_v1.Build(steps=[{"name": "bash"}]))
    fakes.google.caller = ""
    assert cli("--values", repo, "initialize")[0] == 0
    fakes.google.caller = member
    assert builds.create(clients.cloudbuild(), s.project_id, cloudbuild_v1.Build(steps=[{"name": "bash"}])).id


def test_the_plan_account_reads_and_writes_only_its_plans(fakes: Fakes, repo: Path, cli) -> None:
    """`initialize` makes the pull-request plan account by default; the IAM fake, playing the
    project, lets it read the state bucket, create under plans/<ENV>/ and log, and refuses it
    every write a module or the pipeline makes, the state and the lock included."""
    from builder.catalogue.permissions import RESOURCE_GRANTS
    from builder.cloud.iam import plan_wanted
    from builder.config import load

    s = load(repo)
    assert cli("--values", repo, "initialize")[0] == 0
    assert s.plan_service_account == f"tb-{s.env_name}-pl@{s.project_id}.iam.gserviceaccount.com"
    assert s.plan_service_account in fakes.iam.accounts
    assert fakes.iam.accounts[s.plan_service_account].display_name == f"tpubuild {s.env_name} plans"
    bound = {(b["role"], (b.get("condition") or {}).get("expression", ""))
             for b in fakes.google.policies[s.project_id]["bindings"]
             if f"serviceAccount:{s.plan_service_account}" in b["members"]}
    assert bound == {(role, c["expression"] if c else "") for role, c in plan_wanted(s)}
    fakes.google.caller = f"serviceAccount:{s.plan_service_account}"
    state = f"projects/_/buckets/{s.state_bucket}"
    refusal = fakes.google.refusal
    assert refusal(s.project_id, "storage.buckets.get", state) is None
    assert refusal(s.project_id, "storage.objects.get", f"{state}/objects/workspace/{s.env_name}/applied/values.env") is None
    assert refusal(s.project_id, "storage.objects.get", f"{state}/objects/workspace/{s.env_name}/lock.json") is None
    assert refusal(s.project_id, "storage.objects.create", f"{state}/objects/plans/{s.env_name}/b1/plan.json") is None
    assert refusal(s.project_id, "logging.logEntries.create") is None
    # what it cannot do: write the state or the lock, read the dataset, create a build, anything a module makes
    for permission, resource in (("storage.objects.create", f"{state}/objects/{s.env_name}/tpu/default.tflock"),
                                 ("storage.objects.delete", f"{state}/objects/{s.env_name}/tpu/default.tfstate"),
                                 ("storage.objects.get", f"{state}/objects/{s.env_name}/tpu/default.tfstate"),
                                 ("storage.objects.create", f"{state}/objects/workspace/{s.env_name}/lock.json"),
                                 ("storage.objects.create", f"{state}/objects/plans/other-env/b1/plan.json"),
                                 ("storage.objects.get", f"projects/_/buckets/{s.dataset_bucket}/objects/x"),
                                 ("cloudbuild.builds.create", ""), ("iam.serviceAccounts.actAs", ""),
                                 *((g.permission, "") for g in RESOURCE_GRANTS.values())):
        assert refusal(s.project_id, permission, resource), (permission, resource)
    # the account cannot even read the project's policy, so --check runs as the user (no caller)
    code, out, err = cli("--values", repo, "initialize", "--check")
    assert code == 1 and "Permission 'resourcemanager.projects.getIamPolicy' denied" in err
    fakes.google.caller = ""
    code, out, err = cli("--values", repo, "initialize", "--check")
    assert code == 0 and f"{s.plan_service_account} has its {len(plan_wanted(s))} roles" in out, err


def test_dispatch_refuses_before_the_lock_when_the_builder_lacks_a_role(fakes: Fakes, repo: Path, cli) -> None:
    """The root build runs dispatch as the builder account: an environment initialized before its
    modules needed a role (the dashboard's) is refused at once, one line naming the permission and
    the role, with nothing locked and no pipeline created; after `initialize` it dispatches."""
    from builder.cloud import lock
    from builder.config import load

    s = load(repo)
    assert cli("--values", repo, "initialize")[0] == 0
    member = f"serviceAccount:{s.builder_service_account}"
    for b in fakes.google.policies[s.project_id]["bindings"]:
        if b["role"] == "roles/monitoring.dashboardEditor":
            b["members"].remove(member)
    fakes.google.caller = member
    created = len(fakes.google.created)
    code, out, err = cli("--values", repo, "dispatch", "--action", "create")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "lacks monitoring.dashboards.create (roles/monitoring.dashboardEditor)" in err
    assert "Run `tpubuild initialize`" in err
    assert len(fakes.google.created) == created
    assert lock.read(fakes.storage().bucket(s.state_bucket), s.env_name) is None
    fakes.google.caller = ""
    assert cli("--values", repo, "initialize")[0] == 0
    fakes.google.caller = member
    code, out, err = cli("--values", repo, "dispatch", "--action", "create")
    assert "lacks" not in err and len(fakes.google.created) == created + 1, err
