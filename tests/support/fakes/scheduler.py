"""A local fake of the Cloud Scheduler REST API (``GetJob``, ``UpdateJob``) on 127.0.0.1, spoken
to by the real google-cloud-scheduler client with ``transport="rest"``
(``TPUBUILD_SCHEDULER_ENDPOINT``). ``jobs[name]`` holds the Job JSON (camelCase) as the API
returns it; ``patches`` records every UpdateJob as ``(name, updateMask, body)``."""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.fakes.local import LocalHttpServer, send_json

_JOB = re.compile(r"/v1/(projects/[^/]+/locations/[^/]+/jobs/[^/]+)")


class FakeScheduler(LocalHttpServer):
    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}
        self.patches: list[tuple[str, str, dict[str, Any]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                send_json(self, code, body)

            def _job(self) -> tuple[str, dict[str, Any] | None]:
                m = _JOB.fullmatch(urlsplit(self.path).path)
                name = m.group(1) if m else ""
                return name, fake.jobs.get(name)

            def do_GET(self) -> None:  # noqa: N802
                name, job = self._job()
                if job is None:
                    return self._send(404, {"error": {"code": 404, "message": f"Job {name} not found",
                                                      "status": "NOT_FOUND"}})
                self._send(200, job)

            def do_PATCH(self) -> None:  # noqa: N802
                name, job = self._job()
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                mask = ",".join(parse_qs(urlsplit(self.path).query).get("updateMask", []))
                fake.patches.append((name, mask, body))
                if job is None:
                    return self._send(404, {"error": {"code": 404, "message": f"Job {name} not found",
                                                      "status": "NOT_FOUND"}})
                for field in filter(None, mask.split(",")):
                    job[field] = body[field]
                self._send(200, job)

        self._listen(Handler)
