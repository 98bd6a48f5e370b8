"""A local fake of the Cloud Quotas API v1 ``GetQuotaInfo`` on 127.0.0.1, spoken to by the real
requests session tpubuild's capacity check uses (``TPUBUILD_QUOTAS_ENDPOINT``). ``infos[(project,
service, quota_id)]`` holds the QuotaInfo JSON as the API returns it; an unknown one is a 404;
``requests`` records every path asked for."""

from __future__ import annotations

import re
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.support.fakes.local import LocalHttpServer, send_json

_INFO = re.compile(r"/v1/projects/([^/]+)/locations/global/services/([^/]+)/quotaInfos/([^/]+)")


def quota_info(project: str, service: str, quota_id: str, values: dict[str, int]) -> dict[str, Any]:
    """A QuotaInfo: ``values`` maps a zone ('' for the default, no dimensions) to its value."""
    return {"name": f"projects/{project}/locations/global/services/{service}/quotaInfos/{quota_id}",
            "quotaId": quota_id, "service": service, "isPrecise": True, "dimensions": ["region", "zone"],
            "dimensionsInfos": [{"dimensions": {"zone": z, "region": z.rsplit("-", 1)[0]} if z else {},
                                 "details": {"value": str(v)}, "applicableLocations": [z] if z else []}
                                for z, v in values.items()]}


class FakeQuotas(LocalHttpServer):
    def __init__(self) -> None:
        self.infos: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.requests: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                path = urlsplit(self.path).path
                fake.requests.append(path)
                m = _INFO.fullmatch(path)
                info = fake.infos.get(m.groups()) if m else None
                if info is None:
                    return send_json(self, 404, {"error": {"code": 404, "message": f"{path} not found",
                                                           "status": "NOT_FOUND"}})
                send_json(self, 200, info)

        self._listen(Handler)
