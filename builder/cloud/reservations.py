"""Read the reservation or calendar-mode request a mig slice consumes, for the capacity check
(``builder/planning/capacity.py`` says which and what it means).

``GET {base}/projects/{project}/zones/{zone}/reservations/{name}`` (a Reservation: ``status``,
``specificReservation`` or, for TPUs, ``aggregateReservation``), ``.../reservations`` (the zone's
list, for ANY_RESERVATION) and ``.../futureReservations/{name}`` (a FutureReservation:
``status.procurementStatus``), Compute Engine v1 REST through google-auth's
AuthorizedSession (``clients.compute``, as the MIG's status reads; no google-cloud-compute
dependency).
"""

from __future__ import annotations

from typing import Any

from builder.cloud import clients, network
from builder.cloud.quotas import NotReadable
from builder.facts.errors import WorldError

#: Held.kind → the Compute Engine collection it is read from.
COLLECTIONS = {"reservation": "reservations", "any": "reservations", "calendar": "futureReservations"}

#: Pages of the zone's reservations read at most (500 each).
MAX_PAGES = 4


def listing(project: str, zone: str) -> list[dict[str, Any]]:
    """The project's reservations in ``zone``. Raises as :func:`read` does."""
    items: list[dict[str, Any]] = []
    token = ""
    for _ in range(MAX_PAGES):
        page = read(project, zone, "any", "", params={"maxResults": 500, **({"pageToken": token} if token else {})})
        items += [r for r in (page or {}).get("items") or [] if isinstance(r, dict)]
        token = str((page or {}).get("nextPageToken") or "")
        if not token:
            break
    return items


def read(project: str, zone: str, kind: str, name: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The resource (None: it does not exist; ``kind="any"``: the zone's list). Raises
    :class:`NotReadable` (403) or ``WorldError`` (any other failure)."""
    what = {"reservation": f"reservation {name}", "any": f"the reservations in {zone}",
            "calendar": f"calendar-mode request {name}"}[kind]
    path = f"{project}/zones/{zone}/{COLLECTIONS[kind]}" + (f"/{name}" if name else "")
    return network.get(path, what, zone, project, params)


def advice(project: str, region: str, spec: dict[str, Any]) -> dict[str, Any] | None:
    """Google's calendar-mode advice (``gcloud compute advice calendar-mode``): ``POST
    {base}/projects/{project}/regions/{region}/advice/calendarMode`` with the request's one
    ``futureResourcesSpecs`` entry ``spec`` (builder/planning/capacity.py ``advice_request``); the
    CalendarModeAdviceResponse, or None where the API answers 404. Raises :class:`NotReadable`
    (403, or an answer that is not advice: the check says so and goes on) or ``WorldError``
    (Compute Engine unreachable)."""
    import requests

    session, base = clients.compute()
    url = f"{base}/projects/{project}/regions/{region}/advice/calendarMode"
    try:
        reply = session.post(url, json={"futureResourcesSpecs": {"tpubuild": spec}}, timeout=60)
    except requests.RequestException as exc:
        raise WorldError(f"cannot reach Compute Engine for calendar-mode advice: {type(exc).__name__}") from None
    if reply.status_code == 404:
        return None
    if reply.status_code != 200:
        why = "not readable by these credentials (grant roles/compute.viewer)" if reply.status_code == 403 else (
            f"answered HTTP {reply.status_code}")
        raise NotReadable(f"calendar-mode advice in {region} of project {project}: {why}")
    try:
        body = reply.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise NotReadable("Compute Engine answered something that is not calendar-mode advice")
    return body
