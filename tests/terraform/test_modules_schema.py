"""modules/ against the real provider schema: hashicorp/google and google-beta 8.7.0, extracted
from the cdktn bindings by tools/provider_schema.py into tests/data/provider_schema.json, validate
every argument and block (no cloud and no provider binary here)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.support.hcl import (
    ALL_DIRS, META_ATTRS, META_BLOCKS, Module, body_parts, expressions, load_module, unquote, write_module,
)

SCHEMA = json.loads((REPO / "tests" / "data" / "provider_schema.json").read_text())


def _provider_of(attrs: dict[str, Any]) -> str:
    raw = attrs.get("provider", "google")
    return unquote(raw).removeprefix("${").removesuffix("}").split(".")[0]


def schema_errors(where: str, attrs_blocks: tuple[dict[str, Any], dict[str, list[tuple[dict[str, Any], bool]]]],
                  schema: dict[str, Any], top: bool) -> list[str]:
    attrs, blocks = attrs_blocks
    errors: list[str] = []
    for name in attrs:
        if top and name in META_ATTRS:
            continue
        if name not in schema["attributes"]:
            what = "a block, not an argument" if name in schema["blocks"] else "not an argument"
            errors.append(f"{where}: {name} is {what}")
    for name, spec in schema["attributes"].items():
        if spec["required"] and name not in attrs:
            errors.append(f"{where}: required argument {name} is missing")
    for name, occurrences in blocks.items():
        if top and name in META_BLOCKS:
            continue
        if name not in schema["blocks"]:
            errors.append(f"{where}: {name} is not a block of this resource")
            continue
        sub = schema["blocks"][name]
        if sub["max_one"] and len(occurrences) > 1:
            errors.append(f"{where}: at most one {name} block")
        for i, (body, _) in enumerate(occurrences):
            errors += schema_errors(f"{where}.{name}[{i}]", body_parts(body), sub, top=False)
    for name, spec in schema["blocks"].items():
        if spec["required"] and name not in blocks:
            errors.append(f"{where}: required block {name} is missing")
    return errors


def module_schema_errors(mod: Module) -> list[str]:
    errors: list[str] = []
    for section, items in (("resources", mod.resources), ("data_sources", mod.data)):
        for (tf_type, name), body in items.items():
            if not tf_type.startswith("google_"):
                continue
            attrs, blocks = body_parts(body)
            provider = _provider_of(attrs)
            schema = SCHEMA[provider][section].get(tf_type)
            where = f"{mod.path.name}: {tf_type}.{name} ({provider})"
            if schema is None:
                errors.append(f"{where}: {tf_type} is not a {section[:-1]} of {provider} {SCHEMA['_stamp']['providers'][provider]}")
                continue
            errors += schema_errors(where, (attrs, blocks), schema, top=True)
    return errors


def test_schema_is_stamped() -> None:
    stamp = SCHEMA["_stamp"]
    assert stamp["packages"] == {"@cdktn/provider-google": "21.1.0", "@cdktn/provider-google-beta": "21.1.0"}
    assert stamp["providers"] == {"google": "hashicorp/google 8.7.0", "google-beta": "hashicorp/google-beta 8.7.0"}
    assert stamp["tool"].startswith("tools/provider_schema.py")
    # google_tpu_v2_vm is a beta-only resource; google_tpu_node was removed in 7.0.0
    assert "google_tpu_v2_vm" in SCHEMA["google-beta"]["resources"]
    assert "google_tpu_v2_vm" not in SCHEMA["google"]["resources"]
    assert "google_tpu_node" not in SCHEMA["google-beta"]["resources"]


def test_schema_covers_every_type_the_modules_use() -> None:
    used = {(sec, t) for name in ALL_DIRS for sec, items in (("resources", load_module(name).resources),
            ("data_sources", load_module(name).data)) for (t, _) in items if t.startswith("google_")}
    have = {(sec, t) for p in ("google", "google-beta") for sec in ("resources", "data_sources") for t in SCHEMA[p][sec]}
    assert used <= have, "regenerate: python tools/provider_schema.py --out tests/data/provider_schema.json"


@pytest.mark.parametrize("name", ALL_DIRS)
def test_arguments_and_blocks_exist_in_the_provider_schema(name: str) -> None:
    assert module_schema_errors(load_module(name)) == []


@pytest.mark.parametrize("name", ALL_DIRS)
def test_referenced_resource_attributes_exist(name: str) -> None:
    mod = load_module(name)
    for expr in expressions(mod.code()):
        for tf_type, res, attr in re.findall(r"(?<![\w.])(google_\w+)\.(\w+)(?:\[[^\]]*\])?\.(\w+)", expr):
            attrs, _ = body_parts(mod.resources[(tf_type, res)])
            schema = SCHEMA[_provider_of(attrs)]["resources"][tf_type]
            known = set(schema["attributes"]) | set(schema["blocks"]) | set(schema["computed"])
            assert attr in known, f"{name}: {tf_type}.{res}.{attr} is not an attribute of {tf_type}"


BROKEN = '''
resource "google_compute_firewall" "f" {
  name          = "x"
  source_ranges = ["10.0.0.0/8"]
  allow {
    protocol = "tcp"
    portz    = ["22"]
  }
  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
  dynamic "deny" {
    for_each = []
    content {
      ports = ["1"]
    }
  }
  colour = "blue"
}
resource "google_tpu_v2_vm" "t" {
  name            = "x"
  runtime_version = "y"
}
'''


def test_schema_check_catches_what_it_should(tmp_path: Path) -> None:
    errors = "\n".join(module_schema_errors(write_module(tmp_path / "broken", BROKEN)))
    assert "required argument network is missing" in errors
    assert "allow[0]: portz is not an argument" in errors
    assert "at most one log_config block" in errors
    assert "deny[0]: required argument protocol is missing" in errors, "dynamic blocks are checked too"
    assert "colour is not an argument" in errors
    assert "google_tpu_v2_vm is not a resource of google hashicorp/google 8.7.0" in errors


@pytest.mark.parametrize("lib", ["cdktn", "cdktf"])
def test_schema_tool_reads_a_jsii_assembly(tmp_path: Path, lib: str) -> None:
    """tools/provider_schema.py on a miniature assembly shaped like the cdktn (and older cdktf) ones."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("provider_schema", REPO / "tools" / "provider_schema.py")
    assert spec and spec.loader
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    link = "{@link https://registry.terraform.io/providers/hashicorp/google/8.7.0/docs/resources/x_thing google_x_thing}"
    p = f"@{lib}/provider-google.xThing."

    def prop(name: str, jtype: dict[str, Any], optional: bool, anchor: str) -> dict[str, Any]:
        remark = f"Docs at Terraform Registry: {{@link https://x/x_thing#{anchor} XThing#{anchor}}}"
        return {"name": name, "type": jtype, "docs": {"remarks": remark}, **({"optional": True} if optional else {})}

    types = {
        p + "XThing": {"kind": "class", "base": f"{lib}.TerraformResource", "docs": {"summary": f"Represents a {link}."},
                       "initializer": {"parameters": [{"name": "config", "type": {"fqn": p + "XThingConfig"}}]},
                       "properties": [{"name": "selfLink", "immutable": True, "type": {"primitive": "string"}}]},
        p + "XThingConfig": {"kind": "interface", "datatype": True, "interfaces": [f"{lib}.TerraformMetaArguments"], "properties": [
            prop("machineType", {"primitive": "string"}, False, "machine_type"),
            prop("ipv6Access", {"primitive": "boolean"}, True, "ipv6_access"),
            prop("bootDisk", {"fqn": p + "XThingBootDisk"}, False, "boot_disk"),
            prop("nic", {"union": {"types": [{"fqn": f"{lib}.IResolvable"}, {"collection": {"kind": "array", "elementtype": {"fqn": p + "XThingNic"}}}]}}, True, "network_interface"),
        ]},
        p + "XThingBootDisk": {"kind": "interface", "datatype": True, "properties": [prop("sizeGb", {"primitive": "number"}, True, "size_gb")]},
        p + "XThingNic": {"kind": "interface", "datatype": True, "properties": [prop("network", {"primitive": "string"}, False, "network")]},
    }
    asm = tool.Assembly({"name": f"@{lib}/provider-google", "version": "21.1.0", "types": types})
    out = tool.extract({"google": asm}, {("resources", "google_x_thing")})
    thing = out["google"]["resources"]["google_x_thing"]
    assert thing["attributes"] == {"ipv6_access": {"required": False}, "machine_type": {"required": True}}
    assert thing["blocks"]["boot_disk"]["required"] is True and thing["blocks"]["boot_disk"]["max_one"] is True
    assert thing["blocks"]["network_interface"] == {"attributes": {"network": {"required": True}}, "blocks": {},
                                                    "required": False, "max_one": False}
    assert thing["computed"] == {"self_link": []}
    assert out["_stamp"]["providers"] == {"google": "hashicorp/google 8.7.0"}
