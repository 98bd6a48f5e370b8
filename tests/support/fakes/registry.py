"""A local fake of the Artifact Registry REST API (v1), spoken to by the real
google-cloud-artifact-registry client with ``transport="rest"``: the repository of the tpubuild
builder image (get, create as a finished long-running operation, patch with an update mask), its
IAM policy (get, set, with etags) and an image's tags (get).

``repositories``: full name → Repository JSON as the API writes it (camelCase); ``tags``: the
full names of the tags that exist; ``images_present`` (True after ``reset``): every tag of an
existing repository exists, so the tests of other commands find the builder image there and
initialize builds nothing; tests of the image build set it False;
``policies``: repository → Policy JSON; ``requests``: (method, path) of every call.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.fakes.locations import REGIONS
from tests.support.fakes.local import LocalHttpServer, send_json

_REPO = r"/v1/(projects/[^/]+/locations/[^/]+/repositories/[^/:]+)"


def repository_json(body: dict[str, Any]) -> dict[str, Any]:
    """A Repository body as the API stores it: parsed by the real type (an unknown field fails),
    written back with enum names (the client sends enums as numbers)."""
    from google.cloud import artifactregistry_v1 as ar
    from google.protobuf import json_format

    return json_format.MessageToDict(ar.Repository.pb(ar.Repository.from_json(json.dumps(body))))


def _error(code: int, message: str, status: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


class FakeArtifactRegistry(LocalHttpServer):
    def __init__(self) -> None:
        self.repositories: dict[str, dict[str, Any]] = {}
        self.tags: set[str] = set()
        self.images_present = True
        self.policies: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        #: the regions ListLocations answers (tests/support/fakes/locations.py REGIONS)
        self.offered: list[str] = list(REGIONS)
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _answer(self, method: str) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size)) if size else {}
                code, reply = fake.route(method, self.path, body)
                send_json(self, code, reply)

            def do_GET(self) -> None:  # noqa: N802
                self._answer("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._answer("POST")

            def do_PATCH(self) -> None:  # noqa: N802
                self._answer("PATCH")

        self._listen(Handler)

    def env(self) -> dict[str, str]:
        return {"TPUBUILD_ARTIFACTREGISTRY_ENDPOINT": self.url}

    def reset(self) -> None:
        with self._lock:
            self.repositories.clear()
            self.tags.clear()
            self.images_present = True
            self.policies.clear()
            self.requests.clear()
            self.offered = list(REGIONS)

    def route(self, method: str, raw: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        from urllib.parse import parse_qs

        path, _, query = raw.partition("?")
        params = {k: v[-1] for k, v in parse_qs(query).items()}
        with self._lock:
            self.requests.append((method, path))
            m = re.fullmatch(r"/v1/projects/([^/]+)/locations", path)
            if m and method == "GET":  # ListLocations: where the service is offered (every region here)
                return 200, {"locations": [{"name": f"projects/{m.group(1)}/locations/{r}", "locationId": r}
                                           for r in self.offered]}
            m = re.fullmatch(r"/v1/(projects/[^/]+/locations/[^/]+)/repositories", path)
            if m and method == "POST":
                return self._create(m.group(1), params.get("repositoryId", ""), body)
            m = re.fullmatch(_REPO + r":(getIamPolicy|setIamPolicy)", path)
            if m:
                return self._policy(m.group(1), m.group(2), body)
            m = re.fullmatch(_REPO, path)
            if m and method == "GET":
                repo = self.repositories.get(m.group(1))
                return (200, repo) if repo else (404, _error(404, f"Repository {m.group(1)} not found", "NOT_FOUND"))
            if m and method == "PATCH":
                return self._patch(m.group(1), params.get("updateMask", ""), body)
            m = re.fullmatch(_REPO + r"/packages/[^/]+/tags/[^/]+", path)
            if m and method == "GET":
                name = path[len("/v1/"):]
                there = name in self.tags or (self.images_present and m.group(1) in self.repositories)
                return (200, {"name": name, "version": f"{name}@sha256:0"}) if there else \
                    (404, _error(404, f"Tag {name} not found", "NOT_FOUND"))
        return 404, _error(404, f"fake: no route for {method} {path}", "NOT_FOUND")

    def _create(self, parent: str, repo_id: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = f"{parent}/repositories/{repo_id}"
        if not re.fullmatch(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?", repo_id):
            return 400, _error(400, f"invalid repository id {repo_id!r}", "INVALID_ARGUMENT")
        if name in self.repositories:
            return 409, _error(409, f"the repository {name} already exists", "ALREADY_EXISTS")
        self.repositories[name] = {**repository_json(body), "name": name}
        return 200, {"name": f"{parent}/operations/create-{repo_id}", "done": True,
                     "response": {"@type": "type.googleapis.com/google.devtools.artifactregistry.v1.Repository",
                                  **self.repositories[name]}}

    def _patch(self, name: str, mask: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        repo = self.repositories.get(name)
        if repo is None:
            return 404, _error(404, f"Repository {name} not found", "NOT_FOUND")
        body = repository_json(body)
        for field in filter(None, mask.split(",")):
            head, _, rest = field.partition(".")
            head = re.sub(r"_([a-z])", lambda c: c.group(1).upper(), head)
            if rest:
                rest = re.sub(r"_([a-z])", lambda c: c.group(1).upper(), rest)
                repo.setdefault(head, {})[rest] = body.get(head, {}).get(rest)
            else:
                repo[head] = body.get(head)
        return 200, repo

    def _policy(self, resource: str, verb: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if resource not in self.repositories:
            return 404, _error(404, f"Repository {resource} not found", "NOT_FOUND")
        current = self.policies.setdefault(resource, {"version": 1, "etag": base64.b64encode(b"0").decode()})
        if verb == "getIamPolicy":
            return 200, current
        policy = body.get("policy", {})
        if policy.get("etag") and policy["etag"] != current["etag"]:
            return 409, _error(409, "There were concurrent policy changes.", "ABORTED")
        stored = {**policy, "etag": base64.b64encode(str(len(self.requests)).encode()).decode()}
        self.policies[resource] = stored
        return 200, stored
