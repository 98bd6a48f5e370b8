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
import select
import shutil
import subprocess
import tempfile
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


#: Command groups that run as their own ``gcloud`` process even with the loaded CLI at hand: ``gcloud
#: storage`` starts worker processes of its own and leaves the process that ran it unable to run
#: another command (seen with ``storage cat`` then ``scheduler jobs describe``: it exits 1).
_OWN_PROCESS = frozenset({"storage"})


class _Worker:
    """The real gcloud's CLI, loaded once in gcloud's own Python (``tests/support/gcloud_worker.py``)
    and given one command line at a time: a ``gcloud`` process spends about a second starting
    (Python, the SDK's imports, the command tree) before it parses anything, and the suite parses
    hundreds of lines. The same installation, the same ``gcloud_main.CreateCLI`` object every
    ``gcloud`` run builds, the same configuration and fake; ``tests/integration/test_gcloud_harness.py``
    checks that it answers as the ``gcloud`` command does (exit status, what it sends)."""

    def __init__(self, executable: str, env: dict[str, str]) -> None:
        root = Path(executable).resolve().parent.parent  # <sdk>/bin/gcloud
        bundled = root / "platform" / "bundledpythonunix" / "bin" / "python3"
        python = env.get("CLOUDSDK_PYTHON") or (str(bundled) if bundled.exists() else shutil.which("python3") or "python3")
        self.log = tempfile.NamedTemporaryFile(prefix="gcloud-worker-", suffix=".log", delete=False)  # noqa: SIM115
        # The answers come back on a pipe of their own (the worker's fd ``answers``), never on its stdout:
        # what gcloud or a program it starts prints there (ssh-keygen's "Generating public/private rsa key
        # pair." on a home that never ran gcloud) goes to the log and cannot be read as an answer.
        answers, self._answers_w = os.pipe()
        self.proc = subprocess.Popen([python, str(Path(__file__).with_name("gcloud_worker.py")), str(root / "lib"),
                                      str(self._answers_w)],
                                     stdin=subprocess.PIPE, stdout=self.log, stderr=self.log,
                                     env=env, text=True, pass_fds=(self._answers_w,))
        os.close(self._answers_w)
        self.answers = os.fdopen(answers, "r")
        if self._line(120) != "ready":
            self.close()
            raise OSError(f"gcloud's CLI did not load in {python}")

    def _line(self, timeout: float) -> str:
        ready, _, _ = select.select([self.answers], [], [], timeout)
        if not ready:
            raise subprocess.TimeoutExpired(["gcloud (worker)"], timeout)
        return self.answers.readline().strip()

    def run(self, argv: list[str], timeout: float) -> tuple[int, str, str]:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps({"argv": argv}) + "\n")
        self.proc.stdin.flush()
        line = self._line(timeout)
        if not line:
            tail = Path(self.log.name).read_text(errors="replace")[-2000:]
            raise OSError(f"gcloud's CLI process ended ({self.proc.wait()}) while running {argv}: {tail}")
        answer = json.loads(line)
        return answer["returncode"], answer["stdout"], answer["stderr"]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.answers.close()


class Gcloud:
    """A real gcloud with a throwaway config under ``home`` and every API at a local fake.

    ``parse`` runs a command line in the long-lived ``_Worker`` (its stdin, when given, through the
    ``gcloud`` command itself); ``TPUBUILD_GCLOUD_WORKER=0``, or a gcloud whose CLI cannot be loaded
    that way, runs every line as its own ``gcloud`` process."""

    def __init__(self, home: Path, *, project: str = "my-tpu-project", executable: str | None = None) -> None:
        exe = executable or shutil.which("gcloud")
        if exe is None:
            raise FileNotFoundError("gcloud is not on PATH")
        self.executable = exe
        self.fake = _Fake()
        self.home = home
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
        self._worker: _Worker | None = None
        self._worker_failed = os.environ.get("TPUBUILD_GCLOUD_WORKER", "1") == "0"
        self._lock = threading.Lock()

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDSDK_", "GOOGLE_"))}
        env.update({
            "CLOUDSDK_CONFIG": str(self.config_dir),
            # a home of its own: what gcloud writes on first use (~/.ssh/google_compute_engine, made by
            # `compute ssh`) stays in the throwaway folder, and every run starts as on a fresh machine
            "HOME": str(self.home),
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
        with self._lock:
            before = len(self.fake.requests)
            worker = self._started() if stdin is None and not _OWN_PROCESS.intersection(argv[:2]) else None
            if worker is not None:
                try:
                    code, out, err = worker.run(list(argv), timeout)
                    return Parsed(list(argv), code, out, err, self.fake.requests[before:])
                except OSError:  # the loaded CLI ended: this line runs as the command, the next in a new one
                    worker.close()
                    self._worker = None
                    del self.fake.requests[before:]
                except BaseException:
                    worker.close()
                    self._worker = None
                    raise
            proc = subprocess.run([self.executable, *argv], env=self.env, input=stdin, capture_output=True,
                                  text=True, timeout=timeout, stdin=None if stdin is not None else subprocess.DEVNULL)
            return Parsed(list(argv), proc.returncode, proc.stdout, proc.stderr, self.fake.requests[before:])

    def _started(self) -> _Worker | None:
        if self._worker is None and not self._worker_failed:
            try:
                self._worker = _Worker(self.executable, self.env)
            except OSError:
                self._worker_failed = True
        return self._worker

    @property
    def in_process(self) -> bool:
        """Whether ``parse`` runs lines in gcloud's loaded CLI (``_Worker``)."""
        with self._lock:
            return self._started() is not None

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
        self.fake.close()
