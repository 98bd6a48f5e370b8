"""Read the reservation or calendar-mode request a mig slice consumes, for the capacity check
(``builder/capacity.py`` says which and what it means).

``GET {base}/projects/{project}/zones/{zone}/reservations/{name}`` (a Reservation: ``status``,
``specificReservation`` or, for TPUs, ``aggregateReservation``) and ``.../futureReservations/{name}``
(a FutureReservation: ``status.procurementStatus``), Compute Engine v1 REST through google-auth's
AuthorizedSession (``clients.compute``, as the MIG's status reads; no google-cloud-compute
dependency).
"""

from __future__ import annotations

from typing import Any

from builder.cloud.quotas import NotReadable
from builder.errors import WorldError

#: Held.kind → the Compute Engine collection it is read from.
COLLECTIONS = {"reservation": "reservations", "calendar": "futureReservations"}


def read(project: str, zone: str, kind: str, name: str) -> dict[str, Any] | None:
    """The resource (None: it does not exist). Raises :class:`NotReadable` (403) or
    ``WorldError`` (any other failure)."""
    import requests

    from builder.cloud import clients

    session, base = clients.compute()
    url = f"{base}/projects/{project}/zones/{zone}/{COLLECTIONS[kind]}/{name}"
    what = f"{'reservation' if kind == 'reservation' else 'calendar-mode request'} {name}"
    try:
        reply = session.get(url, timeout=60)
    except requests.RequestException as exc:
        raise WorldError(f"cannot reach Compute Engine to read {what}: {type(exc).__name__}") from None
    if reply.status_code == 404:
        return None
    if reply.status_code == 403:
        raise NotReadable(f"{what} of project {project} is not readable by these credentials (grant "
                          "roles/compute.viewer)")
    if reply.status_code != 200:
        raise WorldError(f"Compute Engine answered HTTP {reply.status_code} reading {what} in {zone} of project "
                         f"{project}; rerun, or look at it in the console")
    try:
        body = reply.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise WorldError(f"Compute Engine answered something that is not a resource reading {what}")
    return body
