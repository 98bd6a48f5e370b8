"""The health check's build (TPU_RECOVERY, builder/inputs/recovery.py): it loads into the real Cloud
Build type, its job into the real Cloud Scheduler type, its scripts pass shellcheck, it is
rendered exactly where TPU_RECOVERY is on (the default: spot and preemptible slices), and it reads
the lock where builder/cloud/lock.py writes it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from builder.catalogue.modules import accelerator_module
from builder.cloud import lock
from builder.config import load, load_text
from builder.inputs import recovery, tfvars
from tests.conftest import EXAMPLES, NODE, REPO, SHIPPED, require, rewrite_env
from tests.support.pipeline import step_script

SPOT_VM, SPOT_MIG = EXAMPLES / "vm-v5litepod-16.env", EXAMPLES / "mig-v6e-16-spot.env"
ON_DEMAND = EXAMPLES / "vm-v4-32.env"


def _body(path: Path, **overrides: str) -> str:
    s = load_text(rewrite_env(path.read_text(), **overrides), REPO / path.name)
    return tfvars.for_module(s, accelerator_module(s.arch))["health_build_body"]


@pytest.mark.parametrize("path", [SPOT_VM, SPOT_MIG], ids=["vm", "mig"])
def test_the_health_build_is_a_real_build_and_its_job_a_real_job(path: Path) -> None:
    from google.cloud.devtools.cloudbuild_v1.types import Build

    s = load(path)
    body = _body(path)
    build = Build.from_json(body)
    assert [st.id for st in build.steps] == [step_id for step_id, _, _ in recovery.STEPS]
    assert build.source.storage_source.object_ == "workspace/" + s.env_name + "/ttl/source.tgz"
    assert recovery.TAG.format(env=s.env_name) in build.tags and build.timeout.total_seconds() == recovery.TIMEOUT_S
    import importlib.util

    require("google-cloud-scheduler", importlib.util.find_spec("google.cloud.scheduler_v1") is not None,
            "pip install google-cloud-scheduler")
    from google.cloud import scheduler_v1 as scheduler

    job = scheduler.Job(name=recovery.job_name(s), schedule=recovery.SCHEDULE, time_zone="Etc/UTC",
                        http_target=scheduler.HttpTarget(
                            uri=f"https://cloudbuild.googleapis.com/v1/projects/{s.project_id}/builds",
                            http_method=scheduler.HttpMethod.POST, body=body.encode()))
    assert json.loads(job.http_target.body)["steps"][0]["id"] == "health-check"


@pytest.mark.parametrize("path, overrides, on", [
    (SPOT_VM, {}, True), (SPOT_MIG, {}, True), (EXAMPLES / "vm-v2-32.env", {}, True),  # preemptible
    (ON_DEMAND, {}, False), (SHIPPED, {}, False), (EXAMPLES / "mig-v6e-16-flex.env", {}, False),
    (EXAMPLES / "mig-v6e-32-calendar.env", {}, False), (EXAMPLES / "mig-v5p-32.env", {}, False),
    (ON_DEMAND, {"TPU_RECOVERY": "auto"}, True), (SPOT_MIG, {"TPU_RECOVERY": "off"}, False),
    (SPOT_VM, {"TPU_QUEUED": "true"}, False),
], ids=lambda v: v.name if isinstance(v, Path) else str(v))
def test_recovery_is_on_by_default_for_spot_and_preemptible_only(path: Path, overrides: dict, on: bool) -> None:
    body = _body(path, **overrides)
    assert bool(body) == on
    s = load_text(rewrite_env(path.read_text(), **overrides), REPO / path.name)
    assert s.recovery == on and recovery.plan_text(s).startswith("auto" if on else "off")


def test_node_has_no_recovery() -> None:
    s = load(NODE)
    assert not s.recovery and "none" in recovery.plan_text(s)


def test_the_check_reads_the_lock_where_the_lock_is_written() -> None:
    s = load(SPOT_VM)
    assert recovery.objects(s)["lock"] == lock.path(s.env_name)


def test_the_recovery_of_a_max_tries_setting_is_rendered() -> None:
    script = "".join(step_script(st) for st in json.loads(_body(SPOT_VM, TPU_RECOVERY_MAX_TRIES="7"))["steps"])
    assert '-ge 7 ]' in script and "TPU_RECOVERY_MAX_TRIES=7" in script


@pytest.mark.parametrize("path", [SPOT_VM, SPOT_MIG, ON_DEMAND], ids=["vm", "mig", "vm-ttl-model-less"])
def test_the_health_scripts_pass_shellcheck(tmp_path: Path, path: Path) -> None:
    require("shellcheck", shutil.which("shellcheck") is not None, "apt-get install shellcheck")
    body = _body(path, TPU_RECOVERY="auto", ENV_TTL_HOURS="8", **({"MODEL": ""} if path == ON_DEMAND else {}))
    files = []
    for step in json.loads(body)["steps"]:
        f = tmp_path / f"{step['id']}.sh"
        f.write_text(step_script(step, {"BUILD_ID": "b"}))
        files.append(str(f))
        assert step_script(step).startswith("set -euo pipefail\n")
    proc = subprocess.run(["shellcheck", "-s", "bash", "-f", "gcc", *files], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_plan_summarises_the_health_build_and_other_modules_never_change_it() -> None:
    """The before → after shows `recovery: off → auto`, never the Build's JSON; editing another
    module's values (Filestore) leaves the slice's module untouched (the health build reads only
    the slice's price)."""
    from builder.planning.diff import module_changes

    def settings(**overrides: str):
        base = EXAMPLES / "vm-v2-32.env"  # preemptible, priced
        return load_text(rewrite_env(base.read_text(), **overrides), REPO / base.name)

    [change] = [c for c in module_changes(settings(TPU_RECOVERY="off"), settings(), "tpu") if c.var.startswith("health")]
    assert change.text() == "recovery: off → auto"
    bigger = settings(SHARED_FS_CAPACITY="2048")
    assert module_changes(settings(), bigger, "tpu") == ()
    assert recovery.hourly_usd(bigger) == recovery.hourly_usd(settings()) > 0
