"""An environment applied with provider 6.x plans clean on its first 8.x plan (docs/terraform.md,
"Provider 8.x"), in real Terraform through the stand-in provider.

For every shipped values file but the node ones (their roots stay on 6.x, destroy only), the
modules of ``LAST_6X`` (main when the roots still pinned ``hashicorp/google >= 5, < 7``) are
fake-applied by the stand-in 6.50.0, in the pipeline's order, each into its own local state; then
HEAD's modules, which pin ``~> 8.7``, plan that same state under the stand-in 8.7.0: Terraform
upgrades every object through the 8.7 schema (``UpgradeResourceState``), refreshes it and must
find nothing to add, change or destroy.

``PROVIDER_6X_FILLED`` is what the real 6.x provider wrote into the state and the stand-in, which
knows no provider-side defaults, leaves null: 6.x filled in an instance template disk's ``type``
(``PERSISTENT``) and ``mode`` (``READ_WRITE``) when the configuration did not say; 7.0 stopped
doing so, and HEAD's ``modules/tpu_mig`` sets both explicitly to the same values. The test writes
them into the 6.50 state before the 8.7 plan, as a real 6.x apply leaves them.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from builder.config import load
from builder.inputs import dashboard, tfvars
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES, REPO, SHIPPED, require
from tests.support.terraform import (
    CURRENT, LEGACY, Terraform, Workspace, as_applied_by_old_modules, counts, git_tree, old_values, standin_terraform,
    unintended,
)

#: main when the root modules moved from provider 6.x to ~> 8.7 (the last 6.x-pinned modules).
LAST_6X = "7feaa01"
#: resource type -> nested block -> attribute -> what provider 6.x recorded when the config left it unset
PROVIDER_6X_FILLED: dict[str, dict[str, dict[str, str]]] = {
    "google_compute_instance_template": {"disk": {"type": "PERSISTENT", "mode": "READ_WRITE"}},
}
#: The capacity modes the 6.x-era modules refused (their provisioning variable's validation): no
#: environment was ever applied with them under 6.x, so there is no 6.x state to upgrade.
NEWER_MODES = ("flex-start", "calendar")
UPGRADED = [env for env in [SHIPPED, *sorted(EXAMPLES.glob("*.env"))]
            if load(env).arch != "node" and load(env).provisioning not in NEWER_MODES]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def _locked_version(work: Path) -> set[str]:
    """The provider versions ``terraform init`` chose (its lock file)."""
    return set(re.findall(r'^\s*version\s*=\s*"([\d.]+)"', (work / ".terraform.lock.hcl").read_text(), re.M))


def _fill_as_6x(state_path: Path) -> int:
    """Write PROVIDER_6X_FILLED into a state file where its values are null; returns how many."""
    state = json.loads(state_path.read_text())
    filled = 0
    for res in state["resources"]:
        blocks = PROVIDER_6X_FILLED.get(res["type"], {})
        for instance in res["instances"]:
            for block, defaults in blocks.items():
                for item in instance["attributes"].get(block) or []:
                    for attr, value in defaults.items():
                        if item.get(attr) is None:
                            item[attr] = value
                            filled += 1
    state_path.write_text(json.dumps(state, indent=1))
    return filled


def _old_step_label(old_module: Path) -> str:
    """What the old dashboard module's step metric description named the lines it counts (one
    text for every environment then: fairseq's)."""
    found = re.search(r'"Training progress lines \(([^)]*)\)', (old_module / "main.tf").read_text())
    assert found, f"{old_module}/main.tf: no step metric description"
    return found.group(1)


def _moved(plan: dict[str, Any], address: str) -> set[str]:
    """The attributes whose value the plan changes on ``address``."""
    change = next(c["change"] for c in plan["resource_changes"] if c["address"] == address)
    before, after = change["before"] or {}, change["after"] or {}
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


@pytest.mark.parametrize("env", UPGRADED, ids=lambda p: p.name)
def test_a_state_applied_with_provider_6_plans_clean_under_8(tf: Terraform, tmp_path: Path, env: Path) -> None:
    require("git history", subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", LAST_6X],
                                          capture_output=True).returncode == 0, "a full clone")
    settings, with_disk_module = as_applied_by_old_modules(env)
    old_src = tmp_path / "old"
    old_src.mkdir()
    git_tree(LAST_6X, old_src)
    state = tmp_path / "state"
    old_ws = Workspace(tmp_path / "ws-old", modules=old_src / "modules", state=state)
    new_ws = Workspace(tmp_path / "ws-new", state=state)
    planned: list[str] = []
    filled = 0
    for module, values in tfvars.all_for(settings).items():
        if module == "shared_pd" and not with_disk_module:
            continue
        directory = module_dir(settings, module)
        old = old_ws.module(directory, module, old_values(old_src / directory, values))
        tf.init(old)
        assert _locked_version(old) == {LEGACY.provider_version}, (module, "the 6.x modules get the 6.50 stand-in")
        tf(old, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")
        filled += _fill_as_6x(state / f"{module}.tfstate")
        new = new_ws.module(directory, module, values)
        tf.init(new)
        assert _locked_version(new) == {CURRENT.provider_version}, (module, "HEAD's modules get the 8.7 stand-in")
        plan = tf.plan_json(new, "upgrade")
        prior: list[dict[str, Any]] = plan.get("prior_state", {}).get("values", {}).get("root_module", {}).get(
            "resources", [])
        assert prior or plan["resource_changes"], f"{module}: the 6.x apply left nothing to upgrade"
        changed = unintended(plan)  # bar what this release adds or updates on purpose (INTENDED_SINCE)
        expected: dict[str, list[str]] = {}
        if module == "dashboard" and dashboard.step_label(settings) != _old_step_label(old_src / directory):
            # not an upgrade artefact: since models are plug-ins the step metric counts the selected
            # model's own lines (MODEL="": tpubuild run's tpubuild-step, no longer fairseq's) and its
            # description names them; the old module's inputs here already carry HEAD's filter, so
            # the description is the one attribute left to move
            expected = {"google_logging_metric.steps": ["update"]}
            assert _moved(plan, "google_logging_metric.steps") == {"description"}, (env.name, plan["resource_changes"])
        assert changed == expected, (env.name, module, changed, counts(plan))
        planned.append(module)
    assert "tpu" in planned or "mig" in planned, "the slice's module was upgraded"
    # a MIG's template disks are where 6.x and 8.x differ: the 6.x defaults were written and HEAD matched them
    assert (filled > 0) == (settings.arch == "mig"), filled
