"""The plan guard on plan JSON shaped like Terraform's `terraform show -json`.

Fixtures are in tests/data/plans/: most are real Terraform output through the stand-in provider,
the rest hand-made by generate.py there (MANIFEST.json says which and why). When `terraform` is on PATH,
a real plan of `terraform_data` resources checks that the fixtures have the real shape and that
the guard reads real output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from builder.facts.errors import BadInput
from builder.planning.guard import PROTECTED_TYPES, evaluate
from tests.conftest import REPO, require, run_tpubuild

PLANS = REPO / "tests" / "data" / "plans"


def fixture(name: str) -> Path:
    path = PLANS / f"{name}.json"
    assert path.is_file(), path
    return path


def guard(cli, name: str | Path, module: str, action: str, *extra: str) -> tuple[int, str, str]:
    path = name if isinstance(name, Path) else fixture(name)
    return cli("guard", "--plan-json", path, "--module", module, "--action", action, *extra)


# (fixture, module, action)
PROCEED = [
    ("filestore_create", "filestore", "create"),
    ("filestore_noop", "filestore", "update"),
    ("filestore_update_in_place", "filestore", "update"),
    ("filestore_update_in_place", "filestore", "auto"),
    ("filestore_destroy", "filestore", "destroy"),
    ("shared_pd_create", "shared_pd", "create"),
    ("shared_pd_resize", "shared_pd", "update"),
    ("shared_pd_destroy", "shared_pd", "destroy"),
    ("tpu_node_destroy", "tpu", "destroy"),
    ("tpu_vm_create", "tpu", "create"),
    ("tpu_vm_update_in_place", "tpu", "update"),
    ("tpu_vm_destroy", "tpu", "destroy"),
    ("tpu_mig_template_replace", "mig", "update"),
    ("mig_destroy", "mig", "destroy"),
    ("empty", "tpu", "update"),
]


@pytest.mark.parametrize("name, module, action", PROCEED, ids=[f"{n}-{a}" for n, _, a in PROCEED])
def test_safe_plans_proceed(cli, name: str, module: str, action: str) -> None:
    code, out, err = guard(cli, name, module, action)
    assert (code, err) == (0, ""), err
    assert out.splitlines()[0].startswith(f"guard: {module} ({action}): ") and out.splitlines()[0].endswith("; proceed")


# (fixture, module, action, address named, why)
REFUSE = [
    ("filestore_replace_tier", "filestore", "update", "google_filestore_instance.this", "would be replaced (tier forces replacement)"),
    ("filestore_replace_tier", "filestore", "create", "google_filestore_instance.this", "during create"),
    ("filestore_replace_tier", "filestore", "auto", "google_filestore_instance.this", "during auto"),
    ("filestore_replace_share_name", "filestore", "update", "google_filestore_instance.this",
     "(file_shares.0.name forces replacement)"),
    ("filestore_destroy", "filestore", "update", 'google_filestore_instance.this["a"]', "would be destroyed"),
    ("filestore_deposed_delete", "filestore", "update", "google_filestore_instance.this", "deposed object"),
    ("shared_pd_replace_create_before_destroy", "shared_pd", "update", "google_compute_disk.this",
     "would be replaced (type forces replacement)"),
    ("shared_pd_count_zero", "shared_pd", "update", "google_compute_disk.this[0]", "would be destroyed"),
    ("shared_pd_destroy", "shared_pd", "create", 'google_compute_disk.this["a"]', "the shared persistent disk"),
]


@pytest.mark.parametrize("name, module, action, address, why", REFUSE, ids=[f"{r[0]}-{r[2]}" for r in REFUSE])
def test_data_loss_is_refused_with_one_line(cli, name: str, module: str, action: str, address: str, why: str) -> None:
    code, out, err = guard(cli, name, module, action)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"tpubuild: error: {module}: {address} ")
    assert why in lines[0] and "_ALLOW_DATA_LOSS=true" in lines[0]
    assert "REFUSED" in out and "Traceback" not in err


@pytest.mark.parametrize("name, module, action, address, why", REFUSE, ids=[f"{r[0]}-{r[2]}" for r in REFUSE])
def test_allow_data_loss_proceeds_loudly(cli, name: str, module: str, action: str, address: str, why: str) -> None:
    code, out, err = guard(cli, name, module, action, "--allow-data-loss")
    assert (code, err) == (0, "")
    warning = [line for line in out.splitlines() if line.startswith("tpubuild: WARNING: DATA LOSS ALLOWED")]
    assert len(warning) == 1 and address in warning[0] and "is lost" in warning[0]


@pytest.mark.parametrize("action", ["create", "update", "auto"])
def test_tpu_replacement_is_allowed_and_announced(cli, action: str) -> None:
    code, out, err = guard(cli, "tpu_vm_replace", "tpu", action)
    assert (code, err) == (0, "")
    assert ("tpubuild: WARNING: google_tpu_v2_vm.this would be replaced (accelerator_type forces replacement): "
            "this interrupts training") in out
    assert "1 to replace" in out


def _slots(old: list[str], new: list[str]) -> dict:
    """A plan of modules/tpu_vm's slots: ``old`` (no-op, update) kept running, ``new`` actions."""
    def change(slot: str, actions: list[str], name: str, accel: str) -> dict:
        values = {"name": name, "accelerator_type": accel}
        return {"address": f'google_tpu_v2_vm.this["{slot}"]', "mode": "managed", "type": "google_tpu_v2_vm",
                "change": {"actions": actions, "before": None if actions == ["create"] else values,
                           "after": values}}
    return {"format_version": "1.2", "resource_changes": [change("a", old, "tpu-x", "v3-32"),
                                                          change("b", new, "tpu-x-b", "v3-128")]}


@pytest.mark.parametrize("kept", [["no-op"], ["update"]])
def test_a_tpu_made_beside_a_running_one_is_announced_as_double_billing(kept: list[str]) -> None:
    decision = evaluate(_slots(kept, ["create"]), "tpu", "update")
    assert decision.proceed
    (line,) = [w for w in decision.warnings if "DOUBLE BILLING" in w]
    assert "tpu-x-b (v3-128) is created beside tpu-x (v3-32)" in line and "tpu-release deletes tpu-x" in line


@pytest.mark.parametrize("old,new", [(["delete"], ["create"]), (["no-op"], ["no-op"]), (["delete"], ["no-op"])])
def test_no_double_billing_without_a_slice_kept_beside_a_new_one(old: list[str], new: list[str]) -> None:
    assert not [w for w in evaluate(_slots(old, new), "tpu", "update").warnings if "DOUBLE BILLING" in w]
    assert not [w for w in evaluate(_slots(old, ["delete"]), "tpu", "destroy").warnings if "DOUBLE" in w]


def test_tpu_update_in_place_and_destroy_messages(cli) -> None:
    _, out, _ = guard(cli, "tpu_vm_update_in_place", "tpu", "update")
    assert "WARNING" not in out and "1 to change" in out
    _, out, _ = guard(cli, "tpu_node_destroy", "tpu", "destroy")
    assert "tpubuild: WARNING: google_tpu_node.this will be destroyed: training on it stops" in out


def test_destroy_of_protected_resources_is_allowed_and_said(cli) -> None:
    code, out, err = guard(cli, "shared_pd_destroy", "shared_pd", "destroy")
    assert (code, err) == (0, "")
    # the disk and the seeder's identity (Terraform's plan of the module, tests/data/plans/MANIFEST.json)
    deletes = [rc for rc in json.loads(fixture("shared_pd_destroy").read_text())["resource_changes"]
               if rc["change"]["actions"] == ["delete"]]
    assert len(deletes) > 1
    assert 'google_compute_disk.this["a"] will be destroyed' in out and f" {len(deletes)} to destroy" in out


@pytest.mark.parametrize("name, address", [("filestore_create", "google_filestore_instance.this"),
                                           ("tpu_vm_update_in_place", "google_tpu_v2_vm.this")])
def test_destroy_action_refuses_a_plan_that_builds(cli, name: str, address: str) -> None:
    code, out, err = guard(cli, name, "tpu", "destroy")
    assert code == 2 and len(err.splitlines()) == 1
    assert address in err and "plan -destroy" in err


def test_errored_plan_is_refused(cli) -> None:
    code, _, err = guard(cli, "filestore_errored", "filestore", "update")
    assert code == 2 and "marked this plan as errored" in err and "filestore-plan" in err


def test_data_source_reads_of_a_disk_are_not_changes() -> None:
    doc = json.loads(fixture("tpu_vm_create_data_read").read_text())
    assert any(rc["mode"] == "data" and rc["type"] == "google_compute_disk" for rc in doc["resource_changes"])
    decision = evaluate(doc, "tpu", "update")
    assert decision.proceed and [c.address for c in decision.changes] == ["google_tpu_v2_vm.this"]


def test_mig_template_replacement_is_not_announced() -> None:
    decision = evaluate(json.loads(fixture("tpu_mig_template_replace").read_text()), "mig", "update")
    assert decision.proceed and decision.warnings == () and decision.counts()["replace"] == 1


def test_several_protected_losses_are_counted_in_the_one_line() -> None:
    doc = json.loads(fixture("filestore_replace_tier").read_text())
    doc["resource_changes"] += json.loads(fixture("shared_pd_count_zero").read_text())["resource_changes"]
    decision = evaluate(doc, "filestore", "update")
    assert not decision.proceed and "(and 1 more)" in decision.refusal and "\n" not in decision.refusal
    allowed = evaluate(doc, "filestore", "update", allow_data_loss=True)
    assert allowed.proceed and len(allowed.warnings) == 2


def test_every_protected_type_is_refused() -> None:
    for rtype in PROTECTED_TYPES:
        doc = json.loads(fixture("filestore_destroy").read_text())
        doc["resource_changes"][0]["type"] = rtype
        doc["resource_changes"][0]["address"] = f"{rtype}.x"
        assert not evaluate(doc, "filestore", "update").proceed
        assert evaluate(doc, "filestore", "destroy").proceed


# ---------------------------------------------------------------- bad input

def _write(tmp_path: Path, data: bytes | str, name: str = "plan.json") -> Path:
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


def _doc_with(mutate) -> str:
    doc = json.loads(fixture("filestore_replace_tier").read_text())
    mutate(doc)
    return json.dumps(doc)


BAD_PLANS = [
    ("empty-file", b"", "is empty"),
    ("binary-plan-file", b"PK\x03\x04\x14\x00\x08\x00\x08\x00\xff\xfe tfplan", "not UTF-8"),
    ("text-output", "Terraform will perform the following actions:\n", "invalid JSON"),
    ("truncated", fixture("filestore_create").read_text()[:200], "invalid JSON"),
    ("array", "[]", "expected a JSON object"),
    ("state-not-plan", json.dumps({"version": 4, "terraform_version": "1.11.4", "resources": []}), "not 'terraform show -json'"),
    ("format-2", _doc_with(lambda d: d.update(format_version="2.0")), "format_version '2.0' is not supported"),
    ("changes-not-list", _doc_with(lambda d: d.update(resource_changes={"a": 1})), "resource_changes is not a list"),
    ("change-not-object", _doc_with(lambda d: d.update(resource_changes=["x"])), "resource_changes[0] is not an object"),
    ("no-address", _doc_with(lambda d: d["resource_changes"][0].pop("address")), "lacks address"),
    ("bogus-action", _doc_with(lambda d: d["resource_changes"][0]["change"].update(actions=["explode"])),
     "is not a list of Terraform actions"),
    ("empty-actions", _doc_with(lambda d: d["resource_changes"][0]["change"].update(actions=[])), "change.actions"),
    ("actions-string", _doc_with(lambda d: d["resource_changes"][0]["change"].update(actions="delete")), "change.actions"),
]


@pytest.mark.parametrize("data, fragment", [b[1:] for b in BAD_PLANS], ids=[b[0] for b in BAD_PLANS])
def test_bad_plan_json_is_bad_input(cli, tmp_path: Path, data: bytes | str, fragment: str) -> None:
    path = _write(tmp_path, data)
    code, out, err = guard(cli, path, "filestore", "update")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"tpubuild: error: {path}") and fragment in err and "Traceback" not in err


def test_missing_and_directory_plan_json(cli, tmp_path: Path) -> None:
    code, _, err = guard(cli, tmp_path / "nope.json", "tpu", "update")
    assert code == 2 and "no such file" in err and "terraform show -json" in err
    code, _, err = guard(cli, tmp_path, "tpu", "update")
    assert code == 2 and "is a directory" in err


@pytest.mark.parametrize("module, action, fragment", [
    ("network", "update", "--module 'network' is not a plan module"),
    ("tpu", "initialize", "initialize runs no Terraform"),
    ("tpu", "bogus", "--action: 'bogus' is not an action"),
])
def test_bad_module_or_action(cli, module: str, action: str, fragment: str) -> None:
    code, out, err = guard(cli, "tpu_vm_create", module, action)
    assert code == 2 and len(err.splitlines()) == 1 and fragment in err and out == ""


def test_missing_flag_is_one_line(cli) -> None:
    code, _, err = cli("guard", "--module", "tpu", "--action", "update")
    assert code == 2 and len(err.splitlines()) == 1 and "--plan-json" in err


def test_refusal_through_the_console_script() -> None:
    proc = run_tpubuild("guard", "--plan-json", fixture("shared_pd_replace_create_before_destroy"),
                        "--module", "shared_pd", "--action", "update")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "google_compute_disk.this" in proc.stderr
    assert "_ALLOW_DATA_LOSS=true" in proc.stderr and "Traceback" not in proc.stderr
    ok = run_tpubuild("guard", "--plan-json", fixture("tpu_vm_replace"), "--module", "tpu", "--action", "update")
    assert ok.returncode == 0 and "interrupts training" in ok.stdout and ok.stderr == ""


# ---------------------------------------------------------------- the fixtures have the real shape

@pytest.fixture(scope="module")
def real_plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Real `terraform show -json` of create and replace plans of a builtin terraform_data resource."""
    exe = shutil.which("terraform")
    require("terraform", exe is not None, "the HashiCorp release binary on PATH (CI's image has it; docs/terraform.md)")
    work = tmp_path_factory.mktemp("tf")
    (work / "main.tf").write_text(
        'variable "tier" {\n  type = string\n}\n'
        'resource "terraform_data" "share" {\n  input = "x"\n  triggers_replace = [var.tier]\n}\n')
    env = {**os.environ, "CHECKPOINT_DISABLE": "1", "TF_IN_AUTOMATION": "1", "TF_INPUT": "0"}

    def tf(*args: str) -> str:
        proc = subprocess.run([exe, *args], cwd=work, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    tf("init", "-backend=false")
    tf("plan", "-var", "tier=BASIC_HDD", "-out", "create.tfplan")
    out = {"create": json.loads(tf("show", "-json", "create.tfplan"))}
    tf("apply", "create.tfplan")
    tf("plan", "-var", "tier=BASIC_SSD", "-out", "replace.tfplan")
    out["replace"] = json.loads(tf("show", "-json", "replace.tfplan"))
    return out


def test_fixtures_have_the_keys_of_real_terraform_output(real_plans: dict[str, dict]) -> None:
    real = real_plans["replace"]
    ours = json.loads(fixture("filestore_replace_tier").read_text())
    assert set(ours) == set(real) - {"relevant_attributes", "output_changes", "resource_drift", "checks"}
    assert ours["format_version"].split(".")[0] == real["format_version"].split(".")[0]
    rc_real, rc_ours = real["resource_changes"][0], ours["resource_changes"][0]
    assert set(rc_ours) == set(rc_real)
    assert set(rc_ours["change"]) == set(rc_real["change"])
    assert rc_ours["change"]["actions"] == rc_real["change"]["actions"] == ["delete", "create"]
    assert rc_ours["action_reason"] == rc_real["action_reason"]


def test_guard_reads_real_terraform_output(real_plans: dict[str, dict], tmp_path: Path, cli) -> None:
    create, replace = real_plans["create"], real_plans["replace"]
    assert evaluate(create, "filestore", "create").proceed
    assert evaluate(replace, "filestore", "update").proceed  # terraform_data holds no data
    # The same real document, as if the resource were the Filestore instance: refused, naming it.
    as_filestore = json.loads(json.dumps(replace).replace('"terraform_data"', '"google_filestore_instance"')
                              .replace("terraform_data.share", "google_filestore_instance.this"))
    path = tmp_path / "real.json"
    path.write_text(json.dumps(as_filestore))
    code, _, err = cli("guard", "--plan-json", path, "--module", "filestore", "--action", "update")
    assert code == 2 and "google_filestore_instance.this would be replaced (triggers_replace forces replacement)" in err


def test_evaluate_is_pure() -> None:
    doc = json.loads(fixture("filestore_replace_tier").read_text())
    before = json.dumps(doc, sort_keys=True)
    first = evaluate(doc, "filestore", "update")
    assert evaluate(doc, "filestore", "update") == first
    assert json.dumps(doc, sort_keys=True) == before
    with pytest.raises(BadInput):
        evaluate(doc, "filestore", "initialize")
