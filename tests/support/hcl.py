"""A small reader for our Terraform modules on top of python-hcl2, and tests of the reader itself.

python-hcl2 (>= 7) turns a .tf file into dicts. In its output labels and string literals keep
their quotes (``'"gcs"'``), expressions are wrapped in ``${...}``, and blocks are lists of dicts
marked ``__is_block__``. The other module tests use :func:`load_module`, :func:`refs` and
:func:`body_parts` from here.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import hcl2
import pytest

from tests.conftest import REPO

MODULES = REPO / "modules"
#: Root modules: each has a backend and its own state, and is a plan module's directory.
MODULE_DIRS = ("tpu_node", "tpu_vm", "filestore", "shared_pd", "mig", "tpu_mig_access", "tpu_mig", "dashboard")
#: Child modules: called with ``source = "../<dir>"`` from roots; no backend, no tfvars.
CHILD_DIRS = ("host_identity", "host_firewall", "ttl", "health")
ALL_DIRS = MODULE_DIRS + CHILD_DIRS
#: Not a module: the files the modules share by relative symlink (modules/_shared/README.md).
SHARED = MODULES / "_shared"
#: Meta-arguments of a ``module`` block; every other argument must be a variable of the child.
MODULE_META = frozenset({"source", "version", "count", "for_each", "providers", "depends_on"})
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


_REF = re.compile(r"(?<![\w.])(var|local)\.(\w+)|(?<![\w.])data\.(\w+)\.(\w+)|(?<![\w.])(google_\w+)\.(\w+)"
                  r"|(?<![\w.])module\.(\w+)(?:\.(\w+))?")


def refs(value: Any) -> set[tuple[str, str, str]]:
    """References in a parsed value: ('var', name, ''), ('local', name, ''), ('data', type, name),
    ('resource', type, name), ('module', call, output) (output '' for the whole call, as in
    depends_on)."""
    found: set[tuple[str, str, str]] = set()
    for expr in expressions(value):
        for m in _REF.finditer(expr):
            if m.group(1):
                found.add((m.group(1), m.group(2), ""))
            elif m.group(3):
                found.add(("data", m.group(3), m.group(4)))
            elif m.group(5):
                found.add(("resource", m.group(5), m.group(6)))
            else:
                found.add(("module", m.group(7), m.group(8) or ""))
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
    #: ``module "name" { ... }`` calls by name (their bodies: source and arguments).
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``moved { from = ..., to = ... }`` blocks, as (from, to) address strings.
    moved: list[tuple[str, str]] = field(default_factory=list)

    def node(self, kind: str, a: str, b: str = "") -> Any:
        """The parsed body behind a reference from :func:`refs`. A module output depends on the
        call's arguments (all of them: conservative, the child is not followed)."""
        return {"var": lambda: self.variables[a], "local": lambda: self.locals[a],
                "data": lambda: self.data[(a, b)], "resource": lambda: self.resources[(a, b)],
                "module": lambda: self.calls[a]}[kind]()

    def code(self, *, with_variables: bool = True) -> list[Any]:
        """Every top-level block's body except ``moved`` and ``removed`` (whose addresses are not
        references) and, unless asked, ``variable`` (a validation referring to itself is not a use)."""
        skip = {"moved", "removed"} | (set() if with_variables else {"variable"})
        return [body for parsed in self.files.values() for key, body in parsed.items() if key not in skip]

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
        for call in parsed.get("module", []):
            mod.calls.update({unquote(k): v for k, v in call.items() if not k.startswith("__")})
        for mv in parsed.get("moved", []):
            mod.moved.append((_address(mv["from"]), _address(mv["to"])))
    for key, body in mod.resources.items():
        if body.get("for_each") == "${local.slices}":
            mod.resources[key] = _as_target_slot(mod, body)
    return mod


_SLOT_REF = re.compile(r"each\.value\.(wanted\.)?(\w+)")


def _as_target_slot(mod: Module, body: Any) -> Any:
    """A resource repeated over a root's slots (modules/tpu_vm: ``for_each = local.slices``) read as
    the slot values.env asks for: ``each.value.wanted.K`` is ``local.wanted``'s K and
    ``each.value.X`` is ``local.slot``'s X (a slot kept beside it holds values an earlier apply wrote
    the same way)."""
    def expr(m: re.Match[str]) -> str:
        table = mod.locals["wanted" if m.group(1) else "slot"]
        value = table[m.group(2)]
        return _address(value) if isinstance(value, str) else json.dumps(value)

    if isinstance(body, dict):
        return {k: _as_target_slot(mod, v) for k, v in body.items()}
    if isinstance(body, list):
        return [_as_target_slot(mod, v) for v in body]
    if isinstance(body, str) and "each.value." in body:
        whole = re.fullmatch(r"\$\{(each\.value\.[\w.]+)\}", body)
        if whole:
            m = _SLOT_REF.fullmatch(whole.group(1))
            assert m, body
            value = mod.locals["wanted" if m.group(1) else "slot"][m.group(2)]
            return value
        return _SLOT_REF.sub(expr, body)
    return body


def _address(value: str) -> str:
    return value.removeprefix("${").removesuffix("}")


# ---- module calls: a root's child modules, instantiated with the call's arguments ----

def call_source(mod: Module, call: str) -> Path:
    """Directory of a local child module (``source = "../x"``), resolved from the caller."""
    source = unquote(mod.calls[call]["source"])
    return (mod.path / source).resolve()


def call_args(mod: Module, call: str) -> dict[str, Any]:
    """The arguments a call passes to the child's variables (meta-arguments left out)."""
    return {unquote(k): v for k, v in mod.calls[call].items() if not k.startswith("__") and k not in MODULE_META}


def child_of(mod: Module, call: str) -> Module:
    return load_dir(call_source(mod, call))


def call_errors(mod: Module) -> list[str]:
    """A call must name a local child module of modules/ (``../<dir>``, no version), pass only
    that module's variables and every variable it requires."""
    errors = []
    for call, body in mod.calls.items():
        where = f"{mod.path.name}: module.{call}"
        source = unquote(body.get("source", ""))
        if not (isinstance(source, str) and source.startswith("../") and source.count("/") == 1):
            errors.append(f"{where}: source {source!r} is not a sibling directory (../<child>)")
            continue
        if "version" in body:
            errors.append(f"{where}: a local module takes no version")
        path = call_source(mod, call)
        if not path.is_dir() or not list(path.glob("*.tf")):
            errors.append(f"{where}: source {source} is not a module directory")
            continue
        child = load_dir(path)
        args = set(call_args(mod, call))
        for name in sorted(args - set(child.variables)):
            errors.append(f"{where}: {name} is not a variable of {source}")
        required = {n for n, b in child.variables.items() if "default" not in b}
        for name in sorted(required - args):
            errors.append(f"{where}: required variable {name} of {source} is not passed")
    return errors


_WHOLE_VAR = re.compile(r"^\$\{var\.(\w+)\}$")


def bind(value: Any, values: dict[str, Any]) -> Any:
    """``value`` with every string that is exactly ``${var.X}`` replaced by ``values[X]`` (when
    X is there). References inside longer expressions stay as they are."""
    if isinstance(value, dict):
        return {k: bind(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [bind(v, values) for v in value]
    if isinstance(value, str) and (m := _WHOLE_VAR.match(value)) and m.group(1) in values:
        return values[m.group(1)]
    return value


def defaults(mod: Module) -> dict[str, Any]:
    return {n: b["default"] for n, b in mod.variables.items() if "default" in b}


def effective_resources(mod: Module) -> dict[tuple[str, str], dict[str, Any]]:
    """The module's resources with its child modules' resources, as Terraform would create them:
    a child's resource is keyed ``(type, "module.<call>.<name>")`` and its ``${var.X}`` values
    are bound to the call's arguments (or the child's defaults). The module's own ``${var.X}``
    are bound to its defaults, as a root applied with its default values."""
    return _instantiate(mod, defaults(mod))


def _instantiate(mod: Module, values: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    out = {key: bind(body, values) for key, body in mod.resources.items()}
    for call in mod.calls:
        child = child_of(mod, call)
        child_values = {**defaults(child), **bind(call_args(mod, call), values)}
        for (tf_type, name), body in _instantiate(child, child_values).items():
            out[(tf_type, f"module.{call}.{name}")] = body
    return out


@cache
def load_module(name: str) -> Module:
    return load_dir(MODULES / name)


def write_module(tmp: Path, text: str) -> Module:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "main.tf").write_text(text)
    return load_dir(tmp)


def write_caller(tmp: Path, call: str, child: str, args: dict[str, str | list[str]], rest: str = "") -> Module:
    """A root module ``tmp/root`` with ``module "<call>" { source = "../<child>" ... }`` passing
    ``args`` (strings and lists of strings, written as HCL literals), then ``rest``; beside it
    ``tmp/<child>``, a copy of ``modules/<child>``, so that the call resolves as a real one does."""
    shutil.copytree(MODULES / child, tmp / child)
    lines = [f'module "{call}" {{', f'  source = "../{child}"']
    lines += [f"  {name} = {json.dumps(value)}" for name, value in args.items()]
    return write_module(tmp / "root", "\n".join([*lines, "}", rest]))


# ---- tests of the reader: the module tests are only as good as it is ----
