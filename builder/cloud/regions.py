"""Where each regional service the environment uses is offered: the services' own locations APIs
(``GET https://<service>/v1/projects/<project>/locations``, each client's ``list_locations``), for
the regional-availability preflight (``builder/planning/egress.py`` ``services`` says which
services and where; ``builder/commands/capacity.py`` runs it). The clients are ``clients.py``'s,
so ``TPUBUILD_SCHEDULER_ENDPOINT``, ``TPUBUILD_FILESTORE_ENDPOINT`` and
``TPUBUILD_ARTIFACTREGISTRY_ENDPOINT`` point them at local fakes.
"""

from __future__ import annotations

from builder.cloud import clients
from builder.cloud.errors import cloud_call
from builder.cloud.quotas import NotReadable

#: service key → the client that lists its locations.
CLIENTS = {"scheduler": clients.scheduler, "filestore": clients.filestore, "artifactregistry": clients.artifact_registry}


def offered(service: str, project: str, names: str) -> frozenset[str]:
    """The location ids (regions; Filestore lists zones too) where ``service`` is offered to
    ``project``. Raises :class:`NotReadable` (403/404: the caller says so and goes on) or
    ``WorldError``."""
    from google.api_core import exceptions as gexc

    with cloud_call(f"listing the locations of {names}"):
        try:
            reply = CLIENTS[service]().list_locations(request={"name": f"projects/{project}"})
        except (gexc.PermissionDenied, gexc.Forbidden):
            raise NotReadable(f"the locations of {names} are not readable by these credentials (grant a viewer "
                              "role of the service)") from None
        except gexc.NotFound:
            raise NotReadable(f"the locations of {names} are not listed (404)") from None
    return frozenset(loc.location_id for loc in reply.locations)
