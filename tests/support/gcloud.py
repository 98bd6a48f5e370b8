"""The real ``gcloud``, offline: does a command line we emit parse?

``Gcloud`` gives each test a throwaway ``CLOUDSDK_CONFIG`` (project set, prompts, update checks and
usage reporting off, a fake access token from a file) whose ``api_endpoint_overrides/*`` all point
at a small HTTP fake on 127.0.0.1. Running a command then either

* fails in argument parsing: gcloud exits 2 with ``ERROR: (gcloud...) unrecognized arguments`` /
  ``argument --x: ...`` / ``Invalid choice`` and never calls an API, or
* parses, and gcloud makes its first API call, which the fake answers (by default a Google-style
  404 ``NOT_FOUND``), so gcloud exits 1 with the fake's message.

:meth:`Gcloud.parse` runs one argv and returns a :class:`Parsed` with ``ok`` true in the second
case. The fake records every request (method, path, JSON body), so a test can also check *what*
gcloud would have sent (``requests``), and can preset answers per path (``answer``).

Nothing leaves the machine: every service gcloud might call is overridden to the fake, and a
command that reached a real Google host would fail for lack of a network and credentials anyway.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.fakes.local import send_json

#: Services whose API endpoint the throwaway config points at the fake. gcloud looks the
#: override up by API name, e.g. ``api_endpoint_overrides/compute``.
SERVICES: tuple[str, ...] = (
    "cloudbuild", "compute", "tpu", "file", "storage", "iam", "cloudresourcemanager",
    "iap", "oslogin", "logging", "monitoring", "cloudscheduler", "serviceusage",
)

#: What gcloud prints when a command line does not parse (its exit status is then 2).
_PARSE_ERRORS = re.compile(
    r"unrecognized arguments|Invalid choice|argument [-\w]+: |"
    r"must be specified|is not available in|not one of|Invalid value for \[|"
    r"one of the arguments .* is required|the following arguments? (is|are) required|"
    r"Expected one of|Bad syntax for dict arg|parsing error|unknown flag",
    re.I,
)


@dataclass
class Request:
    method: str
    path: str
    body: Any


@dataclass
class Parsed:
    """The outcome of one gcloud run."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    requests: list[Request]

    @property
    def ok(self) -> bool:
        """gcloud accepted the command line: no argument error, and it went on to call the API
        (or succeeded outright)."""
        if self.returncode == 0:
            return True
        return self.returncode != 2 and not _PARSE_ERRORS.search(self.stderr) and bool(self.requests)

    def why(self) -> str:
        tail = "\n".join(self.stderr.strip().splitlines()[-6:])
        return f"gcloud {' '.join(self.argv)}\n exit {self.returncode}; requests {len(self.requests)}\n{tail}"


class _Fake:
    """A local HTTP server that records requests and answers them (404 unless told otherwise)."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.answers: dict[str, tuple[int, Any]] = {}
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                path = self.path.split("?", 1)[0]
                with fake._lock:
                    fake.requests.append(Request(self.command, self.path, body))
                    answer = next((a for p, a in fake.answers.items() if re.search(p, path)), None)
                code, payload = answer or (404, {"error": {
                    "code": 404, "status": "NOT_FOUND",
                    "message": f"tpubuild gcloud fake: nothing at {self.command} {path}"}})
                send_json(self, code, payload, "application/json; charset=UTF-8")

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Gcloud:
    """A real gcloud with a throwaway config under ``home`` and every API at a local fake."""

    def __init__(self, home: Path, *, project: str = "my-tpu-project", executable: str | None = None) -> None:
        exe = executable or shutil.which("gcloud")
        if exe is None:
            raise FileNotFoundError("gcloud is not on PATH")
        self.executable = exe
        self.fake = _Fake()
        self.config_dir = home / "cloudsdk"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        token = home / "access-token"
        token.write_text("ya29.tpubuild-fake-token\n")
        props = [
            "[core]", f"project = {project}", "disable_prompts = true", "disable_usage_reporting = true",
            "check_gce_metadata = false", "account = tester@example.com",
            "[auth]", f"access_token_file = {token}",
            "[component_manager]", "disable_update_check = true",
            "[survey]", "disable_prompts = true",
            "[metrics]", "environment = tpubuild-tests",
            "[api_endpoint_overrides]", *(f"{s} = {self.fake.url}" for s in SERVICES),
        ]
        (self.config_dir / "configurations").mkdir(exist_ok=True)
        (self.config_dir / "configurations" / "config_default").write_text("\n".join(props) + "\n")
        (self.config_dir / "active_config").write_text("default")

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDSDK_", "GOOGLE_"))}
        env.update({
            "CLOUDSDK_CONFIG": str(self.config_dir),
            "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
            # one try per request: the fake answers at once, and an unanswered call must not wait
            "CLOUDSDK_CORE_HTTP_TIMEOUT": "20",
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        })
        return env

    def answer(self, path_regex: str, code: int, payload: Any) -> None:
        """Answer requests whose path matches ``path_regex`` with ``code`` and JSON ``payload``."""
        self.fake.answers[path_regex] = (code, payload)

    def parse(self, argv: list[str], *, stdin: str | None = None, timeout: float = 120) -> Parsed:
        """Run ``gcloud <argv>`` (argv without the leading ``gcloud``)."""
        if argv and argv[0] == "gcloud":
            argv = argv[1:]
        before = len(self.fake.requests)
        proc = subprocess.run([self.executable, *argv], env=self.env, input=stdin, capture_output=True,
                              text=True, timeout=timeout, stdin=None if stdin is not None else subprocess.DEVNULL)
        return Parsed(list(argv), proc.returncode, proc.stdout, proc.stderr, self.fake.requests[before:])

    def close(self) -> None:
        self.fake.close()
