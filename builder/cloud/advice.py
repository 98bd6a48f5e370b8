"""Calendar-mode advice from Compute Engine (google-cloud-compute's ``AdviceClient.calendar_mode``, REST:
``POST /compute/v1/projects/{project}/regions/{region}/advice/calendarMode``): for one slice (the
generation's ``vm_family``, its chips, a window of whole days starting within a range), the zones of
the region that can deliver it and when, and the ones that cannot (``NO_CAPACITY``,
``CONDITIONS_NOT_MET``, ``NOT_SUPPORTED``), each with Google's details.

Endpoint: ``endpoint`` (``--endpoint``), else ``TPUBUILD_COMPUTE_ENDPOINT`` (builder/cloud/clients.py;
its ``/compute/v1`` path is the client's own); an ``http://`` one needs no credentials.
"""

from __future__ import annotations

import datetime
from typing import Any

from builder.cloud import clients
from builder.cloud.errors import cloud_call

#: The one spec tpubuild asks about, as the request's map key.
SPEC = "slice"


def client(endpoint: str | None = None) -> Any:
    from google.cloud import compute_v1

    endpoint = endpoint or (clients.emulated("TPUBUILD_COMPUTE_ENDPOINT") or "").removesuffix("/compute/v1") or None
    if endpoint and endpoint.startswith("http://"):
        from google.auth.credentials import AnonymousCredentials

        return compute_v1.AdviceClient(transport="rest", credentials=AnonymousCredentials(),
                                       client_options={"api_endpoint": endpoint})
    options = {"api_endpoint": endpoint} if endpoint else {}
    return compute_v1.AdviceClient(transport="rest", credentials=clients.credentials(), client_options=options)


def _stamp(t: datetime.datetime) -> str:
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def calendar_mode(project: str, region: str, zones: list[str], vm_family: str, chips: int,
                  earliest: datetime.datetime, latest: datetime.datetime, days: int,
                  endpoint: str | None = None) -> list[dict[str, str]]:
    """Each zone of ``zones`` (in that order) with its advice: ``status`` RECOMMENDED (``start`` and
    ``end`` the window Google proposes), NO_CAPACITY, CONDITIONS_NOT_MET or NOT_SUPPORTED, and
    ``details``; a zone the answer does not mention is ``NOT_ANSWERED``."""
    duration = f"{days * 86400}s"
    spec = {
        "target_resources": {"aggregate_resources": {"vm_family": vm_family, "accelerator_count": chips,
                                                     "workload_type": "BATCH"}},
        "time_range_spec": {"start_time_not_earlier_than": _stamp(earliest), "start_time_not_later_than": _stamp(latest),
                            "min_duration": duration, "max_duration": duration},
        "location_policy": {"locations": {f"zones/{z}": {"preference": "ALLOW"} for z in zones}},
        "deployment_type": "DENSE",
    }
    with cloud_call(f"asking Compute Engine for calendar-mode advice in {region}"):
        answer = client(endpoint).calendar_mode(project=project, region=region, calendar_mode_advice_request_resource={
            "future_resources_specs": {SPEC: spec}})
    found: dict[str, dict[str, str]] = {}
    for recommendation in answer.recommendations:
        per = recommendation.recommendations_per_spec.get(SPEC)
        if per is None:
            continue
        if per.location:
            zone = per.location.removeprefix("zones/")
            found.setdefault(zone, {"zone": zone, "status": "RECOMMENDED", "start": per.start_time, "end": per.end_time,
                                    "details": ""})
        for where, other in per.other_locations.items():
            zone = where.removeprefix("zones/")
            found.setdefault(zone, {"zone": zone, "status": other.status or "OTHER_LOCATION_STATUS_UNDEFINED",
                                    "start": "", "end": "", "details": other.details})
    return [found.get(z, {"zone": z, "status": "NOT_ANSWERED", "start": "", "end": "", "details": ""}) for z in zones]
