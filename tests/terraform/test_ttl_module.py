"""modules/ttl in real Terraform through the stand-in provider: it declares ttl_hours and
ttl_build_body as the roots do (modules/_shared/var_ttl.tf, where 0 and "" mean no TTL), so its
precondition is what keeps a call without a TTL from planning a job that fires at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.terraform import Workspace, child_caller, standin_terraform

pytestmark = pytest.mark.slow

CALLER = child_caller("proj-ttl", "t", "ttl", """  project_id     = "proj-ttl"
  region         = "europe-west4"
  env_name       = "ttl-env"
  ttl_hours      = %s
  ttl_build_body = "{}"
  tpu_id         = "projects/proj-ttl/locations/europe-west4-a/nodes/tpu-ttl-env"
""")


@pytest.mark.parametrize("hours, planned", [(0, False), (6, True)])
def test_the_ttl_module_plans_only_with_a_ttl(tmp_path: Path, hours: int, planned: bool) -> None:
    tf = standin_terraform()
    Workspace(tmp_path)
    caller = tmp_path / "caller"
    caller.mkdir()
    (caller / "main.tf").write_text(CALLER % hours)
    tf.init(caller)
    proc = tf(caller, "plan", "-input=false", "-no-color", "-lock=false", check=False)
    assert (proc.returncode == 0) == planned, proc.stdout[-2000:] + proc.stderr[-2000:]
    if planned:
        assert "module.t.google_cloud_scheduler_job.ttl will be created" in proc.stdout
        assert '"tpubuild-ttl-env-ttl"' in proc.stdout and '"tb-ttl-env-tl"' in proc.stdout
    else:
        assert "modules/ttl is called only with a TTL" in proc.stderr
