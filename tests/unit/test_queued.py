"""TPU_QUEUED on vm: the slice is a queued resource that the pipeline's ``tpu-queue``
step requests with gcloud after ``tpu-apply`` (google-beta 6.50's google_tpu_v2_queued_resource
cannot carry metadata, a service account, data disks, spot/reserved, labels or valid-until), and
``tpu-unqueue`` deletes before the tpu module's Terraform destroy.

The steps' scripts are rendered from the templates and run under real bash with a scripted
``gcloud`` stub on PATH (it records every argv and answers list/describe from the scenario); every
recorded gcloud argv is then parsed by the REAL gcloud offline (tests/support/gcloud.py), which
also shows the request body gcloud would send.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from builder.config import load_text
from builder.planning.plan import make_plan
from builder.render.pipeline import QUEUE_SLACK_S, render
from tests.conftest import REPO, SHIPPED, require, rewrite_env
from tests.support.fakes.fixtures import fakes  # noqa: F401 - fixture
from tests.support.pipeline import step_script

QUEUED = {"TPU_QUEUED": "true", "TPU_QUEUED_VALID_FOR": "6h", "TPU_PROVISIONING": "spot"}


def settings(**overrides: str | None) -> Any:
    return load_text(rewrite_env(Path(SHIPPED).read_text(), **{**QUEUED, **overrides}), REPO / "values.env")


def config(action: str, *, tpu: bool = False, **overrides: str | None) -> dict[str, Any]:
    s = settings(**overrides)
    return render(s, make_plan(s, action, tpu=tpu))


def step(cfg: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(st for st in cfg["steps"] if st["id"] == step_id)


# ---- the pipeline ----

@pytest.mark.parametrize(("action", "tpu"), [("create", False), ("update", False), ("update", True),
                                             ("destroy", False), ("destroy", True)])
def test_queued_pipelines_load_into_the_real_build_type(action: str, tpu: bool) -> None:
    from google.cloud.devtools import cloudbuild_v1

    cfg = config(action, tpu=tpu)
    build = cloudbuild_v1.Build.from_json(json.dumps(cfg))
    ids = [st.id for st in build.steps]
    if action == "destroy":
        assert "tpu-unqueue" in ids and "tpu-queue" not in ids
    else:
        assert "tpu-queue" in ids and "tpu-unqueue" not in ids


def test_queue_runs_after_tpu_apply_and_finalize_waits_for_it() -> None:
    cfg = config("create")
    ids = [st["id"] for st in cfg["steps"]]
    assert ids.index("tpu-apply") < ids.index("tpu-queue") < ids.index("finalize")
    assert step(cfg, "tpu-queue")["waitFor"] == ["tpu-apply"]
    # tpu-attach gives the queued slice the shared PD once it is ACTIVE (and the disk seeded)
    assert step(cfg, "tpu-attach")["waitFor"][0] == "tpu-queue"
    assert "tpu-attach" in step(cfg, "finalize")["waitFor"] and "tpu-apply" not in step(cfg, "finalize")["waitFor"]
    # 6h of valid-until is the wait; the step's timeout leaves room for create and the last poll
    assert step(cfg, "tpu-queue")["timeout"] == f"{6 * 3600 + QUEUE_SLACK_S}s"
    assert step(cfg, "tpu-queue")["name"].startswith("gcr.io/google.com/cloudsdktool/google-cloud-cli")
    # tpu-apply saves the module's queued_request for it; an unqueued apply does not
    assert "terraform output -json queued_request" in step(cfg, "tpu-apply")["args"][1]
    plain = config("create", TPU_QUEUED="false", TPU_QUEUED_VALID_FOR=None)
    assert "queued_request" not in step(plain, "tpu-apply")["args"][1]
    assert not {"tpu-queue", "tpu-unqueue"} & {st["id"] for st in plain["steps"]}


@pytest.mark.parametrize("tpu", [False, True])
def test_unqueue_runs_before_the_tpu_destroy(tpu: bool) -> None:
    cfg = config("destroy", tpu=tpu)
    ids = [st["id"] for st in cfg["steps"]]
    assert ids.index("tpu-unqueue") < ids.index("tpu-plan")
    assert "tpu-unqueue" in step(cfg, "tpu-plan")["waitFor"]


def test_tfvars_tell_the_module_it_is_queued() -> None:
    from builder.inputs.tfvars import for_module

    assert for_module(settings(), "tpu")["queued"] is True
    assert for_module(settings(TPU_QUEUED="false", TPU_QUEUED_VALID_FOR=None), "tpu")["queued"] is False


def test_module_creates_no_tpu_vm_when_queued_and_outputs_the_request() -> None:
    main = (REPO / "modules/tpu_vm/main.tf").read_text()
    outputs = (REPO / "modules/tpu_vm/outputs.tf").read_text()
    assert "for_each = local.slices" in main and "slices = var.queued ? {} :" in main
    for field in ("metadata", "service_account_email", "network_tag"):
        assert f"{field} " in outputs.split('output "queued_request"')[1]


# ---- the step scripts under bash with a scripted gcloud ----

STUB = r'''#!/usr/bin/env python3
"""Scripted gcloud: records argv, answers from the scenario files in $STUB_DIR."""
import json, os, sys
from pathlib import Path

d = Path(os.environ["STUB_DIR"])
args = sys.argv[1:]
calls = json.loads((d / "calls.json").read_text()) if (d / "calls.json").exists() else []
calls.append(args)
(d / "calls.json").write_text(json.dumps(calls))
verb = args[3] if len(args) > 3 else ""
exists = (d / "exists").exists()
if verb == "list":
    if exists:
        print("projects/p/locations/z/queuedResources/" + (d / "name").read_text())
elif verb == "describe":
    fmt = next(a for a in args if a.startswith("--format="))
    if "state.state" in fmt:
        states = (d / "states").read_text().split()
        print(states[0])
        if len(states) > 1:
            (d / "states").write_text("\n".join(states[1:]))
    else:
        print((d / "spec").read_text())
elif verb == "create":
    (d / "exists").write_text("")
elif verb == "delete":
    if (d / "exists").exists():
        (d / "exists").unlink()
'''


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root, self.ws, self.bin, self.stub = root, root / "workspace", root / "bin", root / "stub"
        for p in (self.ws / "plans", self.bin, self.stub):
            p.mkdir(parents=True)
        (self.bin / "gcloud").write_text(STUB)
        (self.bin / "gcloud").chmod(0o755)
        # what `terraform output -json queued_request` prints for this module
        (self.ws / "plans" / "tpu.queued.json").write_text(json.dumps({
            "metadata": {"startup-script": (REPO / "env_setup/scripts/startup.sh").read_text(),
                         "enable-oslogin": "TRUE", "tpubuild-env": "tpu-dev1", "tpubuild-tpu-endpoints": ""},
            "service_account_email": "tb-tpu-dev1-vm@my-tpu-project.iam.gserviceaccount.com",
            "network_tag": "tpu-tpu-dev1",
        }))

    def scenario(self, *, name: str, exists: bool = False, spec: str = "", states: str = "ACTIVE") -> None:
        (self.stub / "name").write_text(name)
        (self.stub / "spec").write_text(spec)
        (self.stub / "states").write_text(states)
        if exists:
            (self.stub / "exists").write_text("")

    def run(self, script: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
        proc = subprocess.run(["bash", "-c", script], cwd=self.root, capture_output=True, text=True, timeout=60, env={
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}", "HOME": str(self.root), "LANG": "C.UTF-8",
            "WORKSPACE": str(self.ws), "STUB_DIR": str(self.stub), "TPUBUILD_QUEUE_POLL_S": "0", **env})
        calls_file = self.stub / "calls.json"
        return proc, json.loads(calls_file.read_text()) if calls_file.exists() else []


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def queue_script(action: str = "create", **overrides: str | None) -> tuple[str, Any]:
    s = settings(**overrides)
    return step_script(step(render(s, make_plan(s, action)), "tpu-queue")), s


def verbs(calls: list[list[str]]) -> list[str]:
    return [c[3] for c in calls]


def test_create_requests_the_queued_resource_and_waits_until_active(box: Sandbox) -> None:
    script, s = queue_script()
    box.scenario(name=s.tpu_name, states="ACCEPTED WAITING_FOR_RESOURCES WAITING_FOR_RESOURCES PROVISIONING ACTIVE")
    proc, calls = box.run(script)
    assert proc.returncode == 0, proc.stderr
    assert verbs(calls) == ["list", "create", "describe", "describe", "describe", "describe", "describe"]
    assert proc.stdout.count("WAITING_FOR_RESOURCES (") == 2 and "is ACTIVE" in proc.stdout
    create = calls[1]
    assert create[4] == s.tpu_name and "--spot" in create and "--valid-until-duration=6h" in create
    # the shared PD comes with tpu-attach, once it is seeded (the queued slice does not wait for the seed)
    assert not [a for a in create if a.startswith("--data-disk")]
    meta = next(a for a in create if a.startswith("--metadata-from-file="))
    assert f"startup-script={box.ws}/plans/tpu-queued/metadata/startup-script" in meta


def test_existing_with_the_same_spec_is_not_requested_again(box: Sandbox) -> None:
    script, s = queue_script()
    box.scenario(name=s.tpu_name, exists=True, spec=f"{s.accelerator_type} {s.runtime_version}",
                 states="WAITING_FOR_RESOURCES WAITING_FOR_RESOURCES ACTIVE")
    proc, calls = box.run(script)
    assert proc.returncode == 0, proc.stderr
    assert "create" not in verbs(calls) and "delete" not in verbs(calls)
    assert "already exists with the same spec" in proc.stdout


def test_existing_with_a_different_spec_is_refused_on_create(box: Sandbox) -> None:
    script, s = queue_script()
    box.scenario(name=s.tpu_name, exists=True, spec=f"v3-8 {s.runtime_version}", states="ACTIVE")
    proc, calls = box.run(script)
    assert proc.returncode == 1
    assert "create" not in verbs(calls) and "delete" not in verbs(calls)
    assert "already exists as v3-8" in proc.stderr and "run update to replace it" in proc.stderr


def test_update_replaces_a_queued_resource_with_another_accelerator_type(box: Sandbox) -> None:
    script, s = queue_script("update")
    box.scenario(name=s.tpu_name, exists=True, spec=f"v3-8 {s.runtime_version}",
                 states="ACTIVE WAITING_FOR_RESOURCES ACTIVE")
    proc, calls = box.run(script)
    assert proc.returncode == 0, proc.stderr
    v = verbs(calls)
    assert v.index("delete") < v.index("create")
    assert "--force" in calls[v.index("delete")] and "training is interrupted" in proc.stdout


@pytest.mark.parametrize("bad", ["FAILED", "SUSPENDED"])
def test_failed_or_suspended_fails_the_step_naming_the_state(box: Sandbox, bad: str) -> None:
    script, s = queue_script()
    box.scenario(name=s.tpu_name, states=f"WAITING_FOR_RESOURCES {bad}")
    proc, _ = box.run(script)
    assert proc.returncode == 1
    assert f"queued resource {s.tpu_name} is {bad}" in proc.stderr


def test_waiting_past_the_bound_fails_and_leaves_the_request_queued(box: Sandbox) -> None:
    script, s = queue_script()
    assert 'wait_s="${TPUBUILD_QUEUE_WAIT_S:-21600}"' in script  # the rendered bound: TPU_QUEUED_VALID_FOR=6h
    box.scenario(name=s.tpu_name, states="WAITING_FOR_RESOURCES")
    proc, calls = box.run(script, TPUBUILD_QUEUE_WAIT_S="0")
    assert proc.returncode == 1
    assert "still WAITING_FOR_RESOURCES" in proc.stderr and "stays in the queue" in proc.stderr
    assert "delete" not in verbs(calls)


def test_unqueue_deletes_and_tolerates_absent(box: Sandbox) -> None:
    s = settings()
    script = step_script(step(render(s, make_plan(s, "destroy")), "tpu-unqueue"))
    box.scenario(name=s.tpu_name)
    proc, calls = box.run(script)
    assert proc.returncode == 0, proc.stderr
    assert verbs(calls) == ["list"] and "nothing to delete" in proc.stdout
    box.scenario(name=s.tpu_name, exists=True)
    proc, calls = box.run(script)
    assert proc.returncode == 0, proc.stderr
    delete = calls[-1]
    assert delete[3] == "delete" and {"--force", "--quiet"} <= set(delete)


# ---- every gcloud argv the steps ran, parsed by the real gcloud ----

@pytest.mark.slow
def test_every_gcloud_line_of_the_queue_steps_parses_in_the_real_gcloud(box: Sandbox, gcloud) -> None:
    script, s = queue_script("update")
    box.scenario(name=s.tpu_name, exists=True, spec=f"v3-8 {s.runtime_version}", states="ACTIVE")
    proc, calls = box.run(script)
    assert proc.returncode == 0, proc.stderr
    unqueue = step_script(step(render(s, make_plan(s, "destroy")), "tpu-unqueue"))
    box.scenario(name=s.tpu_name, exists=True)
    proc, more = box.run(unqueue)
    assert proc.returncode == 0, proc.stderr
    seen = set()
    bodies = []
    for argv in calls + more:
        result = gcloud.parse(argv)
        assert result.ok, result.why()
        seen.add(argv[3])
        if argv[3] == "create":
            bodies += [r.body for r in result.requests if r.method == "POST" and "queuedResources" in r.path]
    assert seen == {"list", "describe", "delete", "create"}
    assert bodies and all(b == bodies[0] for b in bodies), bodies  # gcloud may retry the POST
    body = bodies[0]
    node = body["tpu"]["nodeSpec"][0]["node"]
    assert body["queueingPolicy"] == {"validUntilDuration": "21600s"}
    assert body["spot"] == {}
    assert node["acceleratorType"] == s.accelerator_type and node["runtimeVersion"] == s.runtime_version
    assert node["serviceAccount"]["email"] == "tb-tpu-dev1-vm@my-tpu-project.iam.gserviceaccount.com"
    assert node["metadata"]["startup-script"] == (REPO / "env_setup/scripts/startup.sh").read_text()
    assert node["metadata"]["tpubuild-tpu-endpoints"] == ""
    assert "dataDisks" not in node  # tpu-attach attaches the shared PD once it is seeded
    assert node["networkConfig"]["enableExternalIps"] is False and node["tags"] == ["tpu-tpu-dev1"]
    assert node["labels"] == dict(s.labels)


def test_reservation_and_on_demand_flags_parse(box: Sandbox, gcloud) -> None:
    for provisioning, flag in (("reservation", "--reserved"), ("on-demand", None)):
        script, s = queue_script(TPU_PROVISIONING=provisioning, TPU_QUEUED_VALID_FOR=None)
        box.scenario(name=s.tpu_name, states="ACTIVE")
        (box.stub / "calls.json").unlink(missing_ok=True)
        (box.stub / "exists").unlink(missing_ok=True)
        proc, calls = box.run(script)
        assert proc.returncode == 0, proc.stderr
        create = next(c for c in calls if c[3] == "create")
        assert not any(a.startswith("--valid-until") for a in create)
        assert (flag in create) if flag else not {"--spot", "--reserved"} & set(create)
        result = gcloud.parse(create)
        assert result.ok, result.why()


def test_queue_scripts_pass_shellcheck(tmp_path: Path) -> None:
    shellcheck = shutil.which("shellcheck")
    require("shellcheck", shellcheck is not None, "apt-get install shellcheck")
    assert shellcheck is not None
    for action, sid in (("create", "tpu-queue"), ("update", "tpu-queue"), ("destroy", "tpu-unqueue")):
        s = settings()
        path = tmp_path / f"{action}.sh"
        path.write_text("#!/usr/bin/env bash\n" + step_script(step(render(s, make_plan(s, action)), sid)))
        proc = subprocess.run([shellcheck, "-s", "bash", "-f", "gcc", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


# ---- tpubuild status: the queued resource's state through the real google-cloud-tpu v2 client ----

def test_status_shows_the_queued_resource_state(fakes, tmp_path: Path, cli, monkeypatch) -> None:
    from builder.config import load
    from tests.support.fakes.fixtures import make_repo, unique_env

    env = unique_env()
    values = make_repo(tmp_path / "r", env)
    values.write_text(rewrite_env(Path(SHIPPED).read_text(), ENV_BUILD_NAME=env, **QUEUED))
    monkeypatch.chdir(values.parent)
    s = load(values)
    name = f"projects/{s.project_id}/locations/{s.zone}/queuedResources/{s.tpu_name}"
    code, out, err = cli("--values", values, "status")
    assert "  queued     absent" in out, out + err
    fakes.google.queued_resources[name] = {
        "name": name, "state": {"state": "WAITING_FOR_RESOURCES"}, "spot": {},
        "queueingPolicy": {"validUntilTime": "2026-11-23T18:00:00Z"},
        "tpu": {"nodeSpec": [{"parent": f"projects/{s.project_id}/locations/{s.zone}", "nodeId": s.tpu_name,
                              "node": {"acceleratorType": s.accelerator_type, "runtimeVersion": s.runtime_version}}]}}
    code, out, err = cli("--values", values, "status", "--format", "json")
    report = json.loads(out)
    assert report["queued"]["state"] == "WAITING_FOR_RESOURCES" and report["queued"]["accelerator_type"] == s.accelerator_type
    code, out, err = cli("--values", values, "status")
    assert (f"  queued     {s.tpu_name}: WAITING_FOR_RESOURCES, {s.accelerator_type}, valid until 2026-11-23T18:00:00"
            in out), out
    assert any(p == f"/v2/{name}" for _m, p in fakes.google.requests)


# ---- TPU_ZONE_CHECK: a stale zone table must not block a valid zone ----

def test_zone_missing_from_the_table_is_refused_unless_zone_check_warns(cli, make_env) -> None:
    path = make_env(SHIPPED, ZONE="us-central1-a", REGION=None)  # v3-32 is listed in europe-west4-a only
    code, out, err = cli("validate", "--values", path)
    assert code == 2 and "ZONE:" in err and 'TPU_ZONE_CHECK="warn"' in err and len(err.strip().splitlines()) == 1
    path = make_env(SHIPPED, ZONE="us-central1-a", REGION=None, TPU_ZONE_CHECK="warn")
    s = load_text(path.read_text(), path)
    assert s.zone == "us-central1-a" and s.zone_check == "warn"
    assert any("v3-32 is not offered in us-central1-a" in w and "TPU_ZONE_CHECK" in w for w in s.warnings)
    code, out, err = cli("plan", "--values", path)
    assert code == 0, err


def test_unconfirmed_zones_are_marked_in_the_data_file() -> None:
    from builder.config import offers

    evidence = offers.table()["_zone_evidence"]
    for gen, zones in evidence["unconfirmed"].items():
        assert set(zones) <= set(offers.generations()[gen]["zones"]["*"]), gen
