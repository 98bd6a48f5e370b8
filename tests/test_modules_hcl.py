"""A small reader for our Terraform modules on top of python-hcl2, and tests of the reader itself.

python-hcl2 (>= 7) turns a .tf file into dicts. In its output labels and string literals keep
their quotes (``'"gcs"'``), expressions are wrapped in ``${...}``, and blocks are lists of dicts
marked ``__is_block__``. The other module tests use :func:`load_module`, :func:`refs` and
:func:`body_parts` from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import hcl2
import pytest

from tests.conftest import REPO

MODULES = REPO / "modules"
MODULE_DIRS = ("tpu_node", "tpu_vm", "filestore", "shared_pd", "mig")
#: Meta-arguments Terraform accepts in every resource / data block; not provider arguments.
META_ATTRS = frozenset({"count", "for_each", "provider", "depends_on"})
META_BLOCKS = frozenset({"lifecycle", "connection", "provisioner", "dynamic"})


def unquote(text: Any) -> Any:
    if isinstance(text, str) and len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1]
    return text


#: python-hcl2 8 marks blocks with __is_block__; 7 did not (there, a list of dicts is a block).
_MARKS_BLOCKS = int(getattr(hcl2, "__version__", "8").split(".")[0]) >= 8


def is_block_list(value: Any) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(v, dict) and (v.get("__is_block__") or not _MARKS_BLOCKS) for v in value))


def body_parts(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[tuple[dict[str, Any], bool]]]]:
    """(attributes, blocks) of a block body. ``blocks`` maps a block type to its occurrences as
    ``(body, dynamic)``; a ``dynamic "x" { content { ... } }`` counts as one occurrence of x."""
    attrs: dict[str, Any] = {}
    blocks: dict[str, list[tuple[dict[str, Any], bool]]] = {}
    for key, value in body.items():
        if key.startswith("__"):  # __is_block__, __comments__ (python-hcl2 >= 8)
            continue
        if key == "dynamic" and isinstance(value, list):
            for dyn in value:
                for label, dyn_body in dyn.items():
                    if label.startswith("__"):
                        continue
                    content = dyn_body.get("content", [{}])[0]
                    blocks.setdefault(unquote(label), []).append((content, True))
        elif is_block_list(value):
            blocks.setdefault(unquote(key), []).extend((v, False) for v in value)
        else:
            attrs[unquote(key)] = value
    return attrs, blocks


def expressions(value: Any) -> list[str]:
    """Every ``${...}`` expression inside a parsed value (strings, lists, dicts, nested blocks)."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += expressions(k) + expressions(v)
    elif isinstance(value, list):
        for v in value:
            out += expressions(v)
    elif isinstance(value, str):
        i = 0
        while (start := value.find("${", i)) != -1:
            depth, j = 0, start + 1
            while j < len(value):
                depth += {"{": 1, "}": -1}.get(value[j], 0)
                if depth == 0:
                    break
                j += 1
            out.append(value[start + 2:j])
            i = j + 1
    return out


_REF = re.compile(r"(?<![\w.])(var|local)\.(\w+)|(?<![\w.])data\.(\w+)\.(\w+)|(?<![\w.])(google_\w+)\.(\w+)")


def refs(value: Any) -> set[tuple[str, str, str]]:
    """References in a parsed value: ('var', name, ''), ('local', name, ''), ('data', type, name),
    ('resource', type, name)."""
    found: set[tuple[str, str, str]] = set()
    for expr in expressions(value):
        for m in _REF.finditer(expr):
            if m.group(1):
                found.add((m.group(1), m.group(2), ""))
            elif m.group(3):
                found.add(("data", m.group(3), m.group(4)))
            else:
                found.add(("resource", m.group(5), m.group(6)))
    return found


_REMOTE = re.compile(r"data\.terraform_remote_state\.(\w+)(?:\[[^\]]*\])?\.outputs\.(\w+)")


def remote_outputs(value: Any) -> set[tuple[str, str]]:
    """(remote state data name, output name) for every ``data.terraform_remote_state.N.outputs.X``."""
    return {(m.group(1), m.group(2)) for expr in expressions(value) for m in _REMOTE.finditer(expr)}


@dataclass
class Module:
    path: Path
    files: dict[str, dict[str, Any]]
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    locals: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    data: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    terraform: list[dict[str, Any]] = field(default_factory=list)
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)

    def node(self, kind: str, a: str, b: str = "") -> Any:
        """The parsed body behind a reference from :func:`refs`."""
        return {"var": lambda: self.variables[a], "local": lambda: self.locals[a],
                "data": lambda: self.data[(a, b)], "resource": lambda: self.resources[(a, b)]}[kind]()

    def closure(self, start: Any) -> set[tuple[str, str, str]]:
        """Every var/local/data/resource that ``start`` depends on, transitively."""
        seen: set[tuple[str, str, str]] = set()
        todo = list(refs(start))
        while todo:
            ref = todo.pop()
            if ref in seen:
                continue
            seen.add(ref)
            if ref[0] != "var":
                todo += refs(self.node(*ref))
        return seen


def parse_file(path: Path) -> dict[str, Any]:
    with path.open() as fh:
        return hcl2.load(fh)


def load_dir(path: Path) -> Module:
    files = {p.name: parse_file(p) for p in sorted(path.glob("*.tf"))}
    mod = Module(path=path, files=files)
    for parsed in files.values():
        for var in parsed.get("variable", []):
            mod.variables.update({unquote(k): v for k, v in var.items() if not k.startswith("__")})
        for block in parsed.get("locals", []):
            mod.locals.update({k: v for k, v in block.items() if not k.startswith("__")})
        for out in parsed.get("output", []):
            mod.outputs.update({unquote(k): v for k, v in out.items() if not k.startswith("__")})
        for section, target in (("resource", mod.resources), ("data", mod.data)):
            for item in parsed.get(section, []):
                for tf_type, named in item.items():
                    if tf_type.startswith("__"):
                        continue
                    for name, body in named.items():
                        if not name.startswith("__"):
                            target[(unquote(tf_type), unquote(name))] = body
        mod.terraform += parsed.get("terraform", [])
        for prov in parsed.get("provider", []):
            mod.providers.update({unquote(k): v for k, v in prov.items() if not k.startswith("__")})
    return mod


@cache
def load_module(name: str) -> Module:
    return load_dir(MODULES / name)


def write_module(tmp: Path, text: str) -> Module:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "main.tf").write_text(text)
    return load_dir(tmp)


# ---- tests of the reader: the module tests are only as good as it is ----

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


@pytest.mark.parametrize("name", MODULE_DIRS)
def test_every_module_loads(name: str) -> None:
    mod = load_module(name)
    assert {"main.tf", "variables.tf", "outputs.tf", "versions.tf"} <= set(mod.files)
    assert mod.variables and mod.outputs and mod.resources
