"""The stand-in provider's service: a Terraform plugin (protocol 6) that serves a real provider's
schema and plans/applies without any cloud. ``plugin.py`` runs it as a process (the handshake, the
gRPC server; managed by Terraform from the filesystem mirror that ``tools/tfstandin/install.py``
writes, or long-lived for reattached runs).

* ``GetProviderSchema`` serves every resource and data source of the schema file (built by
  ``schema.py`` from the cdktf package: types, nesting, min/max items, required/optional/computed);
  Terraform core then type-checks the configuration against it;
* ``PlanResourceChange``: the proposed new state, with every computed attribute it leaves null
  planned unknown; no attribute is ever marked "requires replace" (the stand-in does not know
  ForceNew), so a plan never shows a replacement; a change Google's API would refuse (rules.py:
  a TPU MIG without bulk mode, a resize request on one, ...) is refused with Google's message;
* ``ApplyResourceChange`` (fake apply): the planned state with each unknown replaced by a plausible
  value (ids and names derived from the resource's name, one element for a computed list or set,
  an empty map); ``ReadResource`` (refresh) returns the state with the computed attributes it
  leaves null filled the same way, as a read from the API would: after a provider upgrade the
  upgraded state has null for every computed attribute the newer schema added, and a real refresh
  fills them; a resource of a type named in ``TFSTANDIN_GONE`` (comma-separated) reads as gone, as
  Google answers for a resource it lost; ``ReadDataSource`` fills the computed attributes the same way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgpack

from rules import HISTORY, Rules
from tf.gen import tfplugin_pb2 as pb
from tf.gen import tfplugin_pb2_grpc as rpc


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


def _ext_hook(code: int, data: bytes) -> Any:
    if code in (0, 12):  # cty unknown value (12: unknown with refinements)
        return UNKNOWN
    return msgpack.ExtType(code, data)


def _default(obj: Any) -> Any:
    if obj is UNKNOWN:
        return msgpack.ExtType(0, b"\x00")
    raise TypeError(f"cannot encode {obj!r}")


def decode(dv: pb.DynamicValue) -> Any:
    if dv.msgpack:
        return msgpack.unpackb(dv.msgpack, ext_hook=_ext_hook, raw=False, strict_map_key=False)
    if dv.json:
        return json.loads(dv.json)
    return None


def encode(value: Any) -> pb.DynamicValue:
    return pb.DynamicValue(msgpack=msgpack.packb(value, default=_default, use_bin_type=True))


# ---- schema → protobuf ------------------------------------------------------------------------

_NESTING = {"single": pb.Schema.NestedBlock.SINGLE, "list": pb.Schema.NestedBlock.LIST,
            "set": pb.Schema.NestedBlock.SET, "map": pb.Schema.NestedBlock.MAP}


def block_pb(block: dict[str, Any]) -> pb.Schema.Block:
    out = pb.Schema.Block()
    for name, attr in block["attributes"].items():
        out.attributes.append(pb.Schema.Attribute(
            name=name, type=json.dumps(attr["type"]).encode(), required=attr.get("required", False),
            optional=attr.get("optional", False), computed=attr.get("computed", False)))
    for name, nested in block["block_types"].items():
        out.block_types.append(pb.Schema.NestedBlock(
            type_name=name, block=block_pb(nested["block"]), nesting=_NESTING[nested["nesting"]],
            min_items=nested["min_items"], max_items=nested["max_items"]))
    return out


# ---- values -----------------------------------------------------------------------------------

def mark_unknown(block: dict[str, Any], value: Any) -> Any:
    """Computed attributes that ``value`` leaves null become unknown (what a real provider
    plans for a value only the API knows)."""
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for name, attr in block["attributes"].items():
        if attr.get("computed") and out.get(name) is None:
            out[name] = UNKNOWN
    for name, nested in block["block_types"].items():
        out[name] = _each_block(nested, out.get(name), lambda v, b=nested["block"]: mark_unknown(b, v))
    return out


def _each_block(nested: dict[str, Any], value: Any, fn: Any) -> Any:
    if value is None or value is UNKNOWN:
        return value
    if nested["nesting"] == "single":
        return fn(value)
    if nested["nesting"] == "map":
        return {k: fn(v) for k, v in value.items()}
    return [fn(v) for v in value]


#: Zonal Compute Engine resources whose id and self link the fake apply writes in Compute Engine's
#: form (https://cloud.google.com/compute/docs/reference/rest/v1/disks: selfLink
#: .../projects/P/zones/Z/disks/NAME; the provider's id is projects/P/zones/Z/disks/NAME).
ZONAL_LINKS = {"google_compute_disk": "disks"}


class Filler:
    """Plausible known values for what the plan left unknown (the fake apply)."""

    def __init__(self, type_name: str, top: dict[str, Any], project: str = "") -> None:
        """``project``: the provider's configured project, which a service account without its own
        is made in (as with the real provider: its email is ``<account_id>@<project>...``)."""
        self.type_name = type_name
        self.top = top
        self.project = project or "standin-project"

    def _name(self) -> str:
        for key in ("name", "account_id", "role_id", "display_name"):
            if isinstance(self.top.get(key), str):
                return self.top[key]
        return "standin"

    def string(self, attr: str) -> str:
        name, project = self._name(), self.top.get("project") if isinstance(self.top.get("project"), str) else "standin-project"
        # a service account's email is derived from the project Google made it in: the provider's
        # when the resource names none (modules/tpu_mig derives the hosts' email the same way)
        owner = self.top.get("project") if isinstance(self.top.get("project"), str) else self.project
        if attr == "email":
            return f"{name}@{owner}.iam.gserviceaccount.com"
        if attr == "member":
            return f"serviceAccount:{name}@{owner}.iam.gserviceaccount.com"
        zone = self.top.get("zone")
        if self.type_name in ZONAL_LINKS and isinstance(zone, str):
            # Compute Engine's own form, which modules read the zone back from (modules/shared_pd's
            # slots; modules/tpu_vm's precondition): projects/P/zones/Z/disks/NAME
            path = f"projects/{project}/zones/{zone}/{ZONAL_LINKS[self.type_name]}/{name}"
            if attr == "id":
                return path
            if attr in ("self_link", "self_link_unique"):
                return f"https://www.googleapis.com/compute/v1/{path}"
        if attr == "id":
            return f"projects/{project}/{self.type_name.removeprefix('google_')}/{name}"
        if attr in ("self_link", "self_link_unique"):
            return f"https://www.googleapis.com/standin/v1/projects/{project}/{self.type_name}/{name}"
        if "ip" in attr.split("_") or attr.endswith("ip_address") or attr == "network_ip":
            return "10.0.0.2"
        if attr in ("etag", "fingerprint", "label_fingerprint", "metadata_fingerprint", "tags_fingerprint"):
            return "BwXstandin="
        return f"{attr}-{name}"

    def value(self, attr: str, cty: Any, current: Any) -> Any:
        if current is not UNKNOWN:
            if isinstance(cty, list) and current is not None:
                kind, elem = cty[0], cty[1]
                if kind in ("list", "set"):
                    return [self.value(attr, elem, v) for v in current]
                if kind == "map":
                    return {k: self.value(attr, elem, v) for k, v in current.items()}
                if kind == "object":
                    return {k: self.value(k, t, current.get(k)) for k, t in elem.items()}
            return current
        if cty == "string":
            return self.string(attr)
        if cty == "number":
            return 1
        if cty == "bool":
            return False
        if cty == "dynamic":
            return None
        kind, elem = cty[0], cty[1]
        if kind == "object":
            return {k: self.value(k, t, UNKNOWN) for k, t in elem.items()}
        if kind in ("list", "set") and elem != "dynamic":
            return [self.value(attr, elem, UNKNOWN)]
        return {} if kind == "map" else []

    def block(self, block: dict[str, Any], value: Any) -> Any:
        if value is UNKNOWN:
            value = None
        if not isinstance(value, dict):
            return value
        out = dict(value)
        for name, attr in block["attributes"].items():
            out[name] = self.value(name, attr["type"], out.get(name))
        for name, nested in block["block_types"].items():
            out[name] = _each_block(nested, out.get(name), lambda v, b=nested["block"]: self.block(b, v))
        return out


def conform(block: dict[str, Any], value: Any) -> Any:
    """A JSON state object reduced to what the schema knows (for UpgradeResourceState)."""
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for name, attr in block["attributes"].items():
        out[name] = _conform_type(attr["type"], value.get(name))
    for name, nested in block["block_types"].items():
        out[name] = _each_block(nested, value.get(name), lambda v, b=nested["block"]: conform(b, v))
    return out


def _conform_type(cty: Any, value: Any) -> Any:
    if value is None or not isinstance(cty, list):
        return None if cty == "dynamic" else value
    kind, elem = cty[0], cty[1]
    if kind == "object" and isinstance(value, dict):
        return {k: _conform_type(t, value.get(k)) for k, t in elem.items()}
    if kind in ("list", "set") and isinstance(value, list):
        return [_conform_type(elem, v) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _conform_type(elem, v) for k, v in value.items()}
    return value


# ---- the service ------------------------------------------------------------------------------

def view(schema: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """The provider's schema restricted to the resource and data source types in ``names`` (the
    provider block whole): what a configuration naming those types can see of it. Each type kept is
    the real one, whole; a type the real provider lacks stays absent (Terraform then reports it as
    unsupported, exactly as against the full schema)."""
    return {"provider": schema["provider"],
            "resources": {k: v for k, v in schema["resources"].items() if k in names},
            "data_sources": {k: v for k, v in schema["data_sources"].items() if k in names}}


class Provider(rpc.ProviderServicer):
    """The Provider service over one schema file (JSON from schema.py). The JSON is read on the
    first call that needs it; the GetProviderSchema answer is cached beside it as serialized
    protobuf (``<schema>.pb``), so most plugin starts (Terraform starts each provider several times
    per command) answer it without building 1,600 schemas."""

    def __init__(self, schema_path: Path, schema: dict[str, Any] | None = None) -> None:
        """``schema``: already loaded (a view of the file's schema: ``view``); then the protobuf
        answer is built in memory, not cached beside the file."""
        self.schema_path = schema_path
        self._schema: dict[str, Any] | None = schema
        self._schema_response: pb.GetProviderSchema.Response | None = None
        self._cache_answer = schema is None
        self.project = ""  # the provider block's project (ConfigureProvider), for the fake values
        self.rules = Rules()  # Google's rules the API enforces (rules.py), over what this process planned

    @property
    def schema(self) -> dict[str, Any]:
        if self._schema is None:
            self._schema = json.loads(self.schema_path.read_text())
        return self._schema

    def _block(self, kind: str, type_name: str) -> dict[str, Any]:
        return self.schema[kind][type_name]

    def GetMetadata(self, request: Any, context: Any) -> Any:
        return pb.GetMetadata.Response(
            server_capabilities=pb.ServerCapabilities(plan_destroy=False, get_provider_schema_optional=False),
            resources=[pb.GetMetadata.ResourceMetadata(type_name=t) for t in self.schema["resources"]],
            data_sources=[pb.GetMetadata.DataSourceMetadata(type_name=t) for t in self.schema["data_sources"]])

    def GetProviderSchema(self, request: Any, context: Any) -> Any:
        cached = self.schema_path.with_suffix(".pb")
        if self._schema_response is None and self._cache_answer and cached.exists():
            self._schema_response = pb.GetProviderSchema.Response.FromString(cached.read_bytes())
        if self._schema_response is None:
            resp = pb.GetProviderSchema.Response(provider=pb.Schema(block=block_pb(self.schema["provider"])))
            resp.server_capabilities.plan_destroy = False
            for type_name, block in self.schema["resources"].items():
                resp.resource_schemas[type_name].CopyFrom(pb.Schema(block=block_pb(block)))
            for type_name, block in self.schema["data_sources"].items():
                resp.data_source_schemas[type_name].CopyFrom(pb.Schema(block=block_pb(block)))
            self._schema_response = resp
            if self._cache_answer:
                tmp = cached.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(resp.SerializeToString())
                os.replace(tmp, cached)
        return self._schema_response

    def ValidateProviderConfig(self, request: Any, context: Any) -> Any:
        return pb.ValidateProviderConfig.Response()

    def ValidateResourceConfig(self, request: Any, context: Any) -> Any:
        return pb.ValidateResourceConfig.Response()

    def ValidateDataResourceConfig(self, request: Any, context: Any) -> Any:
        return pb.ValidateDataResourceConfig.Response()

    def ConfigureProvider(self, request: Any, context: Any) -> Any:
        config = decode(request.config)
        project = config.get("project") if isinstance(config, dict) else None
        self.project = project if isinstance(project, str) else ""
        # each Terraform command configures the provider anew (a reattached one serves many)
        self.rules = Rules(enforced=not (isinstance(config, dict) and config.get("request_reason") == HISTORY))
        return pb.ConfigureProvider.Response()

    def UpgradeResourceState(self, request: Any, context: Any) -> Any:
        block = self._block("resources", request.type_name)
        raw = json.loads(request.raw_state.json) if request.raw_state.json else None
        return pb.UpgradeResourceState.Response(upgraded_state=encode(conform(block, raw)))

    def ReadResource(self, request: Any, context: Any) -> Any:
        current = decode(request.current_state)
        if current is None:
            return pb.ReadResource.Response(new_state=request.current_state, private=request.private)
        if request.type_name in os.environ.get("TFSTANDIN_GONE", "").split(","):
            # Google lost it (a preempted TPU VM someone deleted): the refresh reads it as gone
            return pb.ReadResource.Response(new_state=encode(None), private=request.private)
        block = self._block("resources", request.type_name)
        read = Filler(request.type_name, current, self.project).block(block, mark_unknown(block, current))
        return pb.ReadResource.Response(new_state=encode(read), private=request.private)

    def PlanResourceChange(self, request: Any, context: Any) -> Any:
        proposed = decode(request.proposed_new_state)
        block = self._block("resources", request.type_name)
        planned = None if proposed is None else mark_unknown(block, proposed)
        refused = self.rules.check(request.type_name, decode(request.prior_state), proposed)
        return pb.PlanResourceChange.Response(
            planned_state=encode(planned), planned_private=request.prior_private,
            diagnostics=[pb.Diagnostic(severity=pb.Diagnostic.ERROR, summary=summary, detail=detail)
                         for summary, detail in refused])

    def ApplyResourceChange(self, request: Any, context: Any) -> Any:
        planned = decode(request.planned_state)
        if planned is None:
            return pb.ApplyResourceChange.Response(new_state=encode(None))
        block = self._block("resources", request.type_name)
        new = Filler(request.type_name, planned, self.project).block(block, planned)
        return pb.ApplyResourceChange.Response(new_state=encode(new), private=request.planned_private)

    def ImportResourceState(self, request: Any, context: Any) -> Any:
        block = self._block("resources", request.type_name)
        state = Filler(request.type_name, {"name": request.id}, self.project).block(block, mark_unknown(block, {"id": request.id}))
        return pb.ImportResourceState.Response(imported_resources=[
            pb.ImportResourceState.ImportedResource(type_name=request.type_name, state=encode(state))])

    def ReadDataSource(self, request: Any, context: Any) -> Any:
        config = decode(request.config)
        block = self._block("data_sources", request.type_name)
        state = Filler(request.type_name, config or {}, self.project).block(block, mark_unknown(block, config))
        return pb.ReadDataSource.Response(state=encode(state))

    def GetFunctions(self, request: Any, context: Any) -> Any:
        return pb.GetFunctions.Response()

    def StopProvider(self, request: Any, context: Any) -> Any:
        return pb.StopProvider.Response()
