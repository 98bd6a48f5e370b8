"""Read what the hosts' egress preflight needs (``builder/planning/egress.py`` says what it means):
the slice's subnetwork and the Cloud Routers of its region, Compute Engine v1 REST through
google-auth's AuthorizedSession (``clients.compute``; no google-cloud-compute dependency, as the
reservation reads of the capacity check), and :func:`get`, the one Compute Engine GET of those reads.

``GET {base}/projects/{p}/regions/{r}/subnetworks/{name}`` (a Subnetwork: ``network``,
``privateIpGoogleAccess``) and ``GET {base}/projects/{p}/regions/{r}/routers`` (the region's
Routers, each with its ``network`` and its ``nats``: ``sourceSubnetworkIpRangesToNat``,
``subnetworks[].name``).
"""

from __future__ import annotations

from typing import Any

from builder.cloud import clients
from builder.cloud.quotas import NotReadable
from builder.facts.errors import WorldError

#: Pages of a region's routers read at most (500 each).
MAX_PAGES = 4


def get(path: str, what: str, where: str, project: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The Compute Engine resource at ``path`` (under ``projects/``; None: it does not exist).
    Raises :class:`NotReadable` (403) or ``WorldError`` (any other failure), naming ``what``."""
    import requests

    session, base = clients.compute()
    try:
        reply = session.get(f"{base}/projects/{path}", params=params, timeout=60)
    except requests.RequestException as exc:
        raise WorldError(f"cannot reach Compute Engine to read {what}: {type(exc).__name__}") from None
    if reply.status_code == 404:
        return None
    if reply.status_code == 403:
        raise NotReadable(f"{what} of project {project}: not readable by these credentials (grant "
                          "roles/compute.viewer)")
    if reply.status_code != 200:
        raise WorldError(f"Compute Engine answered HTTP {reply.status_code} reading {what} in {where} of project "
                         f"{project}; rerun, or look at it in the console")
    try:
        body = reply.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise WorldError(f"Compute Engine answered something that is not a resource reading {what}")
    return body


def subnetwork(project: str, region: str, name: str) -> dict[str, Any] | None:
    """The subnetwork ``name`` of ``region`` (None: there is none)."""
    return get(f"{project}/regions/{region}/subnetworks/{name}", f"subnetwork {name}", region, project)


def routers(project: str, region: str) -> list[dict[str, Any]]:
    """The project's Cloud Routers in ``region``."""
    items: list[dict[str, Any]] = []
    token = ""
    for _ in range(MAX_PAGES):
        page = get(f"{project}/regions/{region}/routers", f"the Cloud Routers in {region}", region, project,
                   params={"maxResults": 500, **({"pageToken": token} if token else {})})
        items += [r for r in (page or {}).get("items") or [] if isinstance(r, dict)]
        token = str((page or {}).get("nextPageToken") or "")
        if not token:
            break
    return items
