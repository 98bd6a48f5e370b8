"""ENV_TTL_HOURS on TPU_ARCH="mig": modules/tpu_mig holds the TTL's job (modules/ttl), whose build
(builder/inputs/ttl.py) loads into the real Cloud Build type and dispatches ``destroy`` with ``_MIG=true``:
the plan of that dispatch destroys the slice's module only (never Filestore, the shared PD or the
hosts' account/firewall); the module plans with the job through real Terraform (stand-in provider)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from builder.config import load
from builder.inputs import tfvars, ttl
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES

MIG = EXAMPLES / "mig-v6e-16-spot.env"
VM = EXAMPLES / "vm-v4-32.env"


def _dispatch_flags(settings) -> dict[str, str]:
    from google.cloud.devtools.cloudbuild_v1.types import Build

    body = tfvars.for_module(settings, "mig" if settings.arch == "mig" else "tpu")["ttl_build_body"]
    build = Build.from_json(body)
    assert build.source.storage_source.bucket == settings.state_bucket
    line = next(ln for ln in build.steps[0].args[1].splitlines() if ln.startswith("tpubuild dispatch"))
    words = shlex.split(line)
    return dict(zip(words[2::2], words[3::2]))


def test_the_ttl_build_destroys_the_slice_and_keeps_the_data(make_env):
    s = load(make_env(MIG, ENV_TTL_HOURS="6"))
    flags = _dispatch_flags(s)
    assert flags == {"--action": "destroy", "--tpu": "false", "--mig": "true", "--allow-data-loss": "false",
                     "--allow-wipe": "false"}
    # the flags as dispatch reads them (builder.planning.request: the one way from flags to a plan)
    from builder.planning.request import SUBSTITUTIONS, parse, plan_for

    request = parse(s, flags["--action"], tpu=flags["--tpu"], mig=flags["--mig"],
                    allow_data_loss=flags["--allow-data-loss"], allow_wipe=flags["--allow-wipe"], spelling=SUBSTITUTIONS)
    plan = plan_for(s, request)
    destroyed = {op.module for op in plan.operations if op.op == "destroy"}
    assert destroyed == {"mig"} and {op.module for op in plan.operations} == {"mig"}
    # the other scope would be refused on mig (it would cut the running VMs off their account)
    from builder.facts.errors import BadInput

    with pytest.raises(BadInput, match="cut off the running TPU VMs"):
        parse(s, "destroy", tpu="true", mig="false", spelling=SUBSTITUTIONS)
    # vm keeps its scope: the TPU module
    v = load(make_env(VM, ENV_TTL_HOURS="6"))
    assert _dispatch_flags(v)["--tpu"] == "true" and _dispatch_flags(v)["--mig"] == "false"
    # the job lives in the slice's module, not in the hosts' access module
    assert tfvars.for_module(s, "mig")["ttl_hours"] == 6 and "ttl_hours" not in tfvars.for_module(s, "tpu")
    assert tfvars.for_module(load(MIG), "mig")["ttl_build_body"] == ""


def test_plan_says_when_the_slice_is_destroyed(cli, make_env):
    path = make_env(MIG, ENV_TTL_HOURS="6")
    code, out, err = cli("--values", path, "plan", "--applied", "none", "--format", "json")
    assert code == 0, err
    info = json.loads(out)["ttl"]
    assert info["hours"] == 6 and info["fires_if_created_now"] and info["job"].endswith("/jobs/tpubuild-v6e-slice-ttl")


def test_the_ttl_invoker_on_mig_is_the_same_least_privilege_module():
    from tests.support.hcl import effective_resources, load_module

    res = {k: v for k, v in effective_resources(load_module("tpu_mig")).items() if k[1].startswith("module.slice_ttl.")}
    assert res and not [t for t, _ in res if t.endswith(("_iam_binding", "_iam_policy"))]
    roles = {(t, v["role"].strip('"')) for (t, _), v in res.items() if t.endswith("_iam_member")}
    assert roles == {("google_project_iam_member", "roles/cloudbuild.builds.editor"),
                     ("google_service_account_iam_member", "roles/iam.serviceAccountUser")}


@pytest.mark.slow
def test_the_slice_module_plans_the_ttl_job_in_real_terraform(make_env, tmp_path: Path):
    from tests.support.terraform import Workspace, resources, standin_terraform

    tf = standin_terraform()
    s = load(make_env(MIG, ENV_TTL_HOURS="6"))
    ws = Workspace(tmp_path / "ws")
    mig_plan = None
    for module, values in tfvars.all_for(s).items():
        work = ws.module(module_dir(s, module), module, values)
        tf.init(work)
        plan = tf.plan_json(work, "create")
        tf(work, "apply", "-input=false", "-no-color", "-lock=false", "create.tfplan")
        if module == "mig":
            mig_plan = plan
    assert mig_plan is not None
    # the TTL's job (a spot slice also gets the health check's, module.slice_health)
    jobs = [r for r in resources(mig_plan) if r["type"] == "google_cloud_scheduler_job"
            and not r["address"].startswith("module.slice_health[")]
    assert len(jobs) == 1 and jobs[0]["address"].startswith("module.slice_ttl[0].")
    # modules/ttl names the job and its invoker from the environment: the job is the one `tpubuild` reads
    assert ttl.job_name(s) == f"projects/{s.project_id}/locations/{jobs[0]['values']['region']}/jobs/{jobs[0]['values']['name']}"
    [invoker] = [r for r in resources(mig_plan) if r["address"] == "module.slice_ttl[0].google_service_account.invoker"]
    assert invoker["values"]["account_id"] == f"tb-{s.env_name}-tl"
    body = jobs[0]["values"]["http_target"][0]["body"]
    import base64

    script = json.loads(base64.b64decode(body))["steps"][0]["args"][1]
    assert "--tpu false --mig true" in script
