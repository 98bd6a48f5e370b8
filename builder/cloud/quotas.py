"""Read one quota's value for a zone from the Cloud Quotas API v1 (``QuotaInfo``), for the
capacity check (``builder/planning/capacity.py`` says what to read and what it means).

``GET {base}/projects/{project}/locations/global/services/{service}/quotaInfos/{quota_id}``
answers the quota's ``dimensionsInfos``: per set of dimensions (``{"zone": ...}``, ``{"region":
...}``, or ``{}`` for the default) the value in ``details.value`` (an int64, as a JSON string; -1
is unlimited). A quota shared by families (Compute Engine's TPUS-PER-TPU-FAMILY) has further
dimensions (``{"region": ..., "tpu_family": "CT6E"}``): only the entries of the slice's family
count. The REST API is called through google-auth's AuthorizedSession (no google-cloud-quotas
dependency; ``clients.quotas`` builds it).
"""

from __future__ import annotations

from typing import Any

from builder.cloud import clients
from builder.facts.errors import WorldError

#: The value Cloud Quotas gives an unlimited quota.
UNLIMITED = -1


class NotReadable(Exception):
    """The quota could not be read (unknown to Cloud Quotas, or not readable with these
    credentials): the check says so and does not refuse."""


def value_for(info: dict[str, Any], zone: str, region: str, dimensions: tuple[tuple[str, str], ...] = ()) -> int | None:
    """The quota's value in ``zone``: the zone's own entry, else its region's, else the default
    (``{}``); None when none applies. ``dimensions`` (``(("tpu_family", "CT6E"),)``, compared
    ignoring case): an entry naming another value of one of them is another family's and never
    applies, one naming a dimension not given is skipped, and an entry of the family comes before
    one without it (a family's default before the location's default)."""
    want = {k: v.upper() for k, v in dimensions}

    def extra(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in ("zone", "region")}

    def fits(d: dict[str, Any]) -> bool:
        return all(k in want and str(v).upper() == want[k] for k, v in extra(d).items())

    def rank(d: dict[str, Any]) -> tuple[int, int] | None:
        if d.get("zone") == zone:
            where = 0
        elif d.get("region") == region and "zone" not in d:
            where = 1
        elif "zone" not in d and "region" not in d:
            where = 2
        else:
            return None
        return (0 if extra(d) else 1, where) if want else (0, where)

    ranked = []
    for entry in info.get("dimensionsInfos") or []:
        dims = entry.get("dimensions") or {}
        order = rank(dims) if fits(dims) else None
        if order is not None:
            ranked.append((order, entry))
    if not ranked:
        return None
    entry = min(ranked, key=lambda pair: pair[0])[1]
    return int((entry.get("details") or {}).get("value", 0))


def read(project: str, service: str, quota_id: str, zone: str, region: str,
         dimensions: tuple[tuple[str, str], ...] = (), *, cache: dict[tuple[str, ...], Any] | None = None) -> int | None:
    """The value of ``quota_id`` in ``zone`` (``UNLIMITED``: no limit; None: no value there) for
    ``dimensions`` (:func:`value_for`). ``cache``: QuotaInfos already read (one document holds every
    zone's value, so a candidate list reads each quota once).
    Raises :class:`NotReadable` (404/403) or ``WorldError`` (any other failure)."""
    key = (project, service, quota_id)
    found = cache.get(key) if cache is not None else None
    if found is None:
        found = info(project, service, quota_id)
        if cache is not None:
            cache[key] = found
    if isinstance(found, NotReadable):
        raise found
    try:
        return value_for(found, zone, region, dimensions)
    except (ValueError, TypeError, AttributeError):
        raise WorldError(f"Cloud Quotas answered something that is not a QuotaInfo for {quota_id}") from None


def info(project: str, service: str, quota_id: str) -> Any:
    """The QuotaInfo of ``quota_id``, or the :class:`NotReadable` (404/403) to raise (so a cache
    keeps a refusal too). Raises ``WorldError`` (any other failure)."""
    import requests

    session, base = clients.quotas()
    url = f"{base}/projects/{project}/locations/global/services/{service}/quotaInfos/{quota_id}"
    try:
        reply = session.get(url, timeout=60)
    except requests.RequestException as exc:
        raise WorldError(f"cannot reach Cloud Quotas to read {quota_id}: {type(exc).__name__}") from None
    if reply.status_code in (403, 404):
        why = "unknown to Cloud Quotas" if reply.status_code == 404 else (
            "not readable by these credentials (grant roles/cloudquotas.viewer)")
        return NotReadable(f"quota {quota_id} ({service}) is {why}")
    if reply.status_code != 200:
        raise WorldError(f"Cloud Quotas answered HTTP {reply.status_code} reading {quota_id} ({service}) "
                         f"of project {project}; rerun, or check the quota in the console")
    try:
        return reply.json()
    except ValueError:
        raise WorldError(f"Cloud Quotas answered something that is not a QuotaInfo for {quota_id}") from None
