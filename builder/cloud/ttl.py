"""The TTL's Cloud Scheduler job, read and moved with google-cloud-scheduler (``tpubuild ttl``,
``tpubuild status``). The job itself is created by Terraform (modules/ttl); its schedule is a
one-shot cron ``m H D M *`` in Etc/UTC (builder/inputs/ttl.py), which Terraform ignores once created
(``ignore_changes``), so an extension here is never undone by a later apply.

Decision: ``extend D`` counts from the job's current expiry (``6h`` TTL + ``extend 4h`` = 10 h
after creation), not from now: extending twice extends twice. An expiry more than a year ahead
cannot be written as a one-shot cron and is refused.
"""

from __future__ import annotations

import datetime
from typing import Any

from builder.cloud import clients
from builder.cloud.errors import cloud_call
from builder.config import Settings
from builder.facts.errors import BadInput, WorldError
from builder.inputs import ttl


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _job(client: Any, settings: Settings) -> Any:
    from google.api_core import exceptions as gexc

    name = ttl.job_name(settings)
    with cloud_call(f"reading the TTL job {name}"):
        try:
            return client.get_job(name=name)
        except gexc.NotFound:
            return None


def read(settings: Settings, now: datetime.datetime | None = None) -> dict[str, Any]:
    """``{"state": "ABSENT"}`` or the job's name, state, schedule and next firing (UTC, ISO)."""
    now = now or _now()
    job = _job(clients.scheduler(), settings)
    if job is None:
        return {"state": "ABSENT", "name": ttl.job_name(settings)}
    fires = ttl.next_fire(job.schedule, now)
    return {"state": job.state.name, "name": job.name, "schedule": job.schedule, "time_zone": job.time_zone,
            "fires": fires.strftime("%Y-%m-%dT%H:%MZ"), "in": _span(fires - now)}


def extend(settings: Settings, by: datetime.timedelta, now: datetime.datetime | None = None) -> dict[str, Any]:
    """Move the job's schedule ``by`` later; returns (old, new) firing times."""
    from google.protobuf import field_mask_pb2

    now = now or _now()
    client = clients.scheduler()
    job = _job(client, settings)
    if job is None:
        raise WorldError(f"no TTL job {ttl.job_name(settings)}: the TPU has no TTL (set ENV_TTL_HOURS and "
                         "apply, or the TTL already fired)")
    if job.time_zone not in ("Etc/UTC", "UTC"):
        raise WorldError(f"the TTL job {job.name} runs in time zone {job.time_zone!r}, not Etc/UTC; "
                         "it was not made by tpubuild")
    try:
        old = ttl.next_fire(job.schedule, now)
    except ValueError as exc:
        raise WorldError(f"the TTL job {job.name}: {exc}; it was not made by tpubuild") from None
    new = old + by
    if new - now >= datetime.timedelta(days=365):
        raise BadInput(f"ttl extend: the TPU would expire {new:%Y-%m-%d}, a year or more from now; "
                       "a TTL fires within a year: extend by less, or remove ENV_TTL_HOURS")
    job.schedule = ttl.cron_for(new)
    with cloud_call(f"updating the TTL job {job.name}"):
        client.update_job(job=job, update_mask=field_mask_pb2.FieldMask(paths=["schedule"]))
    return {"name": job.name, "was": old.strftime("%Y-%m-%dT%H:%MZ"), "fires": new.strftime("%Y-%m-%dT%H:%MZ"),
            "in": _span(new - now), "schedule": job.schedule}


def _span(delta: datetime.timedelta) -> str:
    minutes = max(0, int(delta.total_seconds() // 60))
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    return (f"{days}d " if days else "") + f"{hours}h {mins:02d}m"
