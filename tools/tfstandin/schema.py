"""The full google / google-beta provider schema, rebuilt from the provider's CDK bindings.

The bindings (PyPI ``cdktn-provider-google(-beta)==21.1.0`` for provider 8.7.0, npm
``@cdktf/provider-google(-beta)@16.12.1`` for 6.50.0; install.py fetches both) are generated from
``terraform providers schema -json`` of their release. cdktn (CDK Terrain, the cdktf fork) writes
the same JavaScript with its own library name, class fields and ``static tfResourceType``, which
``Module`` reads alike. The JavaScript (``package/lib/<type>/index.js``) keeps what a Terraform
schema needs, per resource, data source and the provider itself:

* ``synthesizeHclAttributes()`` (top level) and ``<struct>ToHclTerraform(struct)`` (each nested
  block) list every argument with ``isBlock``, ``type`` (``simple``/``list``/``set``/``map``/
  ``struct``) and ``storageClassType`` (``string``, ``numberList``, ``stringMap``, ``<Struct>List``…):
  the attribute's type, or the block's nesting mode (``struct`` = single). A block whose value is
  not wrapped in ``listMapperHcl`` holds at most one item (max_items 1);
* an optional argument has a ``reset<Name>()`` method, a required one has none; a block carries a
  comment ``// <name> - computed: …, optional: …, required: true`` when at least one is required;
* computed (read-only) attributes carry the same comment before their getter or field, whose body
  tells the type (``getStringAttribute``, ``Fn.tolist(getListAttribute)`` = set of strings,
  ``new <X>List(this, "n", wrapsSet)`` = list or set of objects whose attributes are the getters of
  ``<X>OutputReference``…).

cdktf does not keep "optional AND computed": every argument is served as optional only, except
``id`` (optional + computed, as every SDK resource has it). See docs/terraform.md for what this
stand-in cannot check.

Output: ``{"provider": BLOCK, "resources": {type: BLOCK}, "data_sources": {type: BLOCK}}`` with
``BLOCK = {"attributes": {name: {"type": <cty type JSON>, "required"|"optional"|"computed": true}},
"block_types": {name: {"nesting": "single|list|set|map", "min_items": n, "max_items": n, "block": BLOCK}}}``.
"""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path
from typing import Any

_TOP = re.compile(r"^(?:class (\w+) extends ([\w.]+) \{|function (\w+)\(struct\) \{)", re.M)
_HCL_ENTRY = re.compile(
    r"(\w+): \{\n\s*value: ([^\n]*),\n\s*isBlock: (true|false),\n\s*type: \"(\w+)\",\n\s*storageClassType: \"(\w+)\",\n\s*\}")
_FLAGS = re.compile(
    r"// (\w+) - computed: (\w+), optional: (\w+), required: (\w+)\n\s*(?:_\w+;\n\s*)?"
    r"(?:get (\w+)\(\) \{\s*return ([^;]+);|(?:this\.)?_(\w+) = ([^;]+);)")
_GETTER = re.compile(r"get (\w+)\(\) \{\s*return ([^;]+);")
_FIELD = re.compile(r"(?:this\.)?_(\w+) = (new [^;]+);")
_RESET = re.compile(r"^\s*reset(\w+)\(\) \{", re.M)
_TYPE_NAME = re.compile(r'^(\w+)\.tfResourceType = "([\w-]+)";', re.M)
_STATIC_TYPE_NAME = re.compile(r'^\s+static tfResourceType = "([\w-]+)";', re.M)
_CDKTN = re.compile(r"\bcdktn\.")
_NEW = re.compile(r'new ([\w.]+)\(this, "(\w+)"(?:, (true|false))?\)')

_PRIM = {"string": "string", "number": "number", "boolean": "bool", "any": "dynamic"}
_GETTERS = {
    "getStringAttribute": "string", "getNumberAttribute": "number", "getBooleanAttribute": "bool",
    "getListAttribute": ["list", "string"], "getNumberListAttribute": ["list", "number"],
    "getStringMapAttribute": ["map", "string"], "getNumberMapAttribute": ["map", "number"],
    "getBooleanMapAttribute": ["map", "bool"], "getAnyMapAttribute": ["map", "dynamic"],
    "interpolationForAttribute": "dynamic",
}
_MAPS = {"cdktf.StringMap": ["map", "string"], "cdktf.NumberMap": ["map", "number"],
         "cdktf.BooleanMap": ["map", "bool"], "cdktf.AnyMap": ["map", "dynamic"],
         "cdktf.StringMapList": ["list", ["map", "string"]], "cdktf.NumberMapList": ["list", ["map", "number"]],
         "cdktf.BooleanMapList": ["list", ["map", "bool"]], "cdktf.AnyMapList": ["list", ["map", "dynamic"]]}


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


class Module:
    """One ``lib/<name>/index.js``: its classes and ToHclTerraform functions, parsed lazily."""

    def __init__(self, source: str) -> None:
        source = source.split("\n//# sourceMappingURL=", 1)[0]
        # cdktn (CDK Terrain, the cdktf fork) names its library cdktn: same classes, same shape.
        source = _CDKTN.sub("cdktf.", source)
        self.source = source
        self.classes: dict[str, str] = {}
        self.functions: dict[str, str] = {}
        self.bases: dict[str, str] = {}
        starts = list(_TOP.finditer(source))
        for i, match in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(source)
            body = source[match.start():end]
            if match.group(1):
                self.classes[match.group(1)] = body
                self.bases[match.group(1)] = match.group(2)
            else:
                self.functions[match.group(3)] = body
        self._open: list[str] = []
        self.types = {cls: tf for cls, tf in _TYPE_NAME.findall(source)}
        for cls, body in self.classes.items():  # cdktn: `static tfResourceType = "...";` in the class
            found = _STATIC_TYPE_NAME.search(body)
            if found:
                self.types[cls] = found.group(1)

    # -- pieces ------------------------------------------------------------------------------
    @staticmethod
    def hcl_entries(body: str) -> dict[str, tuple[str, bool, str, str]]:
        """name → (value expression, isBlock, type, storageClassType) of one ``attrs = {...}``."""
        at = body.find("const attrs = {")
        if at < 0:
            return {}
        end = body.find("Object.fromEntries", at)
        return {m.group(1): (m.group(2), m.group(3) == "true", m.group(4), m.group(5))
                for m in _HCL_ENTRY.finditer(body[at:end if end > 0 else len(body)])}

    def block(self, cls: str, hcl_body: str, depth: int = 0) -> dict[str, Any]:
        if depth > 30:
            raise ValueError(f"nesting too deep at {cls}")
        if cls in self._open:
            # A struct that contains itself (cdktn 21's cloud_security_compliance parameter
            # specs): a Terraform schema is finite, so the generator cut the real one somewhere;
            # the stand-in cuts it at the repetition, an empty block.
            return {"attributes": {}, "block_types": {}}
        self._open.append(cls)
        try:
            return self._block(cls, hcl_body, depth)
        finally:
            self._open.pop()

    def _block(self, cls: str, hcl_body: str, depth: int) -> dict[str, Any]:
        body = self.classes.get(cls, "")
        resets = {_lower_first(r) for r in _RESET.findall(body)}
        flags: dict[str, tuple[bool, bool, bool, str]] = {}
        for m in _FLAGS.finditer(body):
            expr = m.group(6) or m.group(8)
            flags[m.group(1)] = (m.group(2) == "true", m.group(3) == "true", m.group(4) == "true", expr)
        attributes: dict[str, Any] = {}
        blocks: dict[str, Any] = {}
        for name, (value, is_block, kind, storage) in self.hcl_entries(hcl_body).items():
            camel = self._camel_of(value, name)
            required = flags[name][2] if name in flags else (camel not in resets)
            if is_block:
                struct = storage[:-4] if kind in ("list", "set") and storage.endswith("List") else storage
                if kind == "map" and storage.endswith("Map"):
                    struct = storage[:-3]
                nested = self.block(struct + "OutputReference", self.functions.get(_lower_first(struct) + "ToHclTerraform", ""), depth + 1)
                nesting = {"struct": "single", "list": "list", "set": "set", "map": "map"}[kind]
                max_one = nesting in ("list", "set") and "listMapperHcl" not in value
                blocks[name] = {"nesting": nesting, "min_items": 1 if required and nesting != "single" else 0,
                                "max_items": 1 if max_one else 0, "block": nested}
            else:
                attr: dict[str, Any] = {"type": self._hcl_type(kind, storage, depth)}
                if name == "id":
                    attr.update(optional=True, computed=True)
                elif required:
                    attr["required"] = True
                else:
                    attr["optional"] = True
                attributes[name] = attr
        for name, (computed, optional, required, expr) in flags.items():
            if name in attributes or name in blocks or not computed or optional or required:
                continue
            cty = self._expr_type(body, expr, depth)
            if cty is not None:
                attributes[name] = {"type": cty, "computed": True}
        if "id" not in attributes and re.search(r"get id\(\) \{\s*return this\.getStringAttribute\('id'\)", body):
            attributes["id"] = {"type": "string", "optional": True, "computed": True}
        return {"attributes": dict(sorted(attributes.items())), "block_types": dict(sorted(blocks.items()))}

    @staticmethod
    def _camel_of(value: str, name: str) -> str:
        m = re.search(r"(?:this\._|struct\.)(\w+)", value)
        return m.group(1) if m else re.sub(r"_(\w)", lambda x: x.group(1).upper(), name)

    def _hcl_type(self, kind: str, storage: str, depth: int) -> Any:
        if kind == "simple":
            return _PRIM.get(storage, "dynamic")
        for prim, cty in _PRIM.items():
            if storage == prim + "List":
                return ["set" if kind == "set" else "list", cty]
            if storage == prim + "Map":
                return ["map", cty]
        # an attribute (not a block) made of objects: its struct's own hcl entries
        struct = storage[:-4] if storage.endswith("List") else storage[:-3] if storage.endswith("Map") else storage
        inner = self.block(struct + "OutputReference", self.functions.get(_lower_first(struct) + "ToHclTerraform", ""), depth + 1)
        obj = ["object", {n: a["type"] for n, a in inner["attributes"].items()}]
        return obj if kind == "struct" else [{"list": "list", "set": "set", "map": "map"}.get(kind, "list"), obj]

    def _expr_type(self, body: str, expr: str, depth: int) -> Any:
        expr = expr.strip()
        field = re.fullmatch(r"this\._(\w+)", expr)
        if field:
            init = re.search(rf"(?:this\.)?\b_{field.group(1)} = (new [^;]+);", body)
            if not init:
                return None
            expr = init.group(1)
        m = _NEW.search(expr)
        if m:
            cls, wraps_set = m.group(1), m.group(3) == "true"
            if cls in _MAPS:
                return _MAPS[cls]
            for suffix, coll in (("List", "set" if wraps_set else "list"), ("Map", "map"), ("OutputReference", None)):
                if cls.endswith(suffix):
                    ref = cls[: -len(suffix)] + "OutputReference"
                    inner = self.block(ref, "", depth + 1)
                    obj = ["object", {n: a["type"] for n, a in inner["attributes"].items()}]
                    return [coll, obj] if coll else obj
            return None
        for getter, cty in _GETTERS.items():
            if f"this.{getter}(" in expr:
                if "Fn.tolist(" in expr and isinstance(cty, list) and cty[0] == "list":
                    return ["set", cty[1]]
                return cty
        return None

    def top(self) -> tuple[str, str, dict[str, Any]] | None:
        """(kind, Terraform type, BLOCK) of the module's resource, data source or provider."""
        for cls, base in self.bases.items():
            kind = {"cdktf.TerraformResource": "resources", "cdktf.TerraformDataSource": "data_sources",
                    "cdktf.TerraformProvider": "provider"}.get(base)
            if kind and cls in self.types:
                body = self.classes[cls]
                at = body.find("synthesizeHclAttributes() {")
                return kind, self.types[cls], self.block(cls, body[at:] if at >= 0 else "")
        return None


def build(tarball: Path) -> dict[str, Any]:
    """The full schema of one cdktf provider package (``npm pack`` tarball)."""
    out: dict[str, Any] = {"provider": {"attributes": {}, "block_types": {}}, "resources": {}, "data_sources": {}}
    with tarfile.open(tarball) as tar:
        for member in tar:
            if not (member.isfile() and member.name.startswith("package/lib/") and member.name.endswith("/index.js")):
                continue
            if member.name.count("/") != 3:
                continue
            handle = tar.extractfile(member)
            assert handle is not None
            found = Module(handle.read().decode()).top()
            if found is None:
                continue
            kind, tf_type, block = found
            if kind == "provider":
                out["provider"] = block
            else:
                out[kind][tf_type] = block
    out["resources"] = dict(sorted(out["resources"].items()))
    out["data_sources"] = dict(sorted(out["data_sources"].items()))
    return out


if __name__ == "__main__":  # python tools/tfstandin/schema.py TARBALL TYPE
    import sys

    schema = build(Path(sys.argv[1]))
    print(len(schema["resources"]), len(schema["data_sources"]))
    for t in sys.argv[2:]:
        print(json.dumps(schema["resources"].get(t) or schema["data_sources"].get(t), indent=1))
