"""A local fake of a Google service's locations API (``GET /v1/projects/P/locations``, the
``ListLocations`` every client's ``list_locations`` calls), on 127.0.0.1, spoken to by the real
google-cloud-scheduler, -filestore and -artifact-registry clients with ``transport="rest"``.
One server per service: ``offered`` is the location ids it lists (default: every region the
shipped examples use, and their zones for Filestore, which lists both); ``denied`` answers 403."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tests.support.fakes.local import LocalHttpServer, error, get_handler

#: Every region the shipped values files use (and a few more), offered by default.
REGIONS = ("us-central1", "us-central2", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west4",
           "europe-west4", "asia-east1", "asia-northeast1")
#: service key (builder/cloud/regions.py) → the endpoint variable of its client (builder/cloud/clients.py).
ENDPOINTS = {"scheduler": "TPUBUILD_SCHEDULER_ENDPOINT", "filestore": "TPUBUILD_FILESTORE_ENDPOINT",
             "artifactregistry": "TPUBUILD_ARTIFACTREGISTRY_ENDPOINT"}


class FakeLocations(LocalHttpServer):
    def __init__(self) -> None:
        self.offered: list[str] = list(REGIONS)
        self.denied = False
        self.requests: list[str] = []
        self._listen(get_handler(self._answer))

    def _answer(self, path: str) -> tuple[int, Any]:
        self.requests.append(path)
        parts = path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "v1" or parts[1] != "projects" or parts[3] != "locations":
            return 404, error(404, f"{path} not found", "NOT_FOUND")
        if self.denied:
            return 403, error(403, "permission denied", "PERMISSION_DENIED")
        return 200, {"locations": [{"name": f"projects/{parts[2]}/locations/{r}", "locationId": r} for r in self.offered]}


def serving(monkeypatch: Any) -> Iterator[dict[str, FakeLocations]]:
    """A started FakeLocations per service, each client pointed at its own (for a pytest fixture)."""
    fakes = {service: FakeLocations().start() for service in ENDPOINTS}
    for service, variable in ENDPOINTS.items():
        monkeypatch.setenv(variable, fakes[service].url)
    yield fakes
    for fake in fakes.values():
        fake.stop()
