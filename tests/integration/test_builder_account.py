"""Builds run as our own account: `initialize` creates the builder service account
with the real google-cloud-iam client (gRPC, against tests/support/fakes/gcp.py FakeIam) and grants its
roles with the real google-cloud-resource-manager client (REST, against FakeGoogle's
getIamPolicy/setIamPolicy with etags); every build config names it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.support.fakes.fixtures import Fakes, fakes, make_repo, repo, unique_env  # noqa: F401 - fixtures


def _policy(fakes: Fakes, project: str):
    from google.iam.v1 import policy_pb2
    from google.protobuf import json_format

    return json_format.ParseDict(fakes.google.policies[project], policy_pb2.Policy(), ignore_unknown_fields=True)


def _granted(policy, member: str) -> dict[str, str]:
    return {b.role: b.condition.expression for b in policy.bindings if member in b.members}


def test_initialize_creates_the_account_and_grants_exactly_the_roles(fakes: Fakes, repo: Path, cli) -> None:
    from builder.cloud.iam import buckets_condition, wanted
    from builder.config import load

    s = load(repo)
    ROLES = wanted(s)  # noqa: N806 - the roles these values get (TPU_RECOVERY adds one)
    # the shipped values move roberta under make-before-break: the update logs in to the hosts
    assert not s.recovery and s.reaches_hosts and "roles/iap.tunnelResourceAccessor" in dict(ROLES)
    email = f"tb-{s.env_name}-cb@{s.project_id}.iam.gserviceaccount.com"
    fakes.google.policies[s.project_id] = {"version": 1, "etag": "QUJD", "bindings": [
        {"role": "roles/owner", "members": ["user:alice@example.com"]},
        {"role": "roles/storage.admin", "members": ["user:bob@example.com"]}]}
    code, out, err = cli("--values", repo, "initialize")
    assert code == 0, err
    assert f"service account {email}: created" in out
    assert f"granted {email} {len(ROLES)} of its {len(ROLES)} roles" in out
    assert fakes.iam.calls[:2] == [("GetServiceAccount", f"projects/{s.project_id}/serviceAccounts/{email}"),
                                   ("CreateServiceAccount", f"tb-{s.env_name}-cb")]
    assert fakes.iam.accounts[email].display_name == f"tpubuild {s.env_name} builds"
    policy = _policy(fakes, s.project_id)
    granted = _granted(policy, f"serviceAccount:{email}")
    assert sorted(granted) == sorted(role for role, _ in ROLES)
    condition = buckets_condition(s)["expression"]
    assert granted["roles/storage.admin"] == condition
    assert {r: c for r, c in granted.items() if c} == {"roles/storage.admin": condition}
    for bucket in (s.state_bucket, s.dataset_bucket, f"{s.project_id}_cloudbuild"):
        assert f'resource.name.startsWith("projects/_/buckets/{bucket}")' in condition
    assert policy.version == 3
    # what was there stays: the owner, and bob's unconditioned storage.admin (a separate binding)
    assert _granted(policy, "user:alice@example.com") == {"roles/owner": ""}
    assert _granted(policy, "user:bob@example.com") == {"roles/storage.admin": ""}
    writes = len(fakes.google.policy_writes)
    assert writes == 1  # both accounts' roles in one read-modify-write

    # idempotent: the account exists, every binding is there: no create, no policy write
    code, out, err = cli("--values", repo, "initialize")
    assert code == 0, err
    assert f"service account {email}: exists" in out and f"has its {len(ROLES)} roles" in out
    assert fakes.iam.calls.count(("CreateServiceAccount", f"tb-{s.env_name}-cb")) == 1
    assert len(fakes.google.policy_writes) == writes


def test_a_concurrent_policy_change_is_read_again(fakes: Fakes, repo: Path, cli) -> None:
    from builder.config import load

    s = load(repo)
    fakes.google.policy_conflicts = 2
    code, out, err = cli("--values", repo, "initialize")
    assert code == 0, err
    assert len(fakes.google.policy_writes) == 1 and fakes.google.policy_conflicts == 0
    fakes.google.policy_conflicts = 10
    fakes.google.policies[s.project_id]["bindings"] = []
    code, out, err = cli("--values", repo, "initialize")
    assert code == 1 and "the IAM policy kept changing" in err and len(err.strip().splitlines()) == 1


def test_a_named_account_is_used_never_created(fakes: Fakes, tmp_path: Path, monkeypatch, cli) -> None:
    from google.cloud import iam_admin_v1

    from builder.cloud.iam import roles as iam_roles, wanted
    from builder.config import load

    env = unique_env()
    named = "ci-builder@my-tpu-project.iam.gserviceaccount.com"
    values = make_repo(tmp_path / "repo", env, BUILD_SERVICE_ACCOUNT=named)
    monkeypatch.chdir(values.parent)
    code, out, err = cli("--values", values, "initialize")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert f"service account {named} (BUILD_SERVICE_ACCOUNT) does not exist" in err
    assert "CreateServiceAccount" not in [c for c, _ in fakes.iam.calls]
    fakes.iam.accounts[named] = iam_admin_v1.ServiceAccount(email=named)
    code, out, err = cli("--values", values, "initialize")
    assert code == 0, err
    assert f"service account {named}: exists" in out
    roles = sorted(role for role, _ in wanted(load(values)))
    assert sorted(_granted(_policy(fakes, "my-tpu-project"), f"serviceAccount:{named}")) == roles
    s = load(values)
    assert set(roles) == {r.role for r in iam_roles(s.arch) if not r.only_with or getattr(s, r.only_with)}


def test_recovery_adds_the_iap_tunnel_role_only_where_it_is_on() -> None:
    """The health build relaunches training over IAP SSH: TPU_RECOVERY's values get
    roles/iap.tunnelResourceAccessor; so do make-before-break values with a MODEL (the update
    moves the training); the others do not."""
    from builder.cloud.iam import wanted
    from builder.config import load
    from tests.conftest import EXAMPLES

    for path, on in ((EXAMPLES / "vm-v5litepod-16.env", True), (EXAMPLES / "mig-v6e-16-spot.env", True),
                     (EXAMPLES / "vm-v4-32.env", False)):
        s = load(path)
        assert s.recovery == on and ("roles/iap.tunnelResourceAccessor" in dict(wanted(s))) == s.reaches_hosts
    # the update's move of the training needs it too: make-before-break with a MODEL, and only then
    from tests.conftest import SHIPPED, rewrite_env
    from builder.config import load_text

    for overrides, on in (({}, True), ({"MODEL": ""}, False), ({"TPU_REPLACE": "break-before-make"}, False)):
        s = load_text(rewrite_env(SHIPPED.read_text(), **overrides), SHIPPED)
        assert not s.recovery and ("roles/iap.tunnelResourceAccessor" in dict(wanted(s))) == on, overrides


@pytest.mark.parametrize("value, fragment", [
    ("123456-compute@developer.gserviceaccount.com", "default Google-managed account"),
    ("123456@cloudbuild.gserviceaccount.com", "default Google-managed account"),
    ("builder", "not a service account email"),
    ("Builder@my-tpu-project.iam.gserviceaccount.com", "not a service account email"),
])
def test_bad_build_service_account_is_exit_2(cli, make_env, value: str, fragment: str) -> None:
    from tests.conftest import SHIPPED

    path = make_env(SHIPPED, BUILD_SERVICE_ACCOUNT=value)
    code, out, err = cli("validate", "--values", path)
    assert code == 2 and "BUILD_SERVICE_ACCOUNT:" in err and fragment in err and len(err.splitlines()) == 1


# ---------------------------------------------------------------- every build config names it

def _settings(**overrides):
    from builder.config import load_text
    from tests.conftest import SHIPPED, rewrite_env

    return load_text(rewrite_env(SHIPPED.read_text(), **overrides), REPO / "values.env")


@pytest.mark.parametrize("named", ["", "ci-builder@my-tpu-project.iam.gserviceaccount.com"])
def test_every_generated_pipeline_names_the_account(named: str) -> None:
    from google.cloud.devtools import cloudbuild_v1

    from builder.render.pipeline import render
    from builder.planning.plan import make_plan

    s = _settings(BUILD_SERVICE_ACCOUNT=named)
    email = named or f"tb-{s.env_name}-cb@{s.project_id}.iam.gserviceaccount.com"
    rendered = 0
    for action in ("create", "update", "destroy"):
        for tpu, mig in ((False, False), (True, False)):
            if action == "create" and tpu:
                continue  # create applies everything; a scope is refused
            config = render(s, make_plan(s, action, tpu=tpu, mig=mig))
            build = cloudbuild_v1.Build.from_json(json.dumps(config))
            assert build.service_account == f"projects/{s.project_id}/serviceAccounts/{email}"
            assert build.options.logging == cloudbuild_v1.BuildOptions.LoggingMode.CLOUD_LOGGING_ONLY
            rendered += 1
    assert rendered == 5  # create takes no scope


def test_root_cloudbuild_and_trigger_name_the_account(cli, tmp_path: Path) -> None:
    from google.cloud.devtools import cloudbuild_v1

    s = _settings()
    resource = f"projects/{s.project_id}/serviceAccounts/tb-{s.env_name}-cb@{s.project_id}.iam.gserviceaccount.com"
    root = cloudbuild_v1.Build.from_json(json.dumps(yaml.safe_load((REPO / "cloudbuild.yaml").read_text())))
    assert root.service_account == resource
    assert root.options.logging == cloudbuild_v1.BuildOptions.LoggingMode.CLOUD_LOGGING_ONLY
    code, out, err = cli("--values", REPO / "values.env", "trigger", "--repo-owner", "acme", "--repo-name", "x")
    assert code == 0, err
    assert cloudbuild_v1.BuildTrigger.from_json(json.dumps(yaml.safe_load(out))).service_account == resource
    # bootstrap follows values.env: a named account lands in the root file, --check sees the drift
    values = tmp_path / "values.env"
    values.write_text((REPO / "values.env").read_text() + 'BUILD_SERVICE_ACCOUNT="ci-builder@my-tpu-project.iam.gserviceaccount.com"\n')
    code, out, err = cli("--values", values, "bootstrap", "--check", "--output", REPO / "cloudbuild.yaml")
    assert code == 1 and "differs" in err
    code, out, err = cli("--values", values, "bootstrap", "--output", "-")
    assert "serviceAccount: projects/my-tpu-project/serviceAccounts/ci-builder@my-tpu-project.iam.gserviceaccount.com" in out


@pytest.mark.parametrize("marker", ["builder-roles", "plan-roles"])
def test_the_role_lists_are_generated_from_the_role_table(marker: str) -> None:
    from builder.cloud.iam import PLAN_ROLES, ROLES, roles_markdown

    doc = "docs/cloud.md"  # README.md links to it
    text = (REPO / doc).read_text()
    m = re.search(rf"<!-- {marker}:start[^>]*-->\n(.*?)<!-- {marker}:end -->", text, re.S)
    assert m, f"{doc} lacks the {marker} markers"
    table = PLAN_ROLES if marker == "plan-roles" else ROLES
    assert m.group(1) == roles_markdown(table), f"regenerate {doc}'s {marker} table from builder/cloud/iam.py"


def test_derived_account_names_follow_googles_rules() -> None:
    from builder.config.names import service_account_problem

    for env in ("a", "x" * 24, "tpu-dev1"):
        s = _settings(ENV_BUILD_NAME=env)
        assert service_account_problem(s.builder_service_account_id) is None
