"""A local fake of Compute Engine's calendar-mode advice (``POST
/compute/v1/projects/{project}/regions/{region}/advice/calendarMode``) on 127.0.0.1, spoken to by the real
google-cloud-compute ``AdviceClient`` with ``transport="rest"``. ``zones[zone]`` is the answer for a zone:
``("RECOMMENDED", start, end)`` or ``(status, details)`` (NO_CAPACITY, CONDITIONS_NOT_MET), ``default`` for
a zone it does not name; the first
RECOMMENDED zone the request allows is the advised location, the others are ``otherLocations``, as the
API answers. It refuses (400, as the API does) a request without a vmFamily or chips, or whose window is
not 1–90 whole days; ``requests`` records each (path, body)."""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.fakes.local import LocalHttpServer, send_json

_PATH = re.compile(r"/compute/v1/projects/([^/]+)/regions/([^/]+)/advice/calendarMode")


def _refusal(spec: dict[str, Any]) -> str:
    target = spec.get("targetResources", {}).get("aggregateResources", {})
    if not target.get("vmFamily") or not int(target.get("acceleratorCount") or 0):
        return "targetResources.aggregateResources needs vmFamily and acceleratorCount"
    window = spec.get("timeRangeSpec", {})
    seconds = int(str(window.get("minDuration", "0s")).rstrip("s") or 0)
    if seconds % 86400 or not 1 <= seconds // 86400 <= 90 or window.get("maxDuration") != window.get("minDuration"):
        return "timeRangeSpec: a calendar-mode reservation lasts 1 to 90 whole days"
    if not window.get("startTimeNotEarlierThan") or not window.get("startTimeNotLaterThan"):
        return "timeRangeSpec: startTimeNotEarlierThan and startTimeNotLaterThan are required"
    return ""


class FakeAdvice(LocalHttpServer):
    def __init__(self, zones: dict[str, tuple[str, ...]],
                 default: tuple[str, ...] = ("NO_CAPACITY", "no capacity in the window")) -> None:
        self.zones, self.default = zones, default
        self.requests: list[tuple[str, dict[str, Any]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                path = self.path.split("?", 1)[0]
                fake.requests.append((path, body))
                if not _PATH.fullmatch(path):
                    return send_json(self, 404, {"error": {"code": 404, "message": f"{path} not found"}})
                answers = {}
                for key, spec in body.get("futureResourcesSpecs", {}).items():
                    refused = _refusal(spec)
                    if refused:
                        return send_json(self, 400, {"error": {"code": 400, "message": refused,
                                                               "status": "INVALID_ARGUMENT"}})
                    answers[key] = fake.answer(list(spec.get("locationPolicy", {}).get("locations", {})))
                send_json(self, 200, {"recommendations": [{"recommendationsPerSpec": answers}]})

        self._listen(Handler)

    def answer(self, allowed: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"recommendationType": "FUTURE_RESERVATION", "otherLocations": {}}
        for where in allowed:
            found = self.zones.get(where.removeprefix("zones/"), self.default)
            if found[0] == "RECOMMENDED" and "location" not in out:
                out.update(location=where, startTime=found[1], endTime=found[2], recommendationId="rec-1")
            elif found[0] == "RECOMMENDED":
                out["otherLocations"][where] = {"status": "RECOMMENDED", "details": f"also from {found[1]}"}
            else:
                out["otherLocations"][where] = {"status": found[0], "details": found[1]}
        return out
