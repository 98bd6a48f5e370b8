"""Real Terraform, the modules' history and the provider's shape: ``moved`` blocks carry every
object of the release before the host_identity/host_firewall move (fake-applied, then HEAD
planned on its state: nothing to add, change or destroy), the legacy node roots still destroy a
node environment, and the stand-in serves the full provider schema. Split from test_terraform.py
(same fixtures and tools)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from builder.config import load
from builder.inputs import tfvars
from builder.planning.plan import module_dir
from tests.conftest import NODE, REPO, require
from tests.support.terraform_fixtures import STATES
from tests.support.terraform import (
    CURRENT, Terraform, Workspace, as_applied_by_old_modules, counts, git_tree, old_values, standin_terraform,
    unintended,
)
from tests.terraform.test_terraform import ENV_FILES, PREVIOUS_RELEASE, _guard, _write_plan

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def tf() -> Terraform:
    return standin_terraform()


# ---- moved blocks ------------------------------------------------------------------------------

def test_moved_blocks_keep_every_object_of_the_previous_release(tf: Terraform, tmp_path: Path) -> None:
    require("git history", subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", PREVIOUS_RELEASE],
                                          capture_output=True).returncode == 0, "a full clone")
    checked = []
    # not node: its roots are destroy only (test_destroy_only_roots_destroy_a_node_environment)
    one_per_arch = {load(env).arch: env for env in reversed(ENV_FILES)}
    for env in one_per_arch.values():
        settings, with_disk_module = as_applied_by_old_modules(env)
        old_src, new_src = tmp_path / env.stem / "old", tmp_path / env.stem / "new"
        old_src.mkdir(parents=True)
        git_tree(PREVIOUS_RELEASE, old_src)
        state = tmp_path / env.stem / "state"
        old_ws = Workspace(tmp_path / env.stem / "ws-old", modules=old_src / "modules", state=state)
        new_ws = Workspace(tmp_path / env.stem / "ws-new", state=state)
        for module, values in tfvars.all_for(settings).items():
            directory = module_dir(settings, module)
            if not (old_src / directory).is_dir():  # a module added since (nothing to move)
                continue
            if module == "shared_pd" and not with_disk_module:
                continue
            old = old_ws.module(directory, module, old_values(old_src / directory, values))
            tf.init(old)
            tf(old, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")
            new = new_ws.module(directory, module, values)
            tf.init(new)
            plan = tf.plan_json(new, "moved")
            # nothing to add, change or destroy, bar what this release adds on purpose (INTENDED_SINCE)
            assert unintended(plan) == {}, (env.name, module, counts(plan))
            moved = [c["previous_address"] for c in plan["resource_changes"] if c.get("previous_address")]
            if (REPO / directory / "moved.tf").exists():
                assert moved, f"{module}: HEAD's moved blocks moved nothing"
                checked.append((env.name, module, len(moved)))
    assert checked, "no module with moved blocks was planned"


def _assert_destroys_exactly_the_state(tf: Terraform, work: Path, state: Path, module: str) -> None:
    """A destroy-only root (modules/_shared/destroy_only.tf): any plan but -destroy stops with its
    one message, its plan file is marked errored (Terraform will not apply it; the guard refuses
    it too); ``plan -destroy`` deletes every managed object of the state and
    nothing else, and applying it leaves the state empty."""
    held = {f"{r.get('module', '') + '.' if r.get('module') else ''}{r['type']}.{r['name']}"
            for r in json.loads(state.read_text())["resources"] if r["mode"] == "managed"}
    assert held, f"{state}: nothing to destroy"
    refused = tf(work, "plan", "-input=false", "-no-color", "-lock=false", "-out=refused.tfplan", check=False)
    assert refused.returncode == 1 and "This root is destroy-only" in refused.stderr, refused.stderr[-2000:]
    shown = json.loads(tf(work, "show", "-json", "refused.tfplan").stdout)
    assert shown["errored"] is True and shown["applyable"] is False
    assert tf(work, "apply", "-input=false", "-no-color", "-lock=false", "refused.tfplan", check=False).returncode != 0
    plan = tf.plan_json(work, "destroy", "-destroy")
    deleted = {c["address"].split("[")[0] for c in plan["resource_changes"] if c["mode"] == "managed"
               and c["change"]["actions"] == ["delete"]}
    assert deleted == held and set(counts(plan)) == {"delete"}, (sorted(deleted ^ held), counts(plan))
    ok = _guard(_write_plan(work, "destroy", plan), module, "destroy")
    assert ok.returncode == 0, (ok.stdout, ok.stderr)
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", "destroy.tfplan")
    assert [r for r in json.loads(state.read_text())["resources"] if r["mode"] == "managed"] == []


@pytest.mark.parametrize("directory, module", [("modules/tpu_node", "tpu"), ("modules/mig", "mig")])
def test_destroy_only_roots_destroy_a_node_environment(tf: Terraform, tmp_path: Path, directory: str, module: str) -> None:
    """The state the last full version applied (tests/data/node_state), destroyed by today's root."""
    settings = load(NODE)
    ws = Workspace(tmp_path / "ws")
    shutil.copy(STATES[Path(directory).name], ws.state / f"{module}.tfstate")
    work = ws.module(directory, module, tfvars.for_module(settings, module))
    tf.init(work)
    _assert_destroys_exactly_the_state(tf, work, ws.state / f"{module}.tfstate", module)


# ---- the schema the stand-in serves ------------------------------------------------------------

def test_stand_in_schema_is_the_full_provider_with_nesting_and_flags(tf: Terraform) -> None:
    """The schema rebuilt from the cdktn bindings has what Terraform's checks rely on (a parse
    regression in tools/tfstandin/schema.py shows here, and in the negative control)."""
    schemas = {}
    for provider in ("google", "google-beta"):
        path = next((Path(tf.env["TF_CLI_CONFIG_FILE"]).parent.parent / "schema").glob(
            f"{provider}-{CURRENT.provider_version}-*.json"))
        schemas[provider] = json.loads(path.read_text())
    ga, beta = schemas["google"], schemas["google-beta"]
    assert len(ga["resources"]) > 1000 and len(beta["resources"]) > len(ga["resources"]) and len(ga["data_sources"]) > 300
    assert "google_tpu_v2_vm" in beta["resources"] and "google_tpu_v2_vm" not in ga["resources"]
    vm = beta["resources"]["google_tpu_v2_vm"]
    assert vm["attributes"]["name"] == {"type": "string", "required": True}
    assert vm["attributes"]["id"] == {"type": "string", "optional": True, "computed": True}
    assert vm["attributes"]["network_endpoints"]["computed"] and vm["attributes"]["network_endpoints"]["type"][0] == "list"
    assert vm["block_types"]["accelerator_config"]["max_items"] == 1
    assert vm["block_types"]["data_disks"]["max_items"] == 0 and vm["block_types"]["timeouts"]["nesting"] == "single"
    fw = ga["resources"]["google_compute_firewall"]
    assert fw["block_types"]["allow"]["nesting"] == "set"
    assert fw["attributes"]["source_ranges"]["type"] == ["set", "string"]
    tmpl = ga["resources"]["google_compute_instance_template"]
    assert tmpl["block_types"]["disk"]["min_items"] == 1
    assert ga["provider"]["attributes"]["project"] == {"type": "string", "optional": True}
