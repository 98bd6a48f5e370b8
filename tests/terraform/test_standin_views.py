"""The stand-in's views (tests/support/terraform.py ``Reattached``) check exactly what the whole
schema checks: every Terraform command of the suite is served only the types its configuration and
state name, so these tests hold that to the whole schema, Terraform's own diagnostics compared.

* every known error of the negative control (tests/terraform/test_terraform.py ``NEGATIVE``), and
  all of them in one configuration, gives the same ``validate -json`` diagnostics from a view as
  from the whole schema (a beta-only resource on the GA provider included: absent from both);
* every module validates the same way (zero diagnostics) through both;
* a view that lacks a type the configuration uses fails the command: a mistake in ``names_used``
  can never pass a configuration the whole schema would refuse.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.terraform import (
    Reattached, Terraform, Workspace, install, module_dirs, names_used, standin_terraform,
)
from tests.terraform.test_terraform import _PROVIDERS, NEGATIVE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def both() -> tuple[Terraform, Terraform]:
    env = standin_terraform().env
    return Terraform(env, reattach=True), Terraform(env, reattach=True, standins=Reattached(install.cache_dir(), whole=True))


def _diagnostics(tf: Terraform, cwd: Path) -> tuple[int, list[dict[str, object]]]:
    """(exit code, diagnostics in a stable order: Terraform validates in parallel)."""
    proc = tf(cwd, "validate", "-no-color", "-json", check=False)
    return proc.returncode, sorted(json.loads(proc.stdout)["diagnostics"], key=lambda d: json.dumps(d, sort_keys=True))


def _all_in_one() -> str:
    return "".join(NEGATIVE[c][0].replace('"d"', f'"d{i}"').replace('"f"', f'"f{i}"').replace('"v"', f'"v{i}"')
                   .replace('"t"', f'"t{i}"').replace(".d.", f".d{i}.").replace(".f.", f".f{i}.")
                   .replace('output "o"', f'output "o{i}"') for i, c in enumerate(sorted(NEGATIVE)))


@pytest.mark.parametrize("case", [*sorted(NEGATIVE), "all together"], ids=lambda c: c.replace(" ", "-"))
def test_a_view_reports_every_known_error_as_the_whole_schema_does(
        both: tuple[Terraform, Terraform], tmp_path: Path, case: str) -> None:
    view, whole = both
    (tmp_path / "main.tf").write_text(_PROVIDERS + (_all_in_one() if case == "all together" else NEGATIVE[case][0]))
    view.init(tmp_path, backend=False)
    seen, expected = _diagnostics(view, tmp_path), _diagnostics(whole, tmp_path)
    assert seen == expected and expected[0] == 1 and expected[1], (case, seen, expected)


@pytest.mark.parametrize("path", module_dirs(), ids=lambda p: p.name)
def test_every_module_validates_the_same_through_a_view(
        both: tuple[Terraform, Terraform], tmp_path: Path, path: Path) -> None:
    view, whole = both
    work = Workspace(tmp_path).root / "modules" / path.name
    view.init(work, backend=False)
    assert _diagnostics(view, work) == _diagnostics(whole, work) == (0, [])


def test_a_view_missing_a_used_type_fails_the_command(both: tuple[Terraform, Terraform], tmp_path: Path) -> None:
    view, _ = both
    work = Workspace(tmp_path).root / "modules" / "filestore"
    view.init(work, backend=False)
    used = names_used(work)
    assert "google_filestore_instance" in used, used
    standins = view.standins or Reattached(install.cache_dir())
    short = {"TF_REATTACH_PROVIDERS": json.dumps({"registry.terraform.io/hashicorp/google": standins.address(
        "google", install.CURRENT.provider_version, used - {"google_filestore_instance"})})}
    proc = view(work, "validate", "-no-color", "-json", check=False, extra_env=short)
    errors = [d["summary"] for d in json.loads(proc.stdout)["diagnostics"] if d["severity"] == "error"]
    assert proc.returncode == 1 and any("Invalid resource type" in e for e in errors), errors
