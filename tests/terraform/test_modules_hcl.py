"""A small reader for our Terraform modules on top of python-hcl2, and tests of the reader itself.

python-hcl2 (>= 7) turns a .tf file into dicts. In its output labels and string literals keep
their quotes (``'"gcs"'``), expressions are wrapped in ``${...}``, and blocks are lists of dicts
marked ``__is_block__``. The other module tests use :func:`load_module`, :func:`refs` and
:func:`body_parts` from here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.hcl import *  # noqa: F403 - the reader under test
from tests.support.hcl import ALL_DIRS, load_dir, load_module, write_module  # noqa: F401

SAMPLE = '''
variable "x" {
  type    = string
  default = "a"
}
locals {
  y = "${var.x}-b"
}
data "terraform_remote_state" "pd" {
  count   = var.x == "" ? 0 : 1
  backend = "gcs"
  config  = { bucket = "b", prefix = "e/shared_pd" }
}
resource "google_compute_instance_template" "t" {
  name_prefix = local.y
  metadata    = { "startup-script" = file("${path.module}/s.sh"), tag = google_service_account.sa.email }
  disk {
    boot = true
  }
  dynamic "disk" {
    for_each = var.x == "" ? [] : [1]
    content {
      source = data.terraform_remote_state.pd[0].outputs.name
    }
  }
  lifecycle {
    create_before_destroy = true
  }
}
resource "google_service_account" "sa" {
  account_id = "sa-${var.x}"
}
'''


def test_reader_splits_attributes_blocks_and_dynamic_blocks(tmp_path: Path) -> None:
    mod = write_module(tmp_path, SAMPLE)
    attrs, blocks = body_parts(mod.resources[("google_compute_instance_template", "t")])
    assert set(attrs) == {"name_prefix", "metadata"}
    assert set(blocks) == {"disk", "lifecycle"}
    assert [dynamic for _, dynamic in blocks["disk"]] == [False, True]
    assert set(map(unquote, attrs["metadata"])) == {"startup-script", "tag"}


def test_reader_finds_references_transitively(tmp_path: Path) -> None:
    mod = write_module(tmp_path, SAMPLE)
    template = mod.resources[("google_compute_instance_template", "t")]
    assert refs(template) == {
        ("local", "y", ""), ("var", "x", ""), ("resource", "google_service_account", "sa"),
        ("data", "terraform_remote_state", "pd"),
    }
    assert ("var", "x", "") in mod.closure(mod.locals["y"])
    assert remote_outputs(template) == {("pd", "name")}
    # path.module and file() are not references to anything of ours
    assert not any(kind == "resource" and name == "module" for kind, name, _ in refs(template))


def test_reader_reads_calls_and_moved_blocks_and_binds_arguments(tmp_path: Path) -> None:
    (tmp_path / "child").mkdir()
    (tmp_path / "child" / "main.tf").write_text(
        'variable "ranges" {\n  type    = list(string)\n  default = null\n}\nvariable "tag" {\n  type = string\n}\n'
        'resource "google_compute_firewall" "f" {\n  source_ranges = var.ranges\n  target_tags   = [var.tag]\n'
        '  name          = "${var.tag}-f"\n}\n')
    root = write_module(tmp_path / "root", 'module "fw" {\n  source = "../child"\n  tag    = local.t\n  colour = 1\n'
                        '  depends_on = [module.other]\n}\nmoved {\n  from = google_compute_firewall.f\n'
                        '  to   = module.fw.google_compute_firewall.f\n}\noutput "x" {\n  value = module.fw.name\n}\n')
    assert set(root.calls) == {"fw"} and call_args(root, "fw") == {"tag": "${local.t}", "colour": 1}
    assert root.moved == [("google_compute_firewall.f", "module.fw.google_compute_firewall.f")]
    assert ("module", "fw", "name") in refs(root.code()) and ("module", "other", "") in refs(root.code())
    assert not any(kind == "resource" for kind, _, _ in refs(root.code())), "moved addresses are not references"
    [(key, fw)] = effective_resources(root).items()
    assert key == ("google_compute_firewall", "module.fw.f")
    assert fw["target_tags"] == ["${local.t}"] and fw["source_ranges"] is None, "bound to the call, else the default"
    assert fw["name"] == '"${var.tag}-f"', "only whole-value references are bound"
    assert call_errors(root) == ["root: module.fw: colour is not a variable of ../child"]


@pytest.mark.parametrize("name", ALL_DIRS)
def test_every_module_loads(name: str) -> None:
    mod = load_module(name)
    assert {"main.tf", "variables.tf", "outputs.tf", "versions.tf"} <= set(mod.files)
    assert mod.variables and mod.resources
    if "destroy_only.tf" in mod.files:  # a legacy root: the provider's inputs, its guard, no outputs
        assert set(mod.variables) == {"project_id", "zone"} and not mod.outputs
        assert list(mod.resources) == [("terraform_data", "destroy_only")]
    else:
        assert mod.outputs
