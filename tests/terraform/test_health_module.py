"""modules/health in real Terraform through the stand-in provider: the health check's Scheduler
job (TPU_RECOVERY) plans with its invoker (tb-<env>-hc, builds.editor, actAs the applying account
only), the body the roots get from builder/inputs/recovery.py, and its precondition keeps a call without
a body from planning a job that would POST an empty build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.config import load
from builder.inputs import recovery
from tests.conftest import EXAMPLES
from tests.support.terraform import Workspace, child_caller, standin_terraform

pytestmark = pytest.mark.slow

CALLER = child_caller("proj-health", "h", "health", """  project_id        = "proj-health"
  region            = "us-east5"
  env_name          = "heal-env"
  health_build_body = %s
  health_schedule   = %s""")


@pytest.mark.parametrize("with_body", [True, False])
def test_the_health_module_plans_only_with_a_body(tmp_path: Path, with_body: bool) -> None:
    tf = standin_terraform()
    Workspace(tmp_path)
    caller = tmp_path / "caller"
    caller.mkdir()
    body = json.dumps(recovery.build_request(load(EXAMPLES / "mig-v6e-16-spot.env"))) if with_body else ""
    (caller / "main.tf").write_text(CALLER % (json.dumps(body), json.dumps(recovery.SCHEDULE)))
    tf.init(caller)
    proc = tf(caller, "plan", "-input=false", "-no-color", "-lock=false", check=False)
    assert (proc.returncode == 0) == with_body, proc.stdout[-2000:] + proc.stderr[-2000:]
    if with_body:
        out = proc.stdout
        assert "module.h.google_cloud_scheduler_job.health will be created" in out
        assert '"tpubuild-heal-env-health"' in out and '"tb-heal-env-hc"' in out
        assert f'"{recovery.SCHEDULE}"' in out and '"roles/cloudbuild.builds.editor"' in out
        assert '"roles/iam.serviceAccountUser"' in out
        # a failed call is retried within the interval (Cloud Scheduler's default retry_count 0 never retries)
        assert "retry_count          = 3" in out and '"300s"' in out
    else:
        assert "modules/health is called only with a health_build_body" in proc.stderr
