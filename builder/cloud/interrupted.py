"""``tpubuild status`` after a build stopped half way: which build stopped where, what
bills meanwhile, and the one command that finishes the job.

A build that dies (cancelled, timed out, a worker lost) keeps the environment lock: ``stale``
when ``submit --wait`` saw it fail (the lock names the outcome and the failing step), else
``held`` by a build Cloud Build reports as finished (asked here: GetBuild). Either way its
pipeline stopped somewhere, and every step of every pipeline is safe to run again from the start
(docs/safety.md, "Kill it anywhere, run it again"): the same action with the same scope, submitted
again, ends where an uninterrupted build would have. Under make-before-break the slice part
(``tpu`` on vm, ``slice`` on mig) then lists both slots; each is billed until the rerun's
``<module>-release`` deletes the old one, and the section prices each (its accelerator type's
list price, builder/catalogue/cost.py). On vm the TPU API names each slot's type; on mig a group does not,
so status's slice part (``status._slice``, with two slots) reads each slot's type and provisioning
with :func:`mig_slots` from the ``slices`` output of the mig module's own Terraform state
(``<ENV>/mig/default.tfstate``: every slot the last apply made, with the values it was made from,
``wanted``), and each slot is priced at its own provisioning. A slot that state does not list (a
build killed inside the apply that made it, before the state was written) is priced only when its
workload policy is the topology values.env asks for; else its price is unknown, and the total
says "and more". A lock
held by a build still QUEUED or WORKING, or one whose build Cloud Build cannot name, says nothing
here: the lock line already names it.

``status`` reads the section from its report (:func:`read`); ``plan``, when it reads the applied
snapshot from the state bucket, reads the same section with :func:`for_plan` (the lock, then the
slice part only when the lock's build stopped) and prints the same lines.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from builder.catalogue import cost, modules as catalogue
from builder.cloud import builds, clients, lock
from builder.facts.errors import BadInput
from builder.facts.topology import parse

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


def command(action: str, scope: dict[str, Any]) -> str:
    """The submit that runs the stopped build's action again with its scope."""
    flags = "".join(f" --{k}" for k in ("tpu", "mig") if scope.get(k))
    return f"tpubuild submit --action {action}{flags} --wait"


def _stopped(settings: Settings, held: dict[str, Any]) -> tuple[str, str] | None:
    """(outcome, where) of the lock's finished build; None while it runs or cannot be named."""
    if held["state"] == "stale":
        return held["outcome"] or "without releasing the lock", (
            f"at step {held['failed_step']}" if held["failed_step"] else "")
    if not held["build_id"]:
        return None
    try:
        build = builds.get(clients.cloudbuild(), settings.project_id, held["build_id"])
    except Exception:  # noqa: BLE001 - unknown is not stopped: the lock line names the build anyway
        return None
    status = builds.status_name(build)
    if status not in lock.FINISHED:
        return None
    failed = builds.failing_step(build)
    done = [st.id for st in build.steps if st.status.name == "SUCCESS"]
    where = f"at step {failed}" if failed else f"after step {done[-1]}" if done else "before its first step"
    return status, where


def held_record(held: Any) -> dict[str, Any] | None:
    """The lock (builder/cloud/lock.py ``Lock``, or None) as status's report and this section read it."""
    return None if held is None else {
        "build_id": held.build_id, "action": held.action, "holder": held.holder, "since": held.created,
        "state": held.state, "outcome": held.outcome, "failed_step": held.failed_step, "log_url": held.log_url,
        "scope": {k: held.scope.get(k, False) for k in ("tpu", "mig")}, "describe": held.describe()}


def slice_hourly(settings: Settings, accelerator_type: str, provisioning: str = "") -> float | None:
    """The list price per hour of a slice of ``accelerator_type`` with ``provisioning`` (default:
    these settings' provisioning)."""
    try:
        topo = parse(accelerator_type)
    except BadInput:
        return None
    model = provisioning or cost.provisioning(settings)
    price, _approx, _why = cost.tpu_chip_hour(topo.generation, settings.region, model, pod=topo.hosts > 1)
    return None if price is None else price * topo.chips


def read(settings: Settings, report: dict[str, Any]) -> dict[str, Any] | None:
    """The section, from the report's lock and slice parts; None when no build stopped half way."""
    tf = report.get("terraform") or {}
    held = tf.get("lock")
    if not held or tf.get("state") == "ERROR":
        return None
    stopped = _stopped(settings, held)
    return None if stopped is None else _section(settings, held, stopped, report)


def _section(settings: Settings, held: dict[str, Any], stopped: tuple[str, str],
             report: dict[str, Any]) -> dict[str, Any]:
    """The section of a lock whose build stopped (``stopped``: outcome, where), its slices from the
    report's slice part (``tpu`` on vm, ``slice`` on mig)."""
    module = catalogue.accelerator_module(settings.arch)
    part = next((report[k] for k in ("tpu", "slice") if isinstance(report.get(k), dict)
                 and report[k].get("slices")), None)
    slices = [dict(s) for s in (part or {}).get("slices", [])]
    if settings.arch == "mig" and slices:  # each slot's recorded type is in the part (status._slice: mig_slots)
        if not slices[0]["accelerator_type"] and str(part.get("policy", "")).endswith(
                f"-{settings.mig_shape.topology}"):
            slices[0]["accelerator_type"] = settings.accelerator_type  # the group runs the topology values.env asks for
    for one in slices:
        one["hourly"] = (slice_hourly(settings, one["accelerator_type"], one.get("provisioning", ""))
                         if one.get("accelerator_type") else None)
    return {"build_id": held["build_id"], "action": held["action"], "outcome": stopped[0], "where": stopped[1],
            "command": command(held["action"], held.get("scope") or {}), "module": module, "slices": slices,
            "asked": (part or {}).get("name", ""), "prices": cost.table()["source"]["text"]}


def mig_slots(settings: Settings) -> dict[str, dict[str, str]]:
    """Each slot the mig module's Terraform state holds (its ``slices`` output), by group name: the
    accelerator type and provisioning it was applied with. Empty when that state is absent or
    cannot be read or parsed (the billing line then says the price is unknown)."""
    path = f"{settings.env_name}/{catalogue.accelerator_module('mig')}/default.tfstate"
    try:
        blob = clients.storage(settings.project_id).bucket(settings.state_bucket).blob(path)
        slots = json.loads(blob.download_as_bytes())["outputs"]["slices"]["value"]
        return {spec["name"]: {"accelerator_type": spec["wanted"]["accelerator_type"],
                               "provisioning": spec["wanted"].get("provisioning", "")}
                for spec in slots.values() if spec["wanted"].get("accelerator_type")}
    except Exception:  # noqa: BLE001 - absent, unreadable or from another layout: the price is unknown
        return {}


def for_plan(settings: Settings, readers: Mapping[str, Callable[[Settings], dict[str, Any]]]) -> dict[str, Any] | None:
    """The section for ``plan`` (None: no build stopped half way): the lock from the state bucket;
    only when its build stopped, the slice part, read as status reads it (``readers``: status's
    ``READERS``, passed in, as status.py imports this module). A
    slice part that cannot be read leaves the stopped line without a billing line."""
    held = held_record(lock.read(clients.storage(settings.project_id).bucket(settings.state_bucket),
                                 settings.env_name))
    stopped = None if held is None else _stopped(settings, held)
    if held is None or stopped is None:
        return None
    key = "slice" if settings.arch == "mig" else "tpu"
    try:
        part = readers[key](settings)
    except Exception as exc:  # noqa: BLE001 - the stopped line stands without the slices
        part = {"state": "ERROR", "error": str(exc)}
    return _section(settings, held, stopped, {key: part})


def lines(section: dict[str, Any]) -> list[str]:
    """``stopped`` (which build, where, the command) and, with two slices, ``billing`` (each one's price)."""
    where = f" {section['where']}" if section["where"] else ""
    out = [f"  stopped    build {section['build_id']} ({section['action']}) ended {section['outcome']}{where} "
           f"without finishing; finish the job: {section['command']} (it picks up where the build stopped; "
           "docs/safety.md)"]
    slices = section["slices"]
    if len(slices) > 1:
        def one(s: dict[str, Any]) -> str:
            price = f"${s['hourly']:,.2f}/h" if s["hourly"] is not None else "price unknown"
            kind = f"{s['accelerator_type']}, " if s.get("accelerator_type") else ""
            return f"{s['name']} ({kind}{price})"

        known = [s["hourly"] for s in slices if s["hourly"] is not None]
        total = f"${sum(known):,.2f}/h{' and more' if len(known) < len(slices) else ''}"
        old = [s["name"] for s in slices if s["name"] != section["asked"]]
        out.append(f"  billing    {len(slices)} slices: {' + '.join(one(s) for s in slices)} = {total}, until the "
                   f"rerun's {section['module']}-release deletes {', '.join(old)} (list prices from "
                   f"{section['prices']})")
    return out
