"""``tpubuild status``: what is running, asked of the APIs themselves.

* TPU: google-cloud-tpu, v1 ``GetNode`` for the node architecture, v2 for TPU VMs: state, health,
  runtime, endpoints. With TPU_QUEUED (vm) also v2 ``GetQueuedResource``: the queued resource's
  state (WAITING_FOR_RESOURCES, ACTIVE, FAILED, ...), shown on its own ``queued`` line.
* Filestore: google-cloud-filestore ``GetInstance`` (zonal, or regional for REGIONAL/ENTERPRISE):
  state, IP, capacity.
* Slice (mig architecture, no TPU API object): the MIG named like the TPU (or ``<TPU>-b``:
  make-before-break's two slots, both read, the other one named beside; with two, each one's
  accelerator type and provisioning from the mig module's state, cloud/interrupted.py) through the
  same REST calls, plus its workload policy (the topology it was created for), set against the
  topology, VM count, machine type and provisioning values.env asks for.
* Capacity (mig with flex-start or calendar): the slice's resize request or calendar-mode future
  reservation (Compute Engine REST): waiting, provisioning, active, failed, and when it ends.
* MIG (node): Compute Engine REST (``instanceGroupManagers.get`` and ``listManagedInstances``
  through google-auth's AuthorizedSession; no google-cloud-compute dependency): target size,
  running instances, stable.
* Terraform state: whether ``gs://<state_bucket>/<ENV>/<module>/default.tfstate`` exists.
* The lock holder, the applied snapshot's build, a build stopped half way (cloud/interrupted.py).
* A module's link (its catalogue entry's ``state_link``: the dashboard's console URL, the
  ``console_url`` output of ``modules/dashboard``), read from its state object
  (``<ENV>/<module>/default.tfstate``); "not created" while that state has none.
* With ``ENV_TTL_HOURS``: the TTL's Cloud Scheduler job (google-cloud-scheduler) and when it fires.
* With ``TPU_RECOVERY``: the health check's recoveries (builder/cloud/recoveries.py): when, why,
  how long training was down, what the down time cost, and a recovery under way or given up.

Which resources an environment has is its modules' (``status`` on each catalogue entry, in the
order of ``builder.catalogue.modules.shown``: the TPU first, then the hosts, then the data); :data:`READERS` asks the API behind
each part's key and the entry's row formats it. Every part is asked separately; a part that fails is reported as ``error`` with one line and the
command exits 1 after printing everything (absent resources are not errors).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from builder.catalogue import modules as catalogue
from builder.catalogue.status_rows import moving_row, recovery_row, slot_places
from builder.cloud import clients, interrupted, lock, recoveries, snapshot, ttl
from builder.cloud.buckets import exists
from builder.cloud.errors import cloud_call, describe
from builder.config import Settings
from builder.config.candidates import at, granted
from builder.config.filestore import TIERS
from builder.config.offers import MAX_RUN_HOURS, calendar_name, calendar_window
from builder.config.replace import slot_names
from builder.facts.actions import Action
from builder.facts.errors import TpuBuildError, WorldError
from builder.planning import candidate_table
from builder.planning.plan import make_plan


def _absent() -> dict[str, Any]:
    return {"state": "ABSENT"}


def _get(what: str, call: Callable[[], Any]) -> Any:
    """``call()`` (a Get of one resource) inside ``cloud_call(what)``; None when it is NotFound."""
    from google.api_core import exceptions as gexc

    with cloud_call(what):
        try:
            return call()
        except gexc.NotFound:
            return None


def _tpu(settings: Settings) -> dict[str, Any]:
    """The slice under each name it may have (make-before-break's two slots on vm): the one running
    what values.env asks for, else the first that exists; ``others`` names the rest that exist
    (a replacement under way)."""
    client = clients.tpu(settings.arch)
    where = f"projects/{settings.project_id}/locations/{settings.zone}/nodes"
    found = {}
    for slot in slot_names(settings):
        node = _get(f"reading TPU {slot}", lambda slot=slot: client.get_node(name=f"{where}/{slot}"))
        if node is not None:
            found[slot] = node
    if not found:
        return _absent()
    asked = [n for n, node in found.items() if node.accelerator_type == settings.accelerator_type]
    name = asked[0] if asked else next(iter(found))
    node = found[name]
    endpoints = [f"{e.ip_address}:{e.port}" if e.port else e.ip_address for e in node.network_endpoints]
    version = node.tensorflow_version if settings.arch == "node" else node.runtime_version
    return {"name": name, "api": "tpu v1" if settings.arch == "node" else "tpu v2",
            "state": node.state.name, "health": node.health.name, "accelerator_type": node.accelerator_type,
            "runtime_version": version, "endpoints": endpoints,
            "others": [f"{n} ({other.accelerator_type}, {other.state.name})"
                       for n, other in found.items() if n != name],
            "slices": [{"name": n, "accelerator_type": found[n].accelerator_type} for n in sorted(found, key=name.__ne__)]}


def _queued(settings: Settings) -> dict[str, Any]:
    client = clients.tpu("vm")
    name = f"projects/{settings.project_id}/locations/{settings.zone}/queuedResources/{settings.tpu_name}"
    qr = _get(f"reading queued resource {settings.tpu_name}", lambda: client.get_queued_resource(name=name))
    if qr is None:
        return _absent()
    spec = qr.tpu.node_spec[0].node if qr.tpu.node_spec else None
    valid = qr.queueing_policy.valid_until_time
    return {"name": settings.tpu_name, "state": qr.state.state.name,
            "accelerator_type": spec.accelerator_type if spec else "",
            "valid_until": valid.isoformat() if valid else ""}


def filestore_location(settings: Settings) -> str:
    return settings.region if TIERS[settings.shared_fs_tier].regional else settings.zone


def _filestore(settings: Settings) -> dict[str, Any]:
    client = clients.filestore()
    name = (f"projects/{settings.project_id}/locations/{filestore_location(settings)}"
            f"/instances/{settings.filestore_name}")
    inst = _get(f"reading Filestore {settings.filestore_name}", lambda: client.get_instance(name=name))
    if inst is None:
        return _absent()
    ips = [ip for net in inst.networks for ip in net.ip_addresses]
    shares = [{"name": s.name, "capacity_gb": int(s.capacity_gb)} for s in inst.file_shares]
    return {"name": settings.filestore_name, "state": inst.state.name, "tier": inst.tier.name,
            "ip": ips[0] if ips else "", "shares": shares}


def _compute_get(session: Any, url: str, what: str) -> dict[str, Any] | None:
    """GET one Compute Engine REST resource inside ``cloud_call``: its JSON, None when absent."""
    with cloud_call(f"reading {what}"):
        resp = session.get(url, timeout=30)
        if resp.status_code == 404:
            return None
        _raise_for(resp, what)
        return resp.json()


def _group(settings: Settings, name: str) -> dict[str, Any]:
    """A zonal MIG: its manager resource and its instances (Compute Engine REST)."""
    session, base = clients.compute()
    url = f"{base}/projects/{settings.project_id}/zones/{settings.zone}/instanceGroupManagers/{name}"
    body = _compute_get(session, url, f"MIG {name}")
    if body is None:
        return _absent()
    with cloud_call(f"reading MIG {name}"):
        listing = session.post(f"{url}/listManagedInstances", timeout=30)
        _raise_for(listing, f"MIG {name} instances")
        instances = listing.json().get("managedInstances", [])
    running = sum(1 for i in instances if i.get("instanceStatus") == "RUNNING")
    return {"name": name, "state": "STABLE" if body.get("status", {}).get("isStable") else "UPDATING",
            "target_size": int(body.get("targetSize", 0)), "instances": len(instances), "running": running,
            "manager": body}


def _mig(settings: Settings) -> dict[str, Any]:
    out = _group(settings, settings.mig_name)
    out.pop("manager", None)
    if out["state"] != "ABSENT":
        out["expected_size"] = settings.hosts
    return out


def _slice(settings: Settings) -> dict[str, Any]:
    """mig architecture: the slice's MIG (named like the TPU, modules/tpu_mig) and its policy,
    under each name it may have (make-before-break's two slots, as :func:`_tpu`): the one running
    the topology values.env asks for (its workload policy ``<name>-<topology>``), else the first
    that exists; ``others`` names the rest that exist (a replacement under way)."""
    shape = settings.mig_shape
    found = {}
    for slot in slot_names(settings):
        group = _group(settings, slot)
        if group["state"] != "ABSENT":
            policy_url = (group.pop("manager").get("resourcePolicies") or {}).get("workloadPolicy", "")
            found[slot] = {**group, "policy": policy_url.rsplit("/", 1)[-1] if policy_url else ""}
    if not found:
        return _absent()
    asked = [n for n, g in found.items() if g["policy"].endswith(f"-{shape.topology}")]
    name = asked[0] if asked else next(iter(found))
    out = found[name]
    recorded = interrupted.mig_slots(settings) if len(found) > 1 else {}  # a group does not name its type
    out.update({"topology": shape.topology, "vms": shape.vms, "machine_type": shape.machine_type,
                "provisioning": settings.provisioning,
                "others": [f"{n} ({'policy ' if g['policy'] else 'no workload policy'}{g['policy']}, "
                           f"{g['running']}/{g['target_size']} running)" for n, g in found.items() if n != name],
                "slices": [{"name": n, "accelerator_type": "", **recorded.get(n, {})} for n in sorted(found, key=name.__ne__)]})
    return out


def _capacity(settings: Settings) -> dict[str, Any]:
    """mig with flex-start or calendar: the capacity request the slice waits on (Compute Engine
    REST): the slice's bulk MIG (either slot) and its bulk instance operation, or the calendar-mode future
    reservation ``<TPU name>-cal``; where it stands and when the slice's run ends."""
    session, base = clients.compute()
    zone = f"{base}/projects/{settings.project_id}/zones/{settings.zone}"
    if settings.provisioning == "calendar":
        name = calendar_name(settings.tpu_name)
        url, kind = f"{zone}/futureReservations/{name}", "calendar-mode future reservation"
        body = _compute_get(session, url, f"{kind} {name}")
    else:  # flex-start: the slice's bulk group (either slot) and its bulk instance operation
        kind, body = "flex-start bulk group", None
        for name in slot_names(settings):
            body = _compute_get(session, f"{zone}/instanceGroupManagers/{name}", f"{kind} {name}")
            if body is not None:
                break
    if body is None:
        return _absent()
    status = body.get("status") or {}
    if settings.provisioning == "calendar":
        window = body.get("timeWindow") or {}
        start = window.get("startTime") or settings.calendar_start
        end = window.get("endTime") or calendar_window(settings.calendar_start, settings.calendar_days)[1].strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        state, ends = status.get("procurementStatus", "UNKNOWN"), f"starts {start}, expires at {end}"
    else:
        hours = settings.max_run_hours or MAX_RUN_HOURS
        # the group's bulk instance operation (Compute Engine: status.bulkInstanceOperation): in
        # progress while it waits for the capacity of every VM; its last check's error, if any
        bulk = status.get("bulkInstanceOperation") or {}
        status = bulk.get("lastProgressCheck") or {}
        state = "EMPTY" if not int(body.get("targetSize") or 0) else (
            "IN_PROGRESS" if bulk.get("inProgress") else ("FAILED" if status.get("error") else "DONE"))
        ends = f"its VMs run at most {hours} h from their start"
    errors = (status.get("error") or status.get("lastAttempt", {}).get("error") or {}).get("errors") or []
    return {"name": name, "kind": kind, "state": state, "ends": ends,
            "error": " ".join((errors[0].get("message") or "").split()) if errors else ""}


def _raise_for(resp: Any, what: str) -> None:
    if resp.status_code >= 400:
        try:
            message = resp.json().get("error", {}).get("message", "")
        except ValueError:
            message = resp.text[:200]
        raise WorldError(f"reading {what}: HTTP {resp.status_code} {' '.join(message.split())}")


def _state(settings: Settings) -> dict[str, Any]:
    client = clients.storage(settings.project_id)
    bucket = client.bucket(settings.state_bucket)
    out: dict[str, Any] = {"bucket": settings.state_bucket, "bucket_exists": True, "modules": {},
                           "lock": None, "applied": None}

    if not exists(client, settings.state_bucket):
        out["bucket_exists"] = False
        return out
    with cloud_call(f"reading gs://{settings.state_bucket}"):
        for module in make_plan(settings, Action.CREATE).modules:
            out["modules"][module] = bucket.blob(f"{settings.env_name}/{module}/default.tfstate").exists()
    held = lock.read(bucket, settings.env_name)
    out["lock"] = interrupted.held_record(held)
    for spec in _linked(settings.arch):
        there = out["modules"].get(spec.name)
        out[f"{spec.name}_url"] = _state_link(bucket, settings.env_name, spec) if there else None
    out["moving"] = {s.name: places for s in catalogue.specs(settings.arch) if s.move_copy and out["modules"].get(s.name)
                     and len(places := slot_places(_output(bucket, settings.env_name, s.name, "slots"))) > 1}
    applied = snapshot.read(bucket, settings.env_name)
    out["applied"] = None if applied is None else {
        "build_id": applied.build_id, "action": applied.action, "time": applied.time,
        "outstanding": sorted(applied.outstanding), "absent": sorted(applied.absent)}
    return out


def _linked(arch: str) -> tuple[catalogue.ModuleSpec, ...]:
    """The modules of ``arch`` whose state holds a link that status shows."""
    return tuple(s for s in catalogue.specs(arch) if s.state_link)


def _output(bucket: Any, env: str, module: str, name: str) -> Any:
    """The output ``name`` of the module's Terraform state (None when it has none)."""
    with cloud_call(f"reading the {module} state of {env}"):
        raw = bucket.blob(f"{env}/{module}/default.tfstate").download_as_bytes()
    try:
        return json.loads(raw).get("outputs", {}).get(name, {}).get("value")
    except (ValueError, AttributeError):
        return None


def _state_link(bucket: Any, env: str, spec: catalogue.ModuleSpec) -> str | None:
    """The ``state_link`` output (a console URL) of the module's Terraform state (None when it has none)."""
    url = _output(bucket, env, spec.name, spec.state_link)
    return url if isinstance(url, str) and url.startswith("https://") else None


def _ttl(settings: Settings) -> dict[str, Any]:
    return ttl.read(settings)


def _recoveries(settings: Settings) -> dict[str, Any]:
    return recoveries.read(settings)


#: A status part's key (a catalogue entry's :class:`~builder.catalogue.modules.StatusPart`) → its API read.
READERS: dict[str, Callable[[Settings], dict[str, Any]]] = {
    "tpu": _tpu, "queued": _queued, "filestore": _filestore, "slice": _slice, "mig": _mig, "capacity": _capacity}


def _parts(arch: str) -> list[catalogue.StatusPart]:
    """The resource parts of ``arch``'s status, module by module (``catalogue.shown``)."""
    return [part for spec in catalogue.shown(arch) for part in spec.status]


def _granted(settings: Settings) -> Any:
    """The candidate the applied snapshot says granted the slice (builder/config/candidates.py), or
    None (none recorded, no snapshot, or it cannot be read: the terraform part reports that)."""
    try:
        found = snapshot.read(clients.storage(settings.project_id).bucket(settings.state_bucket), settings.env_name)
    except Exception:  # noqa: BLE001 - the terraform part reads the snapshot again and reports the failure
        return None
    return granted(found) if found is not None else None


def gather(settings: Settings) -> dict[str, Any]:
    """Every part's read. The slice and everything zonal are read where the applied snapshot says the
    slice was granted (a candidate list's later zone or mode), else at the first candidate."""
    place = _granted(settings)
    listed = settings.candidates
    if place is not None:
        settings = at(settings, place)
    parts: list[tuple[str, Callable[[Settings], dict[str, Any]]]] = [
        (part.key, READERS[part.key]) for part in _parts(settings.arch) if part.when(settings)]
    parts.append(("terraform", _state))
    if settings.env_ttl_hours:
        parts.append(("ttl", _ttl))
    if settings.recovery:
        parts.append(("recovery", _recoveries))
    report: dict[str, Any] = {"env": settings.env_name, "project": settings.project_id, "zone": settings.zone,
                              "arch": settings.arch, "errors": []}
    if place is not None:
        report["granted"] = candidate_table.granted_record(place, listed)
    for key, fn in parts:
        try:
            report[key] = fn(settings)
        except TpuBuildError as exc:
            if "credentials" in str(exc):
                raise
            report[key] = {"state": "ERROR", "error": str(exc)}
            report["errors"].append(str(exc))
        except Exception as exc:  # noqa: BLE001 - one part failing must not hide the others
            report[key] = {"state": "ERROR", "error": describe(exc)}
            report["errors"].append(describe(exc))
    report["interrupted"] = interrupted.read(settings, report)  # a build that stopped half way
    return report


def _missing(part: dict[str, Any]) -> bool:
    return part["state"] in ("ABSENT", "ERROR")


def _missing_line(label: str, part: dict[str, Any]) -> str:
    """``  tpu        absent`` or ``  tpu        error: <why>``."""
    why = f": {part['error']}" if "error" in part else ""
    return f"  {label:<10} {part['state'].lower()}{why}"


def _ttl_row(ttl: dict[str, Any]) -> str:
    return (f"destroys the TPU at {ttl['fires']} (in {ttl['in']}; job {ttl['state'].lower()}; "
            "`tpubuild ttl extend 4h` pushes it back)")


def text(report: dict[str, Any]) -> list[str]:
    lines = [f"{report['env']} ({report['project']}, {report['zone']}, {report['arch']} architecture)"]
    if report.get("granted"):
        lines.append(f"  granted    {candidate_table.granted_text(report['granted'])}")
    rows = [(p.key, p.row) for p in _parts(report["arch"])] + [("ttl", _ttl_row), ("recovery", recovery_row)]
    for key, row in rows:
        part = report.get(key)
        if part is not None:
            lines.append(_missing_line(key, part) if _missing(part) else f"  {key:<10} {row(part)}")
    tf = report["terraform"]
    if tf.get("state") == "ERROR":
        lines.append(f"  terraform  error: {tf['error']}")
    elif not tf["bucket_exists"]:
        lines.append(f"  state      gs://{tf['bucket']} does not exist (run tpubuild initialize)")
    else:
        mods = ", ".join(f"{m} {'yes' if there else 'no'}" for m, there in tf["modules"].items())
        lines.append(f"  state      gs://{tf['bucket']}: {mods}")
        held = tf["lock"]
        if held is None:
            lines.append("  lock       free")
        elif held["state"] == "stale":
            lines.append(f"  lock       stale (the next dispatch takes it over): {held['describe']}")
        else:
            lines.append(f"  lock       held by {held['describe']}")
        lines.extend(interrupted.lines(report["interrupted"]) if report.get("interrupted") else [])
        for spec in _linked(report["arch"]):
            url = tf.get(f"{spec.name}_url")
            lines.append(f"  {spec.name:<10} {url}" if url else
                         f"  {spec.name:<10} not created yet (tpubuild create applies it)")
        lines.extend(f"  moving     {moving_row(module, places)}" for module, places in tf.get("moving", {}).items())
        applied = tf["applied"]
        if applied is None:
            lines.append("  applied    none (no successful build yet)")
        else:
            extra = "".join(f"; {k}: {', '.join(applied[k])}" for k in ("outstanding", "absent") if applied[k])
            lines.append(f"  applied    build {applied['build_id']} ({applied['action']}, {applied['time']}){extra}")
    return lines
