"""A local fake of what the capacity check reads, on 127.0.0.1, spoken to by the real requests
session tpubuild uses: the Cloud Quotas API v1 ``GetQuotaInfo`` (``TPUBUILD_QUOTAS_ENDPOINT`` =
``{url}/v1``) and Compute Engine's reservation and future-reservation GETs
(``TPUBUILD_COMPUTE_ENDPOINT`` = ``{url}/compute/v1``). ``infos[(project, service, quota_id)]``
holds the QuotaInfo JSON as the API returns it, ``compute[path]`` a Compute Engine resource by its
path (``/compute/v1/projects/P/zones/Z/reservations/NAME``); an unknown one is a 404 and ``denied``
paths a 403; ``requests`` records every path asked for (``network_requests`` the subnetwork and
router reads of the hosts' egress preflight, which ``ready_network`` answers unless ``compute``
holds them)."""

from __future__ import annotations

import re
from http.server import BaseHTTPRequestHandler
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from tests.support.fakes.local import LocalHttpServer, send_json

_INFO = re.compile(r"/v1/projects/([^/]+)/locations/global/services/([^/]+)/quotaInfos/([^/]+)")


def quota_info(project: str, service: str, quota_id: str, values: dict[str, int],
               extra: dict[str, str] | None = None, *, regional: bool = False) -> dict[str, Any]:
    """A QuotaInfo: ``values`` maps a zone ('' for the default, no dimensions) to its value, or a
    region with ``regional``; ``extra`` dimensions (``{"tpu_family": "CT6E"}``) go on every entry."""
    def dims(where: str) -> dict[str, str]:
        if not where:
            return dict(extra or {})
        located = {"region": where} if regional else {"zone": where, "region": where.rsplit("-", 1)[0]}
        return {**located, **(extra or {})}

    return {"name": f"projects/{project}/locations/global/services/{service}/quotaInfos/{quota_id}",
            "quotaId": quota_id, "service": service, "isPrecise": True,
            "dimensions": ["region"] + ([] if regional else ["zone"]) + sorted(extra or {}),
            "dimensionsInfos": [{"dimensions": dims(w), "details": {"value": str(v)},
                                 "applicableLocations": [w] if w else []} for w, v in values.items()]}


def reservation(name: str, zone: str, machine_type: str, count: int, in_use: int = 0,
                status: str = "READY", required: bool = False) -> dict[str, Any]:
    """A Compute Engine Reservation of ``count`` VMs of ``machine_type`` (``in_use`` taken;
    ``required``: only VMs that name it consume it)."""
    return {"kind": "compute#reservation", "name": name, "zone": zone, "status": status,
            "specificReservationRequired": required,
            "specificReservation": {"count": str(count), "inUseCount": str(in_use),
                                    "instanceProperties": {"machineType": machine_type}}}


def aggregate_reservation(name: str, zone: str, vm_family: str, chips: int, in_use: int = 0) -> dict[str, Any]:
    """A TPU reservation as Compute Engine answers one (``aggregateReservation``: chips of a VM family)."""
    def accelerators(n: int) -> list[dict[str, Any]]:
        return [{"accelerator": {"acceleratorCount": n, "acceleratorType": f"zones/{zone}/acceleratorTypes/tpu"}}]

    return {"kind": "compute#reservation", "name": name, "zone": zone, "status": "READY",
            "aggregateReservation": {"vmFamily": vm_family, "workloadType": "BATCH",
                                     "reservedResources": accelerators(chips), "inUseResources": accelerators(in_use)}}


_SUBNET = re.compile(r"/compute/v1/projects/([^/]+)/regions/([^/]+)/subnetworks/([^/]+)")
_ROUTERS = re.compile(r"/compute/v1/projects/([^/]+)/regions/([^/]+)/routers")


def subnetwork(project: str, region: str, name: str, network: str = "default", pga: bool = True) -> dict[str, Any]:
    """A Subnetwork as Compute Engine answers one."""
    base = f"https://www.googleapis.com/compute/v1/projects/{project}"
    return {"kind": "compute#subnetwork", "name": name, "region": f"{base}/regions/{region}",
            "network": f"{base}/global/networks/{network}", "ipCidrRange": "10.128.0.0/20",
            "privateIpGoogleAccess": pga}


def routers(project: str, region: str, network: str = "default", *nats: dict[str, Any]) -> dict[str, Any]:
    """A region's router list (one router on ``network`` holding ``nats``; none: no router)."""
    base = f"https://www.googleapis.com/compute/v1/projects/{project}"
    items = [{"kind": "compute#router", "name": "nat-router", "network": f"{base}/global/networks/{network}",
              "region": f"{base}/regions/{region}", "nats": list(nats)}] if nats else []
    return {"kind": "compute#routerList", "items": items}


def nat(ranges: str = "ALL_SUBNETWORKS_ALL_IP_RANGES", *subnets: str) -> dict[str, Any]:
    """A Cloud NAT (a RouterNat): ``ranges`` its sourceSubnetworkIpRangesToNat, ``subnets`` its list."""
    return {"name": "nat", "natIpAllocateOption": "AUTO_ONLY", "sourceSubnetworkIpRangesToNat": ranges,
            "subnetworks": [{"name": f"projects/p/regions/r/subnetworks/{s}", "sourceIpRangesToNat": ["ALL_IP_RANGES"]}
                            for s in subnets]}


def ready(path: str, network: str) -> dict[str, Any] | None:
    """What a ready network answers at ``path`` (a subnetwork or the region's routers), else None."""
    if m := _SUBNET.fullmatch(path):
        return subnetwork(*m.groups(), network=network)
    if m := _ROUTERS.fullmatch(path):
        return routers(*m.groups(), network, nat())
    return None


class FakeQuotas(LocalHttpServer):
    def __init__(self) -> None:
        self.infos: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.compute: dict[str, dict[str, Any]] = {}
        #: path → the answer of a POST there (calendar-mode advice); ``posted``: each POST's path and body
        self.advice: dict[str, dict[str, Any]] = {}
        self.posted: list[tuple[str, Any]] = []
        self.denied: set[str] = set()
        self.requests: list[str] = []
        #: the subnetwork and router reads of the hosts' egress preflight (apart: ``requests`` is
        #: what the quota and reservation checks read)
        self.network_requests: list[str] = []
        #: the network every subnetwork and router read belongs to when ``compute`` holds none: a
        #: ready one (Private Google Access on, a Cloud NAT for all subnets), so a test about something
        #: else passes the hosts' egress preflight; None answers 404 as for any unknown resource
        self.ready_network: str | None = "default"
        self.locations: dict[str, Any] = {}  # serving(): service → its FakeLocations
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                path = urlsplit(self.path).path
                networked = bool(_SUBNET.fullmatch(path) or _ROUTERS.fullmatch(path))
                (fake.network_requests if networked else fake.requests).append(path)
                if path in fake.denied:
                    return send_json(self, 403, {"error": {"code": 403, "message": "permission denied",
                                                           "status": "PERMISSION_DENIED"}})
                m = _INFO.fullmatch(path)
                found = fake.infos.get(m.groups()) if m else fake.compute.get(path)
                if found is None and fake.ready_network:
                    found = ready(path, fake.ready_network)
                if found is None:
                    return send_json(self, 404, {"error": {"code": 404, "message": f"{path} not found",
                                                           "status": "NOT_FOUND"}})
                send_json(self, 200, found)

            def do_POST(self) -> None:  # noqa: N802
                import json

                path = urlsplit(self.path).path
                length = int(self.headers.get("Content-Length") or 0)
                fake.requests.append(path)
                fake.posted.append((path, json.loads(self.rfile.read(length) or b"null")))
                found = fake.advice.get(path)
                if found is None:
                    return send_json(self, 404, {"error": {"code": 404, "message": f"{path} not found",
                                                           "status": "NOT_FOUND"}})
                send_json(self, 200, found)

        self._listen(Handler)


def serving(monkeypatch: Any) -> Iterator[FakeQuotas]:
    """A started FakeQuotas that tpubuild's Quotas and Compute clients talk to (for a pytest
    fixture), and the locations APIs the regional-availability preflight reads
    (tests/support/fakes/locations.py, every region offered: ``fake.locations[service]``)."""
    from tests.support.fakes import locations

    fake = FakeQuotas().start()
    monkeypatch.setenv("TPUBUILD_QUOTAS_ENDPOINT", f"{fake.url}/v1")
    monkeypatch.setenv("TPUBUILD_COMPUTE_ENDPOINT", f"{fake.url}/compute/v1")
    served = locations.serving(monkeypatch)
    fake.locations = next(served)
    yield fake
    fake.stop()
    next(served, None)
