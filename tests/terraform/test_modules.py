"""Offline checks of modules/: parsing, formatting, conventions, wiring, module calls, and checkov.

There is no cloud and no provider binary here, so the modules are checked against real
artefacts: python-hcl2 parses every file, ``terraform fmt`` formats (when on PATH), and checkov
scans for security misconfigurations. The provider schema check is test_modules_schema.py, the
moved blocks of the refactor into child modules test_modules_moved.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, require
from tests.support.hcl import (
    ALL_DIRS, CHILD_DIRS, MODULE_DIRS, MODULES, SHARED, Module, call_args, call_errors, call_source, child_of, defaults,
    load_module, parse_file, refs, remote_outputs, unquote, write_caller, write_module,
)

TF_FILES = sorted(MODULES.rglob("*.tf"))
#: remote-state prefix (plan module) → module dir, for the architecture of the reading module.
REMOTE_DIR = {
    "tpu_vm": {"filestore": "filestore", "shared_pd": "shared_pd", "tpu": "tpu_vm"},  # tpu: its own slots
    "tpu_mig": {"filestore": "filestore", "shared_pd": "shared_pd",
                "mig": "tpu_mig"},  # mig: its own (shared_pd_kept_in_template)
}
#: The shared files besides the provider pins and var_*.tf that a module may link (modules/_shared/README.md).
SHARED_FILES = {"destroy_only.tf", "remote_state_mounts.tf", "outputs_hosts.tf", "outputs_scheduled.tf", "versions_override.tf",
                "versions_legacy_override.tf", "scheduled_build.tf"}


def test_every_module_is_there() -> None:
    assert sorted(p.name for p in MODULES.iterdir() if p.is_dir() and p != SHARED) == sorted(ALL_DIRS)
    assert len(TF_FILES) >= 4 * len(ALL_DIRS)


@pytest.mark.parametrize("path", TF_FILES, ids=lambda p: str(p.relative_to(MODULES)))
def test_every_tf_file_parses(path: Path) -> None:
    parsed = parse_file(path)
    assert parsed, f"{path} is empty"


def test_terraform_fmt() -> None:
    exe = shutil.which("terraform")
    require("terraform", exe is not None, "the HashiCorp release binary on PATH (CI's image has it; docs/terraform.md)")
    proc = subprocess.run([exe, "fmt", "-check", "-recursive", "-diff", str(MODULES)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "TF_CLI_CONFIG_FILE": os.devnull})
    assert proc.returncode == 0, f"terraform fmt would change:\n{proc.stdout}{proc.stderr}"


# ---- conventions (terraform-google-modules) ----

def _own_files(mod: Module, versions: str, extra: set[str]) -> dict[str, Any]:
    """The module's layout: main.tf, variables.tf, outputs.tf, versions.tf (a link to the shared
    pin ``versions``), the shared variables it links (``var_*.tf``) and the ``extra`` files it may
    have. Returns the merged ``terraform`` block (an override file adds to versions.tf's)."""
    files = set(mod.files)
    assert {"main.tf", "variables.tf", "outputs.tf", "versions.tf"} <= files
    assert os.readlink(mod.path / "versions.tf") == f"../_shared/{versions}", "one provider pin, linked"
    for name in sorted(files - {"main.tf", "variables.tf", "outputs.tf", "versions.tf"} - extra):
        assert (name.startswith("var_") or name in SHARED_FILES) and os.readlink(mod.path / name) == f"../_shared/{name}", \
            f"{mod.path.name}/{name}: only the four files, {sorted(extra)}, {sorted(SHARED_FILES)} and shared var_*.tf links"
    for name in ("main.tf", "variables.tf", "outputs.tf", *sorted(extra & files)):
        assert not (mod.path / name).is_symlink(), f"{mod.path.name}/{name} is the module's own file"
    [tf, *override] = mod.terraform
    assert len(override) == len([f for f in files if f.endswith("_override.tf")])
    merged = {**tf, "required_providers": [{k: v for block in mod.terraform for k, v in block["required_providers"][0].items()}]}
    for block in override:
        assert set(block) - {"__is_block__", "__comments__"} == {"required_providers"}, "the override only adds providers"
    return merged


@pytest.mark.parametrize("name", MODULE_DIRS)
def test_root_module_with_gcs_backend_and_pinned_providers(name: str) -> None:
    mod = load_module(name)
    # The legacy destroy-only node roots (those linking destroy_only.tf) keep provider 6.x: their
    # state holds google_tpu_node, removed in 7.0.0. Every other root pins ~> 8.7.
    legacy = "destroy_only.tf" in mod.files
    assert ("versions_legacy_override.tf" in mod.files) == legacy, "the legacy roots override the shared pin to < 7"
    # google-beta only where a resource needs it: an override file adds it to the shared pin
    tf = _own_files(mod, "versions.tf", {"moved.tf"})
    if "moved.tf" in mod.files:
        assert {k for k in mod.files["moved.tf"] if not k.startswith("__")} <= {"moved", "removed"}, \
            "moved.tf holds moved and removed blocks only (what a state's addresses become)"
    assert not [f for f, parsed in mod.files.items() if f != "moved.tf" and ("moved" in parsed or "removed" in parsed)]
    assert (mod.path / "README.md").is_file()
    assert unquote(tf["required_version"]) == ">= 1.5"
    [backend] = tf["backend"]
    assert [unquote(k) for k in backend if not k.startswith("__")] == ["gcs"]
    assert not [k for k in backend['"gcs"'] if not k.startswith("__")], "bucket and prefix come from -backend-config"
    providers = {k: v for k, v in tf["required_providers"][0].items() if not k.startswith("__")}
    want = {"google"} | ({"google-beta"} if name in ("tpu_vm", "tpu_mig") else set())
    assert set(providers) == want
    for prov, spec in providers.items():
        assert unquote(spec["source"]) == f"hashicorp/{prov}"
        assert unquote(spec["version"]) == (">= 5, < 7" if legacy else "~> 8.7")
    assert set(mod.providers) == want, "every required provider is configured (project from var.project_id)"


@pytest.mark.parametrize("name", CHILD_DIRS)
def test_child_module_without_backend_or_provider_config(name: str) -> None:
    """A child module's resources live in its caller's state, with its caller's provider."""
    mod = load_module(name)
    tf = _own_files(mod, "versions_child.tf", set())
    assert (mod.path / "README.md").is_file()
    assert unquote(tf["required_version"]) == ">= 1.5"
    assert "backend" not in tf and "cloud" not in tf, "a child module has no backend"
    providers = {k: v for k, v in tf["required_providers"][0].items() if not k.startswith("__")}
    assert set(providers) == {"google"}
    assert unquote(providers["google"]["source"]) == "hashicorp/google"
    assert unquote(providers["google"]["version"]) == "~> 8.7"
    assert mod.providers == {}, "providers come from the caller"
    assert mod.calls == {} and mod.moved == [], "children stay flat"
    assert not [k for k in mod.data if k[0] == "terraform_remote_state"], "state is read by the roots only"
    assert mod.resources, "a child module creates something"


def test_tpu_node_readme_says_why_the_pin() -> None:
    text = (MODULES / "tpu_node" / "README.md").read_text()
    assert re.search(r"7\.0 removed .*google_tpu_node|google_tpu_node.* removed in .*7\.0", text, re.S)


@pytest.mark.parametrize("name", ALL_DIRS)
def test_variables_have_description_type_and_validation(name: str) -> None:
    mod = load_module(name)
    for var, body in mod.variables.items():
        assert unquote(body.get("description", "")).strip(), f"{name}: variable {var} has no description"
        assert "type" in body, f"{name}: variable {var} has no type"
        if body["type"] != "bool":
            assert body.get("validation"), f"{name}: variable {var} ({body['type']}) can be wrong but has no validation"
        for val in body.get("validation", []):
            assert refs(val["condition"]) <= {("var", var, "")}, f"{name}: {var}'s validation may refer only to itself"
            assert unquote(val["error_message"]).endswith("."), f"{name}: {var}: error_message must be a sentence"


@pytest.mark.parametrize("name", ALL_DIRS)
def test_outputs_have_descriptions(name: str) -> None:
    for out, body in load_module(name).outputs.items():
        assert unquote(body.get("description", "")).strip(), f"{name}: output {out} has no description"


@pytest.mark.parametrize("name", ALL_DIRS)
def test_readme_lists_every_input_and_output(name: str) -> None:
    mod = load_module(name)
    text = (mod.path / "README.md").read_text()
    assert "## Inputs" in text and "## Outputs" in text
    inputs = text.split("## Inputs", 1)[1].split("## Outputs", 1)[0]
    outputs = text.split("## Outputs", 1)[1]
    rows_in = set(re.findall(r"^\| `(\w+)` \|", inputs, re.M))
    rows_out = set(re.findall(r"^\| `(\w+)` \|", outputs, re.M))
    assert rows_in == set(mod.variables), f"{name}/README.md Inputs table != variables.tf"
    assert rows_out == set(mod.outputs), f"{name}/README.md Outputs table != outputs.tf"


# ---- wiring: variables, locals, remote state ----

def _used(mod: Module, kind: str) -> set[str]:
    # a variable's own validation refers to itself: that is not a use
    return {name for k, name, _ in refs(mod.code(with_variables=False)) if k == kind}


@pytest.mark.parametrize("kind, noun, declared", [
    pytest.param("var", "variable", "declared", id="variable"),
    pytest.param("local", "local", "defined", id="local"),
])
@pytest.mark.parametrize("name", ALL_DIRS)
def test_every_variable_and_local_declared_and_used(name: str, kind: str, noun: str, declared: str) -> None:
    mod = load_module(name)
    used = _used(mod, kind)
    names = set(mod.variables if kind == "var" else mod.locals)
    assert used - names == set(), f"{name}: {kind}.X used but not {declared}"
    assert names - used == set(), f"{name}: {noun} {declared} but never used"


@pytest.mark.parametrize("name", ALL_DIRS)
def test_resource_and_data_references_exist(name: str) -> None:
    mod = load_module(name)
    for kind, a, b in refs(mod.code()):
        if kind == "resource":
            assert (a, b) in mod.resources, f"{name}: {a}.{b} is referenced but not defined"
        if kind == "data":
            assert (a, b) in mod.data, f"{name}: data.{a}.{b} is referenced but not defined"
        if kind == "module":
            assert a in mod.calls, f"{name}: module.{a} is referenced but not called"
            assert b == "" or b in child_of(mod, a).outputs, f"{name}: module.{a}.{b} is not an output of the child"


def _remote_prefix(body: dict[str, Any]) -> tuple[str, str]:
    config = body["config"]
    return config["bucket"], unquote(config["prefix"])


@pytest.mark.parametrize("name", sorted(REMOTE_DIR))
def test_remote_state_outputs_exist_in_the_source_module(name: str) -> None:
    mod = load_module(name)
    states = {n: body for (t, n), body in mod.data.items() if t == "terraform_remote_state"}
    assert set(states) == set(REMOTE_DIR[name]), f"{name} reads the state of {sorted(states)}"
    for state, body in states.items():
        assert unquote(body["backend"]) == "gcs"
        bucket, prefix = _remote_prefix(body)
        assert bucket == "${var.state_bucket}"
        assert prefix == "${var.env_name}/" + state, "prefix is <env>/<plan module> (the pipeline's -backend-config)"
    everything = [body for parsed in mod.files.values() for body in parsed.values()]
    used = remote_outputs(everything)
    assert {s for s, _ in used} == set(states), f"{name}: a remote state is read but never used"
    for state, output in used:
        source = load_module(REMOTE_DIR[name][state])
        assert output in source.outputs, f"{name} reads {state}.outputs.{output}, which modules/{source.path.name} does not output"


def test_remote_state_check_catches_a_missing_output(tmp_path: Path) -> None:
    mod = write_module(tmp_path, 'output "x" {\n  value = data.terraform_remote_state.filestore.outputs.nfs_ipp\n}\n')
    used = remote_outputs([b for parsed in mod.files.values() for b in parsed.values()])
    assert used == {("filestore", "nfs_ipp")} and "nfs_ipp" not in load_module("filestore").outputs


# ---- module calls: roots → child modules ----

#: Which roots call which child module (by call name). A child that nobody calls is dead code.
#: Call names are unique across roots: checkov reports a child's resource by its address
#: (module.<call>.<type>.<name>), so two roots with the same call name would leave one unreported.
CALLS = {
    "mig": {},
    "tpu_vm": {"tpu_vm_identity": "host_identity", "tpu_vm_firewall": "host_firewall", "ttl": "ttl",
               "health": "health"},
    "shared_pd": {"seeder_identity": "host_identity"},
    "tpu_node": {},
    "filestore": {},
    "tpu_mig_access": {"slice_identity": "host_identity", "slice_firewall": "host_firewall"},
    "tpu_mig": {"slice_ttl": "ttl", "slice_health": "health"},
    "dashboard": {},
}


@pytest.mark.parametrize("name", MODULE_DIRS)
def test_module_calls_pass_declared_and_required_variables(name: str) -> None:
    mod = load_module(name)
    assert {call: call_source(mod, call).name for call in mod.calls} == CALLS[name]
    assert call_errors(mod) == []
    for call in mod.calls:
        child = child_of(mod, call)
        assert call_source(mod, call).parent == MODULES and child.path.name in CHILD_DIRS
        for arg in call_args(mod, call):
            # passing what the child has a default for is fine; but a root passes no defaults on by hand
            assert arg in child.variables


def test_every_child_module_is_called_and_call_names_are_unique() -> None:
    called = {child for calls in CALLS.values() for child in calls.values()}
    assert called == set(CHILD_DIRS)
    names = [call for calls in CALLS.values() for call in calls]
    assert len(names) == len(set(names))


def test_call_check_catches_an_unknown_or_missing_input(tmp_path: Path) -> None:
    root = write_caller(tmp_path, "fw", "host_firewall", {
        "network": "default", "name": "worker-x", "network_tag": "worker-x",
        "internal_description": "between the workers", "internal_ranges": ["10.0.0.0/8"],
    }, '''
module "gone" {
  source = "../host_nothing"
}
module "remote" {
  source  = "terraform-google-modules/network/google"
  version = "9.0.0"
}
''')
    assert call_errors(root) == [
        "root: module.fw: internal_ranges is not a variable of ../host_firewall",
        "root: module.fw: required variable hosts of ../host_firewall is not passed",
        "root: module.gone: source ../host_nothing is not a module directory",
        "root: module.remote: source 'terraform-google-modules/network/google' is not a sibling directory (../<child>)",
    ]


def test_child_modules_are_not_plan_modules() -> None:
    """builder/inputs/tfvars.py writes tfvars for plan modules only; a child module gets its inputs from
    its caller, so no plan module may map to a child's directory."""
    from builder.planning import plan
    from builder.config import load
    from tests.conftest import EXAMPLES, NODE, SHIPPED
    seen = set()
    for env in [SHIPPED, NODE, *sorted(EXAMPLES.glob("*.env"))]:
        settings = load(env)
        for module in plan.make_plan(settings, "create").modules:
            seen.add(plan.module_dir(settings, module).removeprefix("modules/"))
    assert seen == set(MODULE_DIRS), "every root is some plan module's directory, and no child is"


# ---- checkov ----

def _checkov() -> str | None:
    for candidate in (os.environ.get("TPUBUILD_CHECKOV"), shutil.which("checkov"), "/opt/checkov-venv/bin/checkov"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def checkov_report() -> dict[str, Any]:
    exe = _checkov()
    require("checkov", exe is not None, "pip install checkov in its own venv; or set TPUBUILD_CHECKOV")
    assert exe is not None
    # Not --quiet: the skipped checks (with their inline reasons) are wanted in the report.
    proc = subprocess.run([exe, "--framework", "terraform", "--skip-download", "-d", str(MODULES), "--compact",
                           "-o", "json"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    reports = report if isinstance(report, list) else [report]
    [terraform] = [r for r in reports if r.get("check_type") == "terraform"]
    return terraform


INLINE_SKIP = re.compile(r"#\s*checkov:skip=(CKV2?_[A-Z]+_\d+)(?::(.*))?")


@pytest.mark.checkov
def test_checkov_finds_no_failed_check(checkov_report: dict[str, Any]) -> None:
    summary = checkov_report["summary"]
    failed = [f"{f['check_id']} {f['check_name']} ({f['resource']} in {f['file_path']})"
              for f in checkov_report["results"]["failed_checks"]]
    assert failed == []
    assert summary["parsing_errors"] == 0
    assert summary["passed"] >= 40, "checkov scanned the modules"
    # a child module's resource is reported as module.<call>.<type>.<name>
    scanned = {re.sub(r"^(module\.\w+\.)+", "", r["resource"]).split(".")[0] for r in checkov_report["results"]["passed_checks"]}
    assert {"google_compute_firewall", "google_compute_instance_template", "google_project_iam_member"} <= scanned
    # every child module is scanned as each root instantiates it, with the root's arguments
    instances = {(r["resource"], r.get("caller_file_path")) for r in checkov_report["results"]["passed_checks"]}
    for root, calls in CALLS.items():
        for call, child in calls.items():
            for (tf_type, res), body in load_module(child).resources.items():
                if tf_type in ("google_service_account", "google_service_account_iam_member", "terraform_data",
                               "google_cloud_scheduler_job"):
                    continue  # types checkov has no check for
                seen = any(r.startswith(f"module.{call}.{tf_type}.{res}") and caller == f"/{root}/main.tf"
                           for r, caller in instances)
                if _flag_count(body, load_module(root), call) == 0:
                    # the call creates none (host_identity's checkpoints for the seeder): nothing to scan,
                    # and checkov must not report what this root does not create
                    assert not seen, f"checkov scanned module.{call}.{tf_type}.{res} of {root}, which has count 0"
                    continue
                assert seen, f"checkov did not scan module.{call}.{tf_type}.{res} of {root}"


_FLAG_COUNT = re.compile(r"^\$\{var\.(\w+) \? 1 : 0\}$")


def _flag_count(body: dict[str, Any], root: Module, call: str) -> int | None:
    """A child resource's ``count = var.X ? 1 : 0`` as ``call`` of ``root`` sets X (its argument,
    else the child's default), when that is a literal bool; None for any other count."""
    flag = _FLAG_COUNT.match(str(body.get("count", "")))
    if not flag:
        return None
    value = {**defaults(child_of(root, call)), **call_args(root, call)}.get(flag.group(1))
    return int(value) if isinstance(value, bool) else None


@pytest.mark.checkov
def test_every_checkov_skip_is_inline_and_justified(checkov_report: dict[str, Any]) -> None:
    inline: dict[str, set[str]] = {}  # one check may be skipped in several modules, each with its reason
    for tf in TF_FILES:
        for m in INLINE_SKIP.finditer(tf.read_text()):
            reason = (m.group(2) or "").strip()
            assert len(reason) >= 30, f"{tf}: checkov:skip={m.group(1)} needs a real reason"
            inline.setdefault(m.group(1), set()).add(reason)
    skipped = checkov_report["results"].get("skipped_checks", [])
    assert len(skipped) == checkov_report["summary"]["skipped"]
    for s in skipped:
        assert s["check_id"] in inline, f"{s['check_id']} skipped without an inline checkov:skip"
        assert s["check_result"].get("suppress_comment", "").strip() in inline[s["check_id"]]
    assert {s["check_id"] for s in skipped} == set(inline), "an inline skip that checkov no longer needs: remove it"
