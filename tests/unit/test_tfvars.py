"""builder.inputs.tfvars and modules/*/variables.tf speak one language, and a resize touches only the TPU
and the MIG's size.

The modules' variables are read from the real .tf files with python-hcl2; the tfvars come from
real values.env files through builder.config.load.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builder.config import load
from builder.facts.errors import BadInput, ConfigError
from builder.inputs import tfvars
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES, NODE, SHIPPED
from tests.support.hcl import CHILD_DIRS, Module, call_args, child_of, load_module, unquote

ENV_FILES = [SHIPPED, NODE, *sorted(EXAMPLES.glob("*.env"))]


def _module_for(settings: Any, plan_module: str) -> Module:
    return load_module(module_dir(settings, plan_module).removeprefix("modules/"))


def _type_ok(tf_type: str, value: Any) -> bool:
    if tf_type == "string":
        return isinstance(value, str)
    if tf_type == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tf_type == "bool":
        return isinstance(value, bool)
    if tf_type == "${map(string)}":
        return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    if m := re.fullmatch(r"\$\{object\(\{(.*)\}\)\}", tf_type):  # flat objects of primitives; null allowed
        fields = dict(re.findall(r"(\w+) = (\w+)", m.group(1)))
        return value is None or (isinstance(value, dict) and set(value) == set(fields)
                                 and all(_type_ok(fields[k], v) for k, v in value.items()))
    raise AssertionError(f"test does not know Terraform type {tf_type}")


# A few validation shapes we can evaluate in Python, so the builder is checked against the
# modules' own rules (Terraform's RE2 and Python's re agree on these simple patterns).
_REGEX = re.compile(r'^\$\{(?:var\.(\w+) == "" \|\| )?can\(regex\("(.*)", var\.(\w+)\)\)\}$')
_CONTAINS = re.compile(r'^\$\{contains\(\[(.*)\], var\.(\w+)\)\}$')


def _validation_verdicts(mod: Module, values: dict[str, Any]) -> list[tuple[str, bool]]:
    verdicts = []
    for name, body in mod.variables.items():
        for val in body.get("validation", []):
            cond = val["condition"]
            if m := _REGEX.match(cond):
                empty_ok, pattern, var = m.groups()
                if var not in values:  # a child's input the caller computes (checked elsewhere)
                    continue
                value = values[var]
                pattern = pattern.encode().decode("unicode_escape")
                ok = (empty_ok is not None and value == "") or re.search(pattern, value) is not None
                verdicts.append((name, ok))
            elif (m := _CONTAINS.match(cond)) and m.group(2) in values:
                options = [unquote(o.strip()) for o in m.group(1).split(",")]
                verdicts.append((name, values[m.group(2)] in options))
    return verdicts


@pytest.mark.parametrize("env", ENV_FILES, ids=lambda p: p.name)
def test_tfvars_set_exactly_the_declared_variables(env: Path) -> None:
    settings = load(env)
    generated = tfvars.all_for(settings)
    assert set(generated) == ({"tpu", "filestore", "shared_pd", "mig", "dashboard"} if settings.arch in ("node", "mig")
                              else {"tpu", "filestore", "shared_pd", "dashboard"})
    for plan_module, values in generated.items():
        mod = _module_for(settings, plan_module)
        declared = set(mod.variables)
        assert set(values) - declared == set(), f"{plan_module}: the builder sets variables the module does not declare"
        required = {n for n, b in mod.variables.items() if "default" not in b}
        assert required - set(values) == set(), f"{plan_module}: the builder leaves required variables unset"
        assert set(values) == declared, f"{plan_module}: the builder must set every variable (the file is the whole input)"
        for name, value in values.items():
            assert _type_ok(mod.variables[name]["type"], value), f"{plan_module}.{name}={value!r} is not {mod.variables[name]['type']}"


@pytest.mark.parametrize("env", ENV_FILES, ids=lambda p: p.name)
def test_tfvars_pass_the_modules_own_validations(env: Path) -> None:
    settings = load(env)
    checked = 0
    for plan_module, values in tfvars.all_for(settings).items():
        verdicts = _validation_verdicts(_module_for(settings, plan_module), values)
        assert [name for name, ok in verdicts if not ok] == [], f"{plan_module}: the module would reject these"
        checked += len(verdicts)
    assert checked >= 15, "the validation evaluator understood the modules' conditions"


def test_validation_evaluator_rejects_a_bad_value() -> None:
    mod = load_module("filestore")
    values = tfvars.for_module(load(NODE), "filestore")
    assert all(ok for _, ok in _validation_verdicts(mod, values))
    bad = {**values, "tier": "PREMIUM", "name": "Nfs_1", "zone": "europe-west4"}
    assert {n for n, ok in _validation_verdicts(mod, bad) if not ok} == {"tier", "name", "zone"}


def test_strict_rule_fails_when_either_side_changes(tmp_path: Path) -> None:
    """The rule in test_tfvars_set_exactly_the_declared_variables, against a module that renamed
    one variable and added another."""
    from tests.support.hcl import load_dir
    for tf in load_module("shared_pd").path.glob("*.tf"):  # its own files and its shared var_*.tf links
        (tmp_path / tf.name).write_text(tf.read_text())
    src = (tmp_path / "variables.tf").read_text()
    (tmp_path / "variables.tf").write_text(src.replace('variable "size_gb"', 'variable "disk_size_gb"')
                                           + 'variable "extra" {\n  type = string\n}\n')
    declared = set(load_dir(tmp_path).variables)
    values = set(tfvars.for_module(load(NODE), "shared_pd"))
    assert values - declared == {"size_gb"} and declared - values == {"disk_size_gb", "extra"}


# ---- child modules: no tfvars of their own; their inputs come from the roots' ----

@pytest.mark.parametrize("env", ENV_FILES, ids=lambda p: p.name)
def test_child_modules_get_no_tfvars(env: Path) -> None:
    settings = load(env)
    dirs = {module_dir(settings, m).removeprefix("modules/") for m in tfvars.all_for(settings)}
    assert dirs and not dirs & set(CHILD_DIRS)
    for child in CHILD_DIRS:
        with pytest.raises(BadInput, match=child):
            tfvars.for_module(settings, child)


_INTERP = re.compile(r"\$\{var\.(\w+)\}")


def _render(arg: Any, values: dict[str, Any]) -> Any:
    """A call argument with the root's tfvars put in: ``${var.X}``, a string made of literal text
    and ``${var.X}``, or a list of those. None when it needs more (locals, data, functions)."""
    if isinstance(arg, list):
        items = [_render(a, values) for a in arg]
        return None if any(i is None for i in items) else items
    if not isinstance(arg, str):
        return arg
    if m := re.fullmatch(r"\$\{var\.(\w+)\}", arg):
        return values[m.group(1)]
    text = unquote(arg)
    if arg.startswith('"') and "${" not in _INTERP.sub("", text):
        return _INTERP.sub(lambda m: str(values[m.group(1)]), text)
    return None


@pytest.mark.parametrize("env", ENV_FILES, ids=lambda p: p.name)
def test_tfvars_pass_the_child_modules_validations_through_the_calls(env: Path) -> None:
    """The values a root hands its children (its own tfvars, literal text around them) pass the
    children's validations: account ids, env name, buckets, condition title."""
    settings = load(env)
    checked = set()
    for plan_module, values in tfvars.all_for(settings).items():
        mod = _module_for(settings, plan_module)
        for call in mod.calls:
            child = child_of(mod, call)
            rendered = {k: v for k, v in ((k, _render(a, values)) for k, a in call_args(mod, call).items()) if v is not None}
            verdicts = _validation_verdicts(child, rendered)
            assert [n for n, ok in verdicts if not ok] == [], f"{plan_module}: module.{call} would reject these"
            checked |= {f"{call}.{n}" for n, _ in verdicts}
    want = {"seeder_identity.account_id", "seeder_identity.workspace_condition_title", "seeder_identity.dataset_bucket"}
    assert want <= checked
    if settings.arch == "node":  # destroy only: its roots call nothing
        return
    hosts = {"vm": "tpu_vm", "mig": "slice"}[settings.arch]
    assert {f"{hosts}_identity.account_id", f"{hosts}_identity.state_bucket", f"{hosts}_firewall.network",
            f"{hosts}_firewall.name", f"{hosts}_firewall.hosts"} <= checked


def test_child_validation_rejects_what_the_api_would() -> None:
    mod = load_module("host_firewall")
    good = {"network": "default", "name": "w" * 54, "network_tag": "w", "hosts": "TPU VM hosts"}
    assert all(ok for _, ok in _validation_verdicts(mod, good))
    bad = {**good, "name": "w" * 55, "hosts": "hosts; rm"}
    assert {n for n, ok in _validation_verdicts(mod, bad) if not ok} == {"name", "hosts"}


# ---- the legacy node roots ----

@pytest.mark.parametrize("module", ["tpu", "mig"])
def test_node_roots_get_only_what_a_destroy_needs(module: str) -> None:
    """modules/tpu_node and modules/mig are destroy only: the provider's project and zone, and
    nothing of the TPU Node or its workers (their values may be anything a seed-era file held)."""
    s = load(NODE)
    assert tfvars.for_module(s, module) == {"project_id": s.project_id, "zone": s.zone}
    assert set(_module_for(s, module).variables) == {"project_id", "zone"}


# ---- values and refusals ----

def test_names_and_derived_values(make_env: Callable[..., Path]) -> None:
    s = load(SHIPPED)
    v = tfvars.all_for(s)
    assert v["tpu"]["name"] == s.tpu_name and v["filestore"]["name"] == s.filestore_name
    assert v["shared_pd"]["name"] == s.shared_pd_name
    assert all(values["labels"] == s.labels for m, values in v.items() if m != "dashboard")
    assert json.loads(v["dashboard"]["dashboard_json"])["labels"] == s.labels  # the dashboard's own labels
    assert v["tpu"]["state_bucket"] == s.state_bucket and v["tpu"]["env_name"] == s.env_name
    assert v["tpu"]["service_account_id"] == f"tb-{s.env_name}-vm"
    vm = tfvars.all_for(load(EXAMPLES / "vm-v4-32.env"))
    assert vm["tpu"]["service_account_id"] == "tb-v4-pod-vm"
    assert vm["tpu"]["dataset_bucket"] == "my-tpu-project-datasets"
    mig = load(EXAMPLES / "mig-v6e-16-spot.env")
    assert tfvars.for_module(mig, "tpu")["service_account_id"] == mig.worker_service_account_id
    assert tfvars.for_module(mig, "mig")["vm_count"] == mig.hosts
    longest = load(make_env(SHIPPED, ENV_BUILD_NAME="a" * 24))
    assert 6 <= len(tfvars.service_account_id(longest)) <= 30
    # the seeder's account (shared_pd) and the hosts' (tpu_vm, tpu_mig_access) come from Settings, once
    assert v["shared_pd"]["seeder_service_account_id"] == s.seeder_service_account_id == f"tb-{s.env_name}-sd"
    assert v["tpu"]["service_account_id"] == s.worker_service_account_id
    assert s.seeder_service_account == f"tb-{s.env_name}-sd@{s.project_id}.iam.gserviceaccount.com"
    assert 6 <= len(longest.seeder_service_account_id) <= 30
    assert v["shared_pd"]["dataset_bucket"] == v["tpu"]["dataset_bucket"] and v["shared_pd"]["state_bucket"] == s.state_bucket


def test_mig_reader_role_id_is_legal_for_any_env_name() -> None:
    """IAM role ids allow [a-zA-Z0-9_.]{3,64}: no hyphens, which env names have."""
    role = next(b for (t, _), b in load_module("tpu_mig_access").resources.items() if t == "google_project_iam_custom_role")
    assert unquote(role["role_id"]) == 'tpubuild_${replace(var.env_name, "-", "_")}_slice_reader'
    for env in ("a", "tpu-dev1", "a-" * 11 + "bc"):
        role_id = f"tpubuild_{env.replace('-', '_')}_slice_reader"
        assert re.fullmatch(r"[a-zA-Z0-9_.]{3,64}", role_id), role_id


@pytest.mark.parametrize(("restore", "snapshot"), [("", ""), ("latest", ""), ("pd-tpu-dev1-20240101", "pd-tpu-dev1-20240101")])
def test_snapshot_from_shared_pd_restore(make_env: Callable[..., Path], restore: str, snapshot: str) -> None:
    values = tfvars.for_module(load(make_env(NODE, SHARED_PD_RESTORE=restore)), "shared_pd")
    assert values["snapshot"] == snapshot


def test_dataset_bucket_and_empty_dataset(make_env: Callable[..., Path]) -> None:
    assert tfvars.dataset_bucket("gs://b-1/x/y/*") == "b-1"
    assert tfvars.dataset_bucket("gs://b-1") == "b-1"
    assert tfvars.for_module(load(make_env(SHIPPED, GCS_DATASET="")), "tpu")["dataset_bucket"] == ""


def test_setup_script_paths(make_env: Callable[..., Path], tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "setup.sh").write_text("#!/bin/bash\n")
    (tmp_path / "models" / "roberta").mkdir(parents=True)
    (tmp_path / "models" / "roberta" / "prep.sh").write_text("#!/bin/bash\n")
    assert tfvars.for_module(load(make_env(SHIPPED, MIG_SETUP_SCRIPT="scripts/setup.sh")), "tpu")["setup_script"] == "scripts/setup.sh"
    assert tfvars.for_module(load(make_env(SHIPPED, MIG_SETUP_SCRIPT="roberta/prep.sh")), "tpu")["setup_script"] == "models/roberta/prep.sh"
    env = make_env(SHIPPED, MIG_SETUP_SCRIPT="scripts/missing.sh")
    with pytest.raises(ConfigError) as exc:
        tfvars.for_module(load(env), "tpu")
    assert str(exc.value).startswith(f"{env}:") and "MIG_SETUP_SCRIPT" in str(exc.value)


def test_reserved_goes_to_the_tpu_vm_and_is_refused_on_node(make_env: Callable[..., Path]) -> None:
    """google_tpu_v2_vm has scheduling_config.reserved, google_tpu_node has none (provider 6.50):
    vm passes it through (and the module accepts it), node is refused by config, on the key's line."""
    env = make_env(EXAMPLES / "vm-v4-32.env", TPU_RESERVED="true", TPU_SPOT="false", TPU_PREEMPTIBLE="false")
    settings = load(env)
    values = tfvars.for_module(settings, "tpu")
    assert (values["reserved"], values["spot"], values["preemptible"]) == (True, False, False)
    assert all(ok for _, ok in _validation_verdicts(_module_for(settings, "tpu"), values))
    node = make_env(NODE, TPU_RESERVED="true")
    with pytest.raises(ConfigError) as exc:
        load(node)
    message = str(exc.value)
    assert message.startswith(f"{node}:") and "TPU_RESERVED" in message and "\n" not in message
    assert "TPU_PREEMPTIBLE" in message and 'TPU_ARCH="vm"' in message


def test_mig_is_not_a_vm_module() -> None:
    with pytest.raises(BadInput, match="mig"):
        tfvars.for_module(load(EXAMPLES / "vm-v4-32.env"), "mig")
