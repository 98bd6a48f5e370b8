"""A local fake of the Cloud Billing Catalog REST API (``ListSkus``: ``GET /v1/services/{id}/skus``) on
127.0.0.1, spoken to by the real google-cloud-billing client with ``transport="rest"``. ``services[id]``
holds the SKUs (the API's JSON, camelCase) it serves, ``page_size`` at a time with a ``nextPageToken``
as the API pages them; ``requests`` records each (path, query). An unknown service answers 404 as the
API does; a request without ``currencyCode=USD`` is refused (tpubuild prices in USD only)."""

from __future__ import annotations

import copy
import json
import re
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.fakes.local import LocalHttpServer, send_json

RECORDED = Path(__file__).resolve().parents[2] / "data" / "billing" / "recorded.json"
_SKUS = re.compile(r"/v1/services/([^/]+)/skus")


def recorded() -> dict[str, list[dict[str, Any]]]:
    """The recorded catalogue's services (tests/data/billing/recorded.json), a fresh copy."""
    return copy.deepcopy(json.loads(RECORDED.read_text(encoding="utf-8"))["services"])


def scaled(services: dict[str, list[dict[str, Any]]], factor: float) -> dict[str, list[dict[str, Any]]]:
    """``services`` with every unit price × ``factor`` ("other prices")."""
    out = copy.deepcopy(services)
    for skus in out.values():
        for sku in skus:
            for info in sku["pricingInfo"]:
                for tier in info["pricingExpression"]["tieredRates"]:
                    p = tier["unitPrice"]
                    value = (int(p["units"]) + p["nanos"] / 1e9) * factor
                    p["units"], p["nanos"] = str(int(value)), int(round((value - int(value)) * 1e9))
                info["effectiveTime"] = "2026-12-05T00:00:00Z"
    return out


class FakeCatalog(LocalHttpServer):
    def __init__(self, services: dict[str, list[dict[str, Any]]] | None = None, page_size: int = 7) -> None:
        self.services = recorded() if services is None else services
        self.page_size = page_size
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                fake.requests.append((url.path, query))
                m = _SKUS.fullmatch(url.path)
                if not m or m.group(1) not in fake.services:
                    return send_json(self, 404, {"error": {"code": 404, "message": f"{url.path} not found",
                                                           "status": "NOT_FOUND"}})
                if query.get("currencyCode") != ["USD"]:
                    return send_json(self, 400, {"error": {"code": 400, "message": "currencyCode: USD expected",
                                                           "status": "INVALID_ARGUMENT"}})
                skus = fake.services[m.group(1)]
                start = int((query.get("pageToken") or ["0"])[0] or 0)
                end = start + fake.page_size
                body: dict[str, Any] = {"skus": skus[start:end]}
                if end < len(skus):
                    body["nextPageToken"] = str(end)
                send_json(self, 200, body)

        self._listen(Handler)
