"""Google's rules for TPU MIGs in the stand-in provider (tools/tfstandin/rules.py; the rules and
their sources: docs/modules.md, "Google's rules for TPU MIGs"). Every example's plan meets them in
tests/terraform/test_terraform.py; here a negative control for each shows it fires (the refusal,
with Google's message, fails the plan) and the same configuration done Google's way passes:

* a MIG with a TPU accelerator topology (a workload policy) and no BULK mode;
* a resize request on a TPU MIG;
* a flex-start bulk MIG with repair on;
* a bulk MIG grown from a non-zero target size;
* a change of an existing MIG's target size policy mode;
* and a state built by an older commit's modules (the provider's request_reason says so) is not
  held to them: a real project let those modules make it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.terraform import HISTORY, Terraform, rules, standin_terraform

pytestmark = pytest.mark.slow

PROVIDER = """
terraform {
  required_providers {
    google = { source = "hashicorp/google", version = "~> 8.7" }
  }
}
provider "google" {
  project = "p"
  zone    = "us-east5-b"
  %s
}
"""

POLICY = "projects/p/regions/us-east5/resourcePolicies/slice-4x4"


def _config(*, bulk: bool = True, policy: bool = True, flex: bool = False, repair: str = "",
            size: int = 4, request: bool = False, machine: str = "ct6e-standard-4t") -> str:
    scheduling = ('provisioning_model = "FLEX_START"\n    instance_termination_action = "DELETE"\n'
                  '    max_run_duration {\n      seconds = 3600\n    }' if flex else 'provisioning_model = "STANDARD"')
    out = f"""
resource "google_compute_instance_template" "t" {{
  name_prefix  = "slice-"
  machine_type = "{machine}"
  disk {{
    source_image = "projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accel-2204-amd64-tpu-v6e"
  }}
  network_interface {{
    network = "default"
  }}
  scheduling {{
    on_host_maintenance = "TERMINATE"
    automatic_restart   = false
    {scheduling}
  }}
}}

resource "google_compute_instance_group_manager" "g" {{
  name               = "slice"
  base_instance_name = "slice"
  target_size        = {size}
  wait_for_instances = false
  version {{
    instance_template = google_compute_instance_template.t.self_link_unique
  }}
"""
    if policy:
        out += f'  resource_policies {{\n    workload_policy = "{POLICY}"\n  }}\n'
    if bulk:
        out += '  target_size_policy {\n    mode = "BULK"\n  }\n'
    if repair:
        out += f'  instance_lifecycle_policy {{\n    default_action_on_failure = "{repair}"\n  }}\n'
    out += "}\n"
    if request:
        out += """
resource "google_compute_resize_request" "r" {
  name                   = "slice-flex"
  zone                   = "us-east5-b"
  instance_group_manager = google_compute_instance_group_manager.g.name
  resize_by              = 4
}
"""
    return out


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def _write(work: Path, body: str, reason: str = "") -> None:
    (work / "main.tf").write_text(PROVIDER % (f"request_reason = {reason!r}".replace("'", '"') if reason else "") + body)


def _plan(tf: Terraform, work: Path, body: str, reason: str = "") -> tuple[int, str]:
    _write(work, body, reason)
    proc = tf(work, "plan", "-input=false", "-no-color", "-lock=false", "-out=p.tfplan", check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def _ready(tf: Terraform, tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    _write(work, "")
    tf.init(work, backend=False)
    return work


@pytest.mark.parametrize(("case", "refused", "fixed", "message"), [
    ("no bulk mode", dict(bulk=False), {}, rules.NEEDS_BULK),
    ("resize request", dict(request=True), {}, rules.NO_RESIZE_REQUEST),
    ("resize request on a single-host TPU MIG", dict(request=True, policy=False, bulk=False),
     dict(policy=False, bulk=False), rules.NO_RESIZE_REQUEST),
    ("flex-start with repair on", dict(flex=True, size=0), dict(flex=True, size=0, repair="DO_NOTHING"), rules.FLEX_REPAIR),
    ("flex-start with repair set to REPAIR", dict(flex=True, size=0, repair="REPAIR"),
     dict(flex=True, size=0, repair="DO_NOTHING"), rules.FLEX_REPAIR),
], ids=lambda v: v.replace(" ", "-") if isinstance(v, str) and " " in v else None)
def test_each_rule_refuses_and_the_documented_way_passes(
        tf: Terraform, tmp_path: Path, case: str, refused: dict, fixed: dict, message: str) -> None:
    work = _ready(tf, tmp_path)
    code, said = _plan(tf, work, _config(**refused))
    assert code == 1 and f"Error: {message}" in said and rules.ABOUT_BULK in said, (case, said[-1500:])
    code, said = _plan(tf, work, _config(**fixed))
    assert code == 0, (case, said[-1500:])


def test_a_gpu_mig_is_not_held_to_the_tpu_rules(tf: Terraform, tmp_path: Path) -> None:
    """No workload policy, no TPU machine type: individual mode and a resize request are allowed."""
    work = _ready(tf, tmp_path)
    code, said = _plan(tf, work, _config(bulk=False, policy=False, request=True, machine="a3-highgpu-8g"))
    assert code == 0, said[-1500:]


def test_a_bulk_group_grows_only_from_zero_and_keeps_its_mode(tf: Terraform, tmp_path: Path) -> None:
    work = _ready(tf, tmp_path)
    assert _plan(tf, work, _config(size=2))[0] == 0
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", "p.tfplan")
    code, said = _plan(tf, work, _config(size=4))
    assert code == 1 and f"Error: {rules.GROW_FROM_ZERO}" in said and "target size 2 -> 4" in said, said[-1500:]
    assert _plan(tf, work, _config(size=0))[0] == 0  # to 0 first (then from 0: a create-size grow)
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", "p.tfplan")
    assert _plan(tf, work, _config(size=4))[0] == 0
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", "p.tfplan")
    assert _plan(tf, work, _config(size=1))[0] == 0  # shrinking is allowed
    code, said = _plan(tf, work, _config(size=0, bulk=False))
    assert code == 1 and f"Error: {rules.MODE_FIXED}" in said and "BULK -> INDIVIDUAL" in said, said[-1500:]


def test_a_state_of_an_older_commit_is_not_held_to_the_rules(tf: Terraform, tmp_path: Path) -> None:
    work = _ready(tf, tmp_path)
    assert _plan(tf, work, _config(bulk=False))[0] == 1
    assert _plan(tf, work, _config(bulk=False), reason=HISTORY)[0] == 0
