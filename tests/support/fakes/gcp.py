"""A small local fake of the Google APIs that have no emulator, spoken to by the *real* clients.

``FakeGoogle`` runs ``http.server`` in a thread on 127.0.0.1 and answers the REST shapes the real
client libraries use with ``transport="rest"`` (google-cloud-build, google-cloud-tpu v2,
google-cloud-filestore) and the Compute Engine REST calls ``tpubuild status`` makes; ``FakeTpuV1``
serves the TPU v1 gRPC ``GetNode`` (that client has no REST transport).

Cloud Build: ``CreateBuild`` requests are recorded (``created``: the JSON bodies as sent) and
answered with the long-running Operation whose metadata is a ``BuildOperationMetadata``; each
``GetBuild`` moves the build one tick along a script: QUEUED, then each step WORKING in turn, then
the outcome queued with ``next_outcome(status, failing_step)`` (default SUCCESS). ``on_done`` runs
once when a build reaches its outcome (a test uses it to run ``tpubuild finalize`` as the last
step would). ``builds[id] = {...}`` presets a build that was not created here (``{"status":
"WORKING", "tags": [...]}``, optionally ``"steps": [{"id", "status"}...]``).

``ListBuilds`` (``GET /v1/projects/P/builds?filter=...``) answers every build of the project whose
current state and tags satisfy the filter (Cloud Build's syntax: ``field="value"`` terms on
``status``, ``tags`` and ``id``, joined by AND/OR, parentheses; see :func:`build_filter`), without
moving any build along; the filters are recorded in ``list_filters``. ``hold_working = True``
keeps the builds created from then on WORKING forever. ``on_create(build_id)`` runs after a
build is recorded and before ``CreateBuild`` is answered (a test blocks there and kills the
caller: a build that exists though its submitter never heard of it).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.fakes.build_filter import build_filter
from tests.support.fakes.local import LocalGrpcServer, LocalHttpServer, send_json
from tests.support.fakes.quotas import ready


def _step_ids(body: dict[str, Any]) -> list[str]:
    return [s.get("id") or f"step-{i}" for i, s in enumerate(body.get("steps", []))]


class FakeGoogle(LocalHttpServer):
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.builds: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.tpu_nodes: dict[str, dict[str, Any]] = {}  # full resource name → Node JSON
        self.queued_resources: dict[str, dict[str, Any]] = {}  # full resource name → QueuedResource JSON
        self.filestore: dict[str, dict[str, Any]] = {}  # full resource name → Instance JSON
        self.migs: dict[str, dict[str, Any]] = {}  # URL path → {"manager": {...}, "instances": [...]}
        #: Compute Engine REST: URL path → the JSON a GET answers (future reservations)
        self.compute_objects: dict[str, dict[str, Any]] = {}
        #: the network the subnetwork and router reads answer (tests/support/fakes/quotas.py ``ready``)
        #: where compute_objects holds none; None: a 404, as for any unknown resource
        self.ready_network: str | None = "default"
        self.on_done: Callable[[str, str], None] | None = None
        self.on_create: Callable[[str], None] | None = None
        self.hold_working = False
        self.list_filters: list[str] = []
        #: Resource Manager v3: project → IAM policy JSON (REST shape: version, etag, bindings).
        self.policies: dict[str, dict[str, Any]] = {}
        self.policy_writes: list[dict[str, Any]] = []
        self.policy_conflicts = 0  # answer this many setIamPolicy calls with 409 ABORTED first
        self.caller = ""  # who calls (serviceAccount:...); set, what its policy lacks is refused (iam_roles.py)
        self.fail: dict[str, int] = {}  # URL path → HTTP error code to answer with
        self._outcomes: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._counter = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                try:
                    send_json(self, code, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the caller is gone (a test killed it): nobody to answer

            def _body(self) -> dict[str, Any]:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size) if size else b""
                return json.loads(raw) if raw else {}

            def do_GET(self) -> None:  # noqa: N802
                fake._route(self, "GET", {})

            def do_POST(self) -> None:  # noqa: N802
                fake._route(self, "POST", self._body())

        self._listen(Handler)

    # ------------------------------------------------------------ lifecycle (start, stop: LocalHttpServer)
    def env(self) -> dict[str, str]:
        return {"TPUBUILD_CLOUDBUILD_ENDPOINT": self.url, "TPUBUILD_TPU_ENDPOINT": self.url,
                "TPUBUILD_RESOURCEMANAGER_ENDPOINT": self.url,
                "TPUBUILD_FILESTORE_ENDPOINT": self.url, "TPUBUILD_COMPUTE_ENDPOINT": f"{self.url}/compute/v1",
                # Cloud Quotas: every QuotaInfo is unknown here (404: the capacity check says so and
                # passes); tests/support/fakes/quotas.py is the fake that answers quota values
                "TPUBUILD_QUOTAS_ENDPOINT": f"{self.url}/v1"}

    def next_outcome(self, status: str, failing_step: str = "") -> None:
        self._outcomes.append((status, failing_step))

    def reset(self) -> None:
        with self._lock:
            self.created.clear()
            self.builds.clear()
            self.requests.clear()
            self._outcomes.clear()
            self.tpu_nodes.clear()
            self.queued_resources.clear()
            self.filestore.clear()
            self.migs.clear()
            self.compute_objects.clear()
            self.fail.clear()
            self.on_done = None
            self.on_create = None
            self.hold_working = False
            self.list_filters.clear()
            self.policies.clear()
            self.policy_writes.clear()
            self.policy_conflicts = 0
            self.caller = ""

    # ------------------------------------------------------------ routing
    def _route(self, h: Any, method: str, body: dict[str, Any]) -> None:
        from urllib.parse import parse_qs

        path, _, query = h.path.partition("?")
        params = {k: v[-1] for k, v in parse_qs(query).items()}
        self.requests.append((method, path))
        if path in self.fail:
            return h._send(self.fail[path], _error(self.fail[path], f"fake: refused {path}"))
        m = re.fullmatch(r"/v1/projects/([^/]+)/builds", path)
        if m and (denied := self.refusal(m.group(1), "cloudbuild.builds." + ("create" if method == "POST" else "list"))):
            return h._send(denied[0], _error(*denied))
        if m and method == "POST":
            answer = self._create(m.group(1), body)
            if self.on_create is not None:
                self.on_create(answer["metadata"]["build"]["id"])
            return h._send(200, answer)
        if m and method == "GET":
            return h._send(200, self._list(m.group(1), params.get("filter", "")))
        m = re.fullmatch(r"/v1/projects/([^/]+)/builds/([^/:]+)", path)
        if m and method == "GET":
            build = self._tick(m.group(1), m.group(2))
            return h._send(200, build) if build else h._send(404, _error(404, f"build {m.group(2)} not found"))
        m = re.fullmatch(r"/v3/projects/([^/:]+):testIamPermissions", path)
        if m and method == "POST":  # the caller's own permissions: any caller may ask (none: all of them)
            asked = body.get("permissions", [])
            return h._send(200, {"permissions": [p for p in asked if not self.refusal(m.group(1), p)]})
        m = re.fullmatch(r"/v3/projects/([^/:]+):(getIamPolicy|setIamPolicy)", path)
        if m and (denied := self.refusal(m.group(1), f"resourcemanager.projects.{m.group(2)}")):
            return h._send(denied[0], _error(*denied))
        if m and method == "POST":
            return self._iam_policy(h, m.group(1), m.group(2), body)
        m = re.fullmatch(r"/v2/(projects/[^/]+/locations/[^/]+/nodes/[^/]+)", path)
        if m and method == "GET":
            node = self.tpu_nodes.get(m.group(1))
            return h._send(200, node) if node else h._send(404, _error(404, "node not found"))
        m = re.fullmatch(r"/v2/(projects/[^/]+/locations/[^/]+/queuedResources/[^/]+)", path)
        if m and method == "GET":
            qr = self.queued_resources.get(m.group(1))
            return h._send(200, qr) if qr else h._send(404, _error(404, "queued resource not found"))
        m = re.fullmatch(r"/v1/(projects/[^/]+/locations/[^/]+/instances/[^/]+)", path)
        if m and method == "GET":
            inst = self.filestore.get(m.group(1))
            return h._send(200, inst) if inst else h._send(404, _error(404, "instance not found"))
        m = re.fullmatch(r"(/compute/v1/projects/[^/]+/zones/[^/]+/instanceGroupManagers/[^/]+)(/listManagedInstances)?",
                         path)
        if m:
            mig = self.migs.get(m.group(1))
            if mig is None:
                return h._send(404, _error(404, "The resource was not found"))
            if m.group(2):
                return h._send(200, {"managedInstances": mig["instances"]})
            return h._send(200, mig["manager"])
        if path.startswith("/compute/v1/") and method == "GET":
            found = self.compute_objects.get(path)
            if found is None and self.ready_network:  # the hosts' egress preflight: a ready network
                found = ready(path, self.ready_network)
            return h._send(200, found) if found else h._send(404, _error(404, "The resource was not found"))
        return h._send(404, _error(404, f"fake: no route for {method} {path}"))

    # ------------------------------------------------------------ Cloud Build
    def _create(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._counter += 1
            build_id = f"b{self._counter:04d}-fake"
            outcome = self._outcomes.pop(0) if self._outcomes else ("SUCCESS", "")
            self.created.append(body)
            self.builds[build_id] = {"project": project, "body": body, "tick": 0, "outcome": outcome,
                                     "done_hook": False, "tags": list(body.get("tags", []))}
            if self.hold_working:
                self.builds[build_id]["status"] = "WORKING"
        build = {**body, "id": build_id, "projectId": project, "status": "QUEUED",
                 "logUrl": self.log_url(project, build_id)}
        return {"name": f"operations/build/{project}/{build_id}",
                "metadata": {"@type": "type.googleapis.com/google.devtools.cloudbuild.v1.BuildOperationMetadata",
                             "build": build}}

    @staticmethod
    def log_url(project: str, build_id: str) -> str:
        return f"https://console.cloud.google.com/cloud-build/builds/{build_id}?project={project}"

    def _tick(self, project: str, build_id: str) -> dict[str, Any] | None:
        with self._lock:
            record = self.builds.get(build_id)
            if record is None:
                return None
            if "status" in record:  # preset
                return {"id": build_id, "projectId": project, "status": record["status"],
                        "tags": record.get("tags", []), "steps": record.get("steps", []),
                        "logUrl": self.log_url(project, build_id)}
            tick = record["tick"]
            record["tick"] = tick + 1
        ids = _step_ids(record["body"])
        status, failing = record["outcome"]
        stop = ids.index(failing) if failing in ids else len(ids)
        steps: list[dict[str, Any]]
        if tick == 0:
            state, steps = "QUEUED", [{"id": i, "status": "QUEUED"} for i in ids]
        elif tick <= stop:
            running = tick - 1
            state = "WORKING"
            steps = [{"id": i, "status": "SUCCESS" if n < running else "WORKING" if n == running else "QUEUED"}
                     for n, i in enumerate(ids)]
        else:
            state = status
            last = {"FAILURE": "FAILURE", "TIMEOUT": "TIMEOUT", "CANCELLED": "CANCELLED"}.get(status, "FAILURE")
            steps = [{"id": i, "status": "SUCCESS" if n < stop else last if n == stop else "QUEUED"}
                     for n, i in enumerate(ids)]
            if status == "SUCCESS":
                steps = [{"id": i, "status": "SUCCESS"} for i in ids]
        build: dict[str, Any] = {"id": build_id, "projectId": project, "status": state, "steps": steps,
                                 "logUrl": self.log_url(project, build_id)}
        if state == "FAILURE" and failing:
            build["failureInfo"] = {"type": "USER_BUILD_STEP", "detail": f'Build step failure: build step "{failing}" failed'}
        if state not in ("QUEUED", "WORKING"):
            run_hook = False
            with self._lock:
                if not record["done_hook"]:
                    record["done_hook"] = run_hook = True
            if run_hook and self.on_done is not None:
                self.on_done(build_id, state)
        return build


    def refusal(self, project: str, permission: str, resource: str = "") -> tuple[int, str] | None:
        """The project's answer to :attr:`caller` asking for ``permission`` on ``resource`` (the
        project by default): None when its policy grants it, or there is no caller."""
        from tests.support.fakes.iam_roles import refusal

        policy = self.policies.get(project, {"bindings": []})
        return refusal(policy, self.caller, permission, resource or f"projects/{project}") if self.caller else None

    def _iam_policy(self, h: Any, project: str, verb: str, body: dict[str, Any]) -> None:
        """getIamPolicy / setIamPolicy with etags: a write whose etag is not the current one is
        409 ABORTED, as the real API answers a concurrent change."""
        import base64

        with self._lock:
            current = self.policies.setdefault(project, {"version": 1, "etag": base64.b64encode(b"0").decode(),
                                                         "bindings": []})
            if verb == "getIamPolicy":
                return h._send(200, current)
            policy = body.get("policy", {})
            if self.policy_conflicts > 0:
                self.policy_conflicts -= 1
                current["etag"] = base64.b64encode(f"{len(self.policy_writes)}x".encode()).decode()
                return h._send(409, _error(409, "There were concurrent policy changes.", "ABORTED"))
            if policy.get("etag") and policy["etag"] != current["etag"]:
                return h._send(409, _error(409, "There were concurrent policy changes.", "ABORTED"))
            self.policy_writes.append(policy)
            stored = {**policy, "etag": base64.b64encode(str(len(self.policy_writes)).encode()).decode()}
            self.policies[project] = stored
            return h._send(200, stored)

    def _state(self, record: dict[str, Any]) -> str:
        """A build's current status, without moving it along (what ListBuilds reports)."""
        if "status" in record:
            return record["status"]
        ids = _step_ids(record["body"])
        status, failing = record["outcome"]
        stop = ids.index(failing) if failing in ids else len(ids)
        tick = record["tick"]
        return "QUEUED" if tick == 0 else "WORKING" if tick <= stop else status

    def _list(self, project: str, filter_text: str) -> dict[str, Any]:
        with self._lock:
            self.list_filters.append(filter_text)
            rows = [(bid, self._state(r), r.get("tags", [])) for bid, r in self.builds.items()
                    if r.get("project", project) == project]
        match = build_filter(filter_text)
        found = [{"id": bid, "projectId": project, "status": state, "tags": tags,
                  "logUrl": self.log_url(project, bid)}
                 for bid, state, tags in reversed(rows) if match({"id": bid, "status": state, "tags": tags})]
        return {"builds": found}


def _error(code: int, message: str, status: str = "") -> dict[str, Any]:
    status = status or {404: "NOT_FOUND", 403: "PERMISSION_DENIED", 409: "ALREADY_EXISTS"}.get(code, "UNKNOWN")
    return {"error": {"code": code, "message": message, "status": status}}


class FakeTpuV1(LocalGrpcServer):
    """The TPU v1 gRPC ``GetNode`` on 127.0.0.1 (plaintext); ``nodes[name] = tpu_v1.Node(...)``."""

    def __init__(self) -> None:
        import grpc
        from google.cloud import tpu_v1

        self.nodes: dict[str, Any] = {}

        def get_node(request: Any, context: Any) -> Any:
            node = self.nodes.get(request.name)
            if node is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"node {request.name} not found")
            return node

        self._serve("google.cloud.tpu.v1.Tpu", {"GetNode": (get_node, tpu_v1.GetNodeRequest, tpu_v1.Node)})


class FakeIam(LocalGrpcServer):
    """IAM admin's gRPC ``GetServiceAccount`` / ``CreateServiceAccount`` on 127.0.0.1 (plaintext;
    google-cloud-iam's iam_admin_v1 has no REST transport). ``accounts[email]`` holds the
    ``iam_admin_v1.ServiceAccount``; ``calls`` records (method, name or account id)."""

    def __init__(self) -> None:
        import grpc
        from google.cloud import iam_admin_v1

        self.accounts: dict[str, Any] = {}
        self.calls: list[tuple[str, str]] = []

        def get(request: Any, context: Any) -> Any:
            self.calls.append(("GetServiceAccount", request.name))
            email = request.name.rsplit("/", 1)[-1]
            account = self.accounts.get(email)
            if account is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"Service account {email} does not exist.")
            return account

        def create(request: Any, context: Any) -> Any:
            self.calls.append(("CreateServiceAccount", request.account_id))
            project = request.name.rsplit("/", 1)[-1]
            email = f"{request.account_id}@{project}.iam.gserviceaccount.com"
            if email in self.accounts:
                context.abort(grpc.StatusCode.ALREADY_EXISTS, f"Service account {request.account_id} already exists")
            account = iam_admin_v1.ServiceAccount(
                name=f"projects/{project}/serviceAccounts/{email}", project_id=project, email=email,
                display_name=request.service_account.display_name, description=request.service_account.description)
            self.accounts[email] = account
            return account

        self._serve("google.iam.admin.v1.IAM", {
            "GetServiceAccount": (get, iam_admin_v1.GetServiceAccountRequest, iam_admin_v1.ServiceAccount),
            "CreateServiceAccount": (create, iam_admin_v1.CreateServiceAccountRequest, iam_admin_v1.ServiceAccount),
        })
