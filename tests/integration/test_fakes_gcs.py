"""The fake-gcs-server fixture never mistakes another process's server for its own.

With several test runs at once, the port picked for fake-gcs-server can be taken by another
process before the binary binds it. The binary then exits, and an HTTP readiness probe is answered
by whatever listens there: this run would share another run's server (and fail when that run
ends). Here a foreign server holds the port on purpose.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.fakes.gcs import MemoryFakeGCS, listening_inodes, owns_socket


class _Foreign(BaseHTTPRequestHandler):
    """Answers the readiness probe like a fake-gcs-server holding one bucket of its own."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        body = json.dumps({"kind": "storage#buckets", "items": [{"name": "another-runs-bucket"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_port_taken_by_another_server_is_never_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)  # start() sets it, stop() removes it
    foreign = ThreadingHTTPServer(("127.0.0.1", 0), _Foreign)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    taken = foreign.server_address[1]
    gcs = MemoryFakeGCS(port=taken)
    try:
        gcs.start()
        assert gcs.port != taken
        assert owns_socket(gcs._process.pid, listening_inodes("127.0.0.1", gcs.port))
        with urllib.request.urlopen(f"{gcs.url}/storage/v1/b?project=p") as resp:
            names = [b["name"] for b in json.load(resp).get("items", [])]
        assert "another-runs-bucket" not in names
    finally:
        gcs.stop()
        foreign.shutdown()
        foreign.server_close()
