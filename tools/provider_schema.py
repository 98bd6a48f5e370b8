#!/usr/bin/env python3
"""Extract a trimmed Terraform provider schema from the cdktn (cdktf) provider bindings.

There is no google provider binary offline, so ``terraform providers schema -json`` cannot run.
The same schema ships inside the bindings of the provider the root modules pin: PyPI
``cdktn-provider-google`` and ``cdktn-provider-google-beta`` 21.1.0 (= provider 8.7.0; the
wheel's ``_jsii/*.jsii.tgz``, downloaded and cached by ``tools/tfstandin/install.py``, the same
files the stand-in provider serves), as ``package/.jsii``, a JSON "assembly" of TypeScript types:

* every resource / data source is a class (base ``cdktn.TerraformResource`` or
  ``cdktn.TerraformDataSource``; ``cdktf.`` in the older cdktf packages) whose docs summary
  links ``.../docs/resources/<type>`` (or
  ``docs/data-sources/<type>``) and names the Terraform type (``google_tpu_node``);
* its initializer's ``config`` parameter is a struct (``kind: interface, datatype: true``), e.g.
  ``@cdktf/provider-google-beta.tpuV2Vm.TpuV2VmConfig``; each property is one argument;
  ``optional: true`` means the argument may be left out, otherwise it is required;
* a property whose type is another struct (``{"fqn": ...}``: a block with at most one item) or an
  array of structs (possibly inside a ``union`` with ``cdktf.IResolvable``) is a nested block; the
  rest (primitives, maps, arrays of primitives) are attributes;
* property names are camelCase; the Terraform name is the anchor of the registry link in the
  property's docs (``.../tpu_node#cidr_block TpuNode#cidr_block``), else the snake_case of it.

Output (JSON)::

    {"_stamp": {...},
     "<provider>": {"resources": {"<type>": BLOCK}, "data_sources": {"<type>": BLOCK}}}
    BLOCK = {"attributes": {name: {"required": bool}},
             "blocks": {name: BLOCK + {"required": bool, "max_one": bool}}}
    a resource's BLOCK also has "computed": {read-only attribute: [its sub-attributes]}

Only the types the modules use are kept (found by scanning ``modules/**/*.tf``, plus
``--type``). Usage::

    python tools/provider_schema.py --out tests/data/provider_schema.json
    python tools/provider_schema.py --packages-dir DIR --out ...   # tarballs already at hand

``--packages-dir`` holds either ``cdktn-provider-google-21.1.0.jsii.tgz`` style tarballs (as the
stand-in's cache keeps them) or folders ``google/package/.jsii`` and ``google-beta/package/.jsii``.
Without it the tool takes the stand-in's cached tarballs (``pip download`` on first use, ~90 MB).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TOOL_VERSION = "2"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools" / "tfstandin"))

import install  # noqa: E402  (tools/tfstandin is not a package)

RELEASE = install.CURRENT
PACKAGES: dict[str, str] = RELEASE.packages

#: Types kept even though no module declares them: builder checks its refusals against them
#: (google_tpu_v2_queued_resource: what the pinned provider lets a queued TPU VM carry, builder/config/legacy.py).
ALWAYS: set[tuple[str, str]] = {("resources", "google_tpu_v2_queued_resource")}

_BASES = {f"{lib}.{cls}" for lib in ("cdktn", "cdktf") for cls in ("TerraformResource", "TerraformDataSource")}
_TYPE_LINK = re.compile(r"registry\.terraform\.io/providers/hashicorp/([\w-]+)/([\d.]+)/docs/(resources|data-sources)/\w+ (\w+)\}")
_ANCHOR = re.compile(r"#(\w+) \w+#(\w+)\}")
_TF_DECL = re.compile(r'^\s*(resource|data)\s+"((?:google)_[a-z0-9_]+)"', re.M)


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def tf_name(prop: dict[str, Any]) -> str:
    match = _ANCHOR.search(prop.get("docs", {}).get("remarks", "") + prop.get("docs", {}).get("summary", ""))
    return match.group(2) if match else snake(prop["name"])


class Assembly:
    """One jsii assembly and the Terraform types it defines."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.types: dict[str, Any] = data["types"]
        self.name: str = data["name"]
        self.version: str = data["version"]
        self.provider_version = ""
        self.classes: dict[tuple[str, str], str] = {}
        for fqn, spec in self.types.items():
            if spec.get("kind") != "class" or spec.get("base") not in _BASES:
                continue
            match = _TYPE_LINK.search(spec.get("docs", {}).get("summary", ""))
            if not match:
                continue
            self.provider_version = match.group(2)
            kind = "resources" if match.group(3) == "resources" else "data_sources"
            self.classes[(kind, match.group(4))] = fqn

    def computed(self, kind: str, tf_type: str) -> dict[str, list[str]]:
        """Read-only attributes of the resource (``network_endpoints``) → their sub-attributes."""
        spec = self.types[self.classes[(kind, tf_type)]]
        out: dict[str, list[str]] = {}
        for prop in spec.get("properties", []):
            if prop.get("static") or not prop.get("immutable") or prop["name"].endswith("Input"):
                continue
            subs: list[str] = []
            fqn = prop["type"].get("fqn", "")
            ref = re.sub(r"List$", "OutputReference", fqn) if fqn.endswith("List") else fqn
            if ref.endswith("OutputReference") and ref in self.types:
                subs = sorted(snake(p["name"]) for p in self.types[ref].get("properties", [])
                              if not p["name"].endswith("Input") and p["name"] != "internalValue")
            out[snake(prop["name"])] = subs
        return dict(sorted(out.items()))

    def config_struct(self, kind: str, tf_type: str) -> str | None:
        fqn = self.classes.get((kind, tf_type))
        if fqn is None:
            return None
        for param in self.types[fqn]["initializer"]["parameters"]:
            if param["name"] == "config":
                return param["type"]["fqn"]
        raise ValueError(f"{fqn} has no config parameter")

    def _struct_of(self, jtype: dict[str, Any]) -> tuple[str | None, bool]:
        """(struct fqn, max_one) when a property type is a nested block, else (None, False)."""
        if "fqn" in jtype:
            spec = self.types.get(jtype["fqn"])
            if spec and spec.get("kind") == "interface" and spec.get("datatype"):
                return jtype["fqn"], True
            return None, False
        if "collection" in jtype:
            elem = jtype["collection"]["elementtype"]
            if jtype["collection"]["kind"] == "array" and "fqn" in elem:
                fqn, _ = self._struct_of(elem)
                return fqn, False
            return None, False
        if "union" in jtype:
            for member in jtype["union"]["types"]:
                fqn, max_one = self._struct_of(member)
                if fqn:
                    return fqn, max_one
        return None, False

    def block(self, struct_fqn: str, depth: int = 0) -> dict[str, Any]:
        if depth > 20:
            raise ValueError(f"nesting too deep at {struct_fqn}")
        spec = self.types[struct_fqn]
        attributes: dict[str, Any] = {}
        blocks: dict[str, Any] = {}
        for prop in self._properties(spec):
            name = tf_name(prop)
            required = not prop.get("optional", False)
            nested, max_one = self._struct_of(prop["type"])
            if nested:
                blocks[name] = {**self.block(nested, depth + 1), "required": required, "max_one": max_one}
            else:
                attributes[name] = {"required": required}
        return {"attributes": dict(sorted(attributes.items())), "blocks": dict(sorted(blocks.items()))}

    def _properties(self, spec: dict[str, Any]) -> Iterable[dict[str, Any]]:
        yield from spec.get("properties", [])
        for parent in spec.get("interfaces", []):
            if parent in self.types:  # cdktf.TerraformMetaArguments (count, for_each...) is not
                yield from self._properties(self.types[parent])


def used_types(modules: Path) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for tf in sorted(modules.rglob("*.tf")):
        for kind, tf_type in _TF_DECL.findall(tf.read_text()):
            found.add(("resources" if kind == "resource" else "data_sources", tf_type))
    return found


def extract(assemblies: dict[str, Assembly], wanted: set[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "_stamp": {
            "tool": f"tools/provider_schema.py v{TOOL_VERSION}",
            "packages": {asm.name: asm.version for asm in assemblies.values()},
            "providers": {p: f"hashicorp/{p} {asm.provider_version}" for p, asm in assemblies.items()},
            "note": "trimmed to the resources and data sources that modules/ uses; regenerate with "
                    "`python tools/provider_schema.py --out tests/data/provider_schema.json`",
        }
    }
    missing = []
    for provider, asm in assemblies.items():
        section: dict[str, dict[str, Any]] = {"resources": {}, "data_sources": {}}
        for kind, tf_type in sorted(wanted):
            struct = asm.config_struct(kind, tf_type)
            if struct is not None:
                section[kind][tf_type] = {**asm.block(struct), "computed": asm.computed(kind, tf_type)}
        out[provider] = section
    for kind, tf_type in sorted(wanted):
        if not any(tf_type in out[p][kind] for p in assemblies):
            missing.append(f"{kind[:-1]} {tf_type}")
    if missing:
        raise SystemExit(f"provider_schema: not in any package: {', '.join(missing)}")
    return out


def _jsii_from(path: Path) -> dict[str, Any]:
    if path.is_dir():
        return json.loads((path / "package" / ".jsii").read_text())
    with tarfile.open(path) as tar:
        member = tar.extractfile("package/.jsii")
        if member is None:
            raise SystemExit(f"provider_schema: {path} has no package/.jsii")
        return json.loads(member.read())


def locate(packages_dir: Path, provider: str) -> Path:
    label = f"{PACKAGES[provider]}-{RELEASE.package_version}.jsii.tgz"
    for candidate in (packages_dir / provider, packages_dir / label):
        if candidate.exists():
            return candidate
    raise SystemExit(f"provider_schema: neither {packages_dir / provider}/package/.jsii nor {label} in {packages_dir}")


def load_assemblies(packages_dir: Path | None) -> dict[str, Assembly]:
    """Both providers' jsii assemblies, from ``packages_dir`` (tarballs or unpacked packages), or
    from the stand-in's cache of the pinned bindings (downloaded there on first use) when it is None."""
    if packages_dir is None:
        try:
            paths = {p: install.tarball(install.cache_dir(), RELEASE, p) for p in PACKAGES}
        except install.InstallError as exc:
            raise SystemExit(f"provider_schema: {exc}; or download the wheels and pass --packages-dir") from None
    else:
        paths = {p: locate(packages_dir, p) for p in PACKAGES}
    return {p: Assembly(_jsii_from(path)) for p, path in paths.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="where to write the trimmed schema JSON")
    ap.add_argument("--packages-dir", type=Path, help="folder with the jsii tarballs or unpacked packages")
    ap.add_argument("--modules", type=Path, default=REPO / "modules", help="scan these .tf files for types")
    ap.add_argument("--type", action="append", default=[], metavar="resource:T|data:T", help="also keep this type")
    args = ap.parse_args(argv)

    wanted = used_types(args.modules) | ALWAYS
    for extra in args.type:
        kind, _, tf_type = extra.partition(":")
        wanted.add(("data_sources" if kind == "data" else "resources", tf_type))
    schema = extract(load_assemblies(args.packages_dir), wanted)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(schema, indent=1, sort_keys=False) + "\n")
    counts = {p: {k: len(v) for k, v in schema[p].items()} for p in PACKAGES}
    print(f"provider_schema: wrote {args.out} ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
