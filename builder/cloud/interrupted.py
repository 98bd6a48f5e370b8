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
list price, builder/cost.py; on mig the other slot's type is not known from its group, so only the
one values.env asks for is priced). A lock held by a build still QUEUED or WORKING, or one whose
build Cloud Build cannot name, says nothing here: the lock line already names it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder import modules as catalogue

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


def command(action: str, scope: dict[str, Any]) -> str:
    """The submit that runs the stopped build's action again with its scope."""
    flags = "".join(f" --{k}" for k in ("tpu", "mig") if scope.get(k))
    return f"tpubuild submit --action {action}{flags} --wait"


def _stopped(settings: Settings, held: dict[str, Any]) -> tuple[str, str] | None:
    """(outcome, where) of the lock's finished build; None while it runs or cannot be named."""
    from builder.cloud import builds, clients, lock

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


def slice_hourly(settings: Settings, accelerator_type: str) -> float | None:
    """The list price per hour of a slice of ``accelerator_type`` with these settings' provisioning."""
    from builder import cost
    from builder.errors import BadInput
    from builder.topology import parse

    try:
        topo = parse(accelerator_type)
    except BadInput:
        return None
    price, _approx, _why = cost.tpu_chip_hour(topo.generation, settings.region, cost.provisioning(settings),
                                              pod=topo.hosts > 1)
    return None if price is None else price * topo.chips


def read(settings: Settings, report: dict[str, Any]) -> dict[str, Any] | None:
    """The section, from the report's lock and slice parts; None when no build stopped half way."""
    tf = report.get("terraform") or {}
    held = tf.get("lock")
    if not held or tf.get("state") == "ERROR":
        return None
    stopped = _stopped(settings, held)
    if stopped is None:
        return None
    module = catalogue.accelerator_module(settings.arch)
    part = next((report[k] for k in ("tpu", "slice") if isinstance(report.get(k), dict)
                 and report[k].get("slices")), None)
    slices = [dict(s) for s in (part or {}).get("slices", [])]
    if settings.arch == "mig" and slices and str(part.get("policy", "")).endswith(f"-{settings.mig_shape.topology}"):
        slices[0]["accelerator_type"] = settings.accelerator_type  # the group runs the topology values.env asks for
    for one in slices:
        one["hourly"] = slice_hourly(settings, one["accelerator_type"]) if one.get("accelerator_type") else None
    return {"build_id": held["build_id"], "action": held["action"], "outcome": stopped[0], "where": stopped[1],
            "command": command(held["action"], held.get("scope") or {}), "module": module, "slices": slices,
            "asked": (part or {}).get("name", "")}


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
                   f"rerun's {section['module']}-release deletes {', '.join(old)}")
    return out
