"""The TTL: the build the Scheduler job creates loads into the real Cloud Build type, the job's
HTTP target into the real Cloud Scheduler type, and it destroys only the TPU."""

from __future__ import annotations

import base64
import datetime
import json
import re

import pytest

from builder.config import load
from builder.facts.errors import BadInput
from builder.inputs import tfvars, ttl
from tests.conftest import TODAY
from tests.unit.test_plan_preview import write


def test_build_request_is_a_real_build_that_destroys_only_the_tpu(tmp_path):
    from google.cloud.devtools.cloudbuild_v1.types import Build

    path = write(tmp_path, "values.env")
    path.write_text(path.read_text() + 'ENV_TTL_HOURS="6"\n')
    s = load(path)
    body = tfvars.for_module(s, "tpu")["ttl_build_body"]
    build = Build.from_json(body)
    assert build.source.storage_source.bucket == s.state_bucket
    script = build.steps[0].args[1]
    assert "tpubuild dispatch --action destroy --tpu true" in script
    assert "filestore" not in script and "shared_pd" not in script
    import importlib.util

    from tests.conftest import require

    require("google-cloud-scheduler", importlib.util.find_spec("google.cloud.scheduler_v1") is not None,
            "pip install google-cloud-scheduler")
    from google.cloud import scheduler_v1 as scheduler
    job = scheduler.Job(name=ttl.job_name(s), schedule=ttl.cron_for(datetime.datetime(2026, 11, 23, 14, 5,
                                                                                      tzinfo=datetime.timezone.utc)),
                        time_zone="Etc/UTC",
                        http_target=scheduler.HttpTarget(
                            uri=f"https://cloudbuild.googleapis.com/v1/projects/{s.project_id}/builds",
                            http_method=scheduler.HttpMethod.POST, body=body.encode(),
                            oauth_token=scheduler.OAuthToken(service_account_email="x@y.iam.gserviceaccount.com")))
    assert job.schedule == "5 14 23 11 *" and json.loads(job.http_target.body)["steps"][0]["id"] == "ttl-dispatch"
    assert base64.b64encode(job.http_target.body)


def test_no_ttl_means_no_body(tmp_path):
    s = load(write(tmp_path, "values.env"))
    assert tfvars.for_module(s, "tpu")["ttl_hours"] == 0 and tfvars.for_module(s, "tpu")["ttl_build_body"] == ""


def test_extend_and_next_fire():
    assert ttl.parse_extension("4h") == datetime.timedelta(hours=4)
    assert ttl.parse_extension("2d") == datetime.timedelta(days=2)
    with pytest.raises(BadInput):
        ttl.parse_extension("soon")
    now = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.timezone.utc)
    assert ttl.next_fire("5 14 23 11 *", now) == datetime.datetime(2026, 11, 23, 14, 5, tzinfo=datetime.timezone.utc)


def test_plan_says_when_the_ttl_fires(tmp_path, cli):
    path = write(tmp_path, "values.env")
    path.write_text(path.read_text() + 'ENV_TTL_HOURS="6"\n')
    code, out, err = cli("--values", path, "plan", "--applied", "none", "--format", "json")
    assert code == 0, err
    info = json.loads(out)["ttl"]
    # the plan reads the one clock (builder/config/calendar.py's now), which the tests pin to TODAY
    assert info["fires_if_created_now"] == "2026-11-28T06:00Z" and TODAY == "2026-11-28T00:00:00Z"
    code, out, _ = cli("--values", path, "plan", "--applied", "none")
    assert f"destroyed at about {info['fires_if_created_now']}" in out
    code, out, _ = cli("--values", path, "plan", "--action", "update", "--applied", "none")
    assert "ttl" not in json.loads(cli("--values", write(tmp_path, "plain.env"), "plan", "--applied", "none",
                                       "--format", "json")[1])


def test_ttl_on_node_is_refused(tmp_path, cli):
    from tests.conftest import REPO, rewrite_env

    path = tmp_path / "node.env"
    path.write_text(rewrite_env((REPO / "values.env").read_text(), TPU_ARCH="node", TPU_RUNTIME_VERSION=None,
                                TPU_PYTORCH_VERSION="pytorch-1.13", TPU_ACCELERATOR_TYPE="v3-32", ENV_TTL_HOURS="6"))
    code, _, err = cli("--values", path, "validate")
    assert code == 2 and "ENV_TTL_HOURS" in err


def test_the_ttl_build_runs_as_the_pipelines_account_and_the_invoker_may_act_only_as_it(tmp_path):
    """modules/ttl adds serviceAccount (the applying identity) to the body; with it, a build needs an
    explicit logging option, and the result still loads into the real Build."""
    import hcl2
    from google.cloud.devtools.cloudbuild_v1.types import Build

    from tests.conftest import REPO

    path = write(tmp_path, "values.env")
    path.write_text(path.read_text() + 'ENV_TTL_HOURS="6"\n')
    s = load(path)
    body = json.loads(tfvars.for_module(s, "tpu")["ttl_build_body"])
    body["serviceAccount"] = f"projects/{s.project_id}/serviceAccounts/builder@{s.project_id}.iam.gserviceaccount.com"
    build = Build.from_json(json.dumps(body))
    assert build.options.logging.name == "CLOUD_LOGGING_ONLY" and build.service_account.endswith("gserviceaccount.com")
    # the job in main.tf; the invoker and its grants in the linked modules/_shared/scheduled_build.tf
    resources = {k.strip('"'): v for f in ("main.tf", "scheduled_build.tf")
                 for r in hcl2.loads((REPO / "modules/ttl" / f).read_text())["resource"] for k, v in r.items()}
    [acts] = resources["google_service_account_iam_member"].values()
    assert acts["role"].strip('"') == "roles/iam.serviceAccountUser" and "local.builder_sa" in acts["service_account_id"]
    assert "google_service_account.invoker.email" in acts["member"]
    [job] = resources["google_cloud_scheduler_job"].values()
    assert "local.build_body" in job["http_target"][0]["body"]
    # the body sent is the TTL's build with serviceAccount added (the shared scheduled-build file)
    shared = (REPO / "modules/ttl/scheduled_build.tf").read_text()
    assert "{ serviceAccount = local.builder_sa }" in shared and "jsondecode(local.request_body" in shared
    assert re.search(r"request_body\s+= var\.ttl_build_body", (REPO / "modules/ttl/main.tf").read_text())


def test_the_ttl_invoker_is_least_privilege():
    """The TTL's own account: creates builds, may act as the one account the build runs as; nothing
    else, and no authoritative IAM (tests/terraform/test_security_identity.py checks the hosts' account without it)."""
    from tests.support.hcl import effective_resources, load_module

    res = {k: v for k, v in effective_resources(load_module("tpu_vm")).items() if k[1].startswith("module.ttl.")}
    assert not [t for t, _ in res if t.endswith(("_iam_binding", "_iam_policy"))]
    roles = {(t, v["role"].strip('"')) for (t, _), v in res.items() if t.endswith("_iam_member")}
    assert roles == {("google_project_iam_member", "roles/cloudbuild.builds.editor"),
                     ("google_service_account_iam_member", "roles/iam.serviceAccountUser")}
    members = {v["member"].strip('"') for (t, _), v in res.items() if t.endswith("_iam_member")}
    assert members == {"serviceAccount:${google_service_account.invoker.email}"}
