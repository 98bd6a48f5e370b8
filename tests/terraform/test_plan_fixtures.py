"""The guard's plan fixtures (tests/data/plans) are what their makers write today.

* MANIFEST.json lists every fixture, and only fixtures, with ``made_by`` terraform or hand (and,
  for a hand-made one, why Terraform through the stand-in cannot write it);
* every hand-made fixture is byte-identical to what tests/data/plans/generate.py writes;
* every terraform-made fixture is byte-identical to what real Terraform 1.11 writes through the
  stand-in today (tests/support/terraform_fixtures.py, into a temporary folder): a module change that
  changes a plan shows here, and ``python tests/data/plans/generate.py --terraform`` updates them.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.terraform_fixtures import SHAPES, names, regenerate
from tests.support.terraform import standin_terraform

PLANS = REPO / "tests" / "data" / "plans"


def _generate_module():
    spec = importlib.util.spec_from_file_location("plans_generate", PLANS / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _manifest() -> dict[str, dict[str, str]]:
    return json.loads((PLANS / "MANIFEST.json").read_text())


def test_every_fixture_is_listed_with_its_maker() -> None:
    manifest = _manifest()
    on_disk = {p.name for p in PLANS.glob("*.json")} - {"MANIFEST.json"}
    assert set(manifest) == on_disk, (sorted(on_disk - set(manifest)), sorted(set(manifest) - on_disk))
    for name, entry in manifest.items():
        assert entry["made_by"] in ("terraform", "hand"), name
        if entry["made_by"] == "hand":
            assert len(entry["why"]) > 20, f"{name}: say why the stand-in cannot write it"
    made = {name for name, e in manifest.items() if e["made_by"] == "terraform" and e["by"] == "tests/support/terraform_fixtures.py"}
    assert made == {f"{n}.json" for n in names()}
    recorded = [name for name, e in manifest.items() if e["made_by"] == "terraform" and name not in made]
    assert all(len(manifest[name]["why"]) > 20 for name in recorded), recorded
    # the shapes the stand-in can write are not hand-made
    hand = {n for n, e in manifest.items() if e["made_by"] == "hand"}
    for per_dir in SHAPES.values():
        for directory, extra in per_dir.items():
            for shape in ("create", "noop", "destroy", *extra):
                assert f"{directory}_{shape}.json" not in hand, (directory, shape)


def test_hand_made_fixtures_are_what_generate_writes() -> None:
    generate = _generate_module()
    written = generate.hand_made()
    assert set(written) == {n for n, e in _manifest().items() if e["made_by"] == "hand"} | {"MANIFEST.json"}
    for name, text in written.items():
        assert (PLANS / name).read_text() == text, f"{name}: run python tests/data/plans/generate.py"


@pytest.mark.slow
def test_terraform_made_fixtures_are_what_terraform_writes_today(tmp_path: Path) -> None:
    written = regenerate(tmp_path, standin_terraform())
    assert written == names()
    stale = [n for n in written if (tmp_path / f"{n}.json").read_text() != (PLANS / f"{n}.json").read_text()]
    assert not stale, f"{stale}: Terraform writes these differently today; run python tests/data/plans/generate.py --terraform"
    for name in written:
        doc = json.loads((PLANS / f"{name}.json").read_text())
        assert doc["format_version"] == "1.2" and doc["terraform_version"].startswith("1.11.")


#: module directory → the plan module the pipeline's guard step names
_PLAN_MODULE = {"filestore": "filestore", "shared_pd": "shared_pd", "tpu_node": "tpu", "tpu_vm": "tpu",
                "tpu_mig_access": "tpu", "mig": "mig", "tpu_mig": "mig", "dashboard": "dashboard"}
_ACTION = {"create": "create", "noop": "update", "update_in_place": "update", "resize": "update",
           "count_zero": "update", "make_before_break": "update", "destroy": "destroy"}


@pytest.mark.parametrize("name", [n for n in names() if n != "empty"])
def test_every_terraform_made_plan_goes_through_the_guard(cli, name: str) -> None:
    """Each plan Terraform wrote proceeds for the action that makes it; a destroy of a data module
    under update is refused (the real plans carry the disk/Filestore beside their identities)."""
    directory, shape = next((d, name[len(d) + 1:]) for d in sorted(_PLAN_MODULE, key=len, reverse=True)
                            if name.startswith(d + "_"))
    module, action = _PLAN_MODULE[directory], _ACTION[shape]
    code, out, err = cli("guard", "--plan-json", PLANS / f"{name}.json", "--module", module, "--action", action)
    assert (code, err) == (0, ""), err
    assert out.splitlines()[0].startswith(f"guard: {module} ({action}): ") and out.splitlines()[0].endswith("; proceed")
    if shape == "noop":
        assert " 0 to add, 0 to change, 0 to replace, 0 to destroy" in out.splitlines()[0]
    # make-before-break: the new slice is created beside the running one, which nothing touches
    assert ("DOUBLE BILLING (make-before-break)" in out) == (shape == "make_before_break"), out
    if shape == "make_before_break":
        assert f"{module}-release deletes" in out and " 0 to destroy" in out.splitlines()[0]
    if shape == "destroy" and module in ("filestore", "shared_pd"):
        code, _, err = cli("guard", "--plan-json", PLANS / f"{name}.json", "--module", module, "--action", "update")
        assert code == 2 and "would be destroyed" in err and len(err.splitlines()) == 1
