"""The one place Google Cloud clients are built.

Endpoints for local emulators and fakes (tests, offline work) come from the environment:

* ``STORAGE_EMULATOR_HOST`` (``http://127.0.0.1:PORT``): google-cloud-storage talks to it with
  anonymous credentials; the project comes from values.env.
* ``TPUBUILD_CLOUDBUILD_ENDPOINT``, ``TPUBUILD_FILESTORE_ENDPOINT``, ``TPUBUILD_TPU_ENDPOINT``,
  ``TPUBUILD_SCHEDULER_ENDPOINT`` (``http://127.0.0.1:PORT``): the client's ``api_endpoint`` with the REST transport and
  anonymous credentials. google-cloud-tpu's v1 API (TPU Node) has no REST transport, so for the
  node architecture ``TPUBUILD_TPU_V1_ENDPOINT`` (``127.0.0.1:PORT``) names a plaintext gRPC
  endpoint instead.
* ``TPUBUILD_COMPUTE_ENDPOINT`` (``http://127.0.0.1:PORT/compute/v1``): the Compute Engine REST
  base used for the MIG (no google-cloud-compute dependency: google-auth's AuthorizedSession).

Outside those, Application Default Credentials are required; when there are none the command
stops with one line telling the user to run ``gcloud auth application-default login``.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from builder.errors import WorldError

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
NO_CREDENTIALS = (
    "no Google Cloud credentials found; run `gcloud auth application-default login` "
    "(or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file)"
)


def emulated(variable: str) -> str | None:
    value = os.environ.get(variable, "").strip()
    return value or None


@functools.lru_cache(maxsize=1)
def credentials() -> Any:
    """Application Default Credentials, or one clear ``WorldError``."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError, GoogleAuthError

    try:
        creds, _project = google.auth.default(scopes=list(SCOPES))
    except DefaultCredentialsError:
        raise WorldError(NO_CREDENTIALS) from None
    except GoogleAuthError as exc:
        raise WorldError(f"cannot load Google Cloud credentials ({_first_line(exc)}); {NO_CREDENTIALS[30:]}") from None
    return creds


def _anonymous() -> Any:
    from google.auth.credentials import AnonymousCredentials

    return AnonymousCredentials()


def storage(project: str) -> Any:
    from google.cloud import storage as gcs

    if emulated("STORAGE_EMULATOR_HOST"):
        return gcs.Client(project=project, credentials=_anonymous())
    return gcs.Client(project=project, credentials=credentials())


def _rest_options(variable: str) -> dict[str, Any]:
    endpoint = emulated(variable)
    if endpoint:
        return {"transport": "rest", "credentials": _anonymous(),
                "client_options": {"api_endpoint": endpoint}}
    return {"credentials": credentials()}


def cloudbuild() -> Any:
    from google.cloud.devtools import cloudbuild_v1

    return cloudbuild_v1.CloudBuildClient(**_rest_options("TPUBUILD_CLOUDBUILD_ENDPOINT"))


def scheduler() -> Any:
    """Cloud Scheduler (the TTL's job); ``TPUBUILD_SCHEDULER_ENDPOINT`` points it at a local fake."""
    from google.cloud import scheduler_v1

    return scheduler_v1.CloudSchedulerClient(**_rest_options("TPUBUILD_SCHEDULER_ENDPOINT"))


def filestore() -> Any:
    from google.cloud import filestore_v1

    return filestore_v1.CloudFilestoreManagerClient(**_rest_options("TPUBUILD_FILESTORE_ENDPOINT"))


def tpu(arch: str) -> Any:
    """TPU API client: v1 for the node architecture, v2 for TPU VMs."""
    if arch == "vm":
        from google.cloud import tpu_v2

        return tpu_v2.TpuClient(**_rest_options("TPUBUILD_TPU_ENDPOINT"))
    from google.cloud import tpu_v1

    target = emulated("TPUBUILD_TPU_V1_ENDPOINT")
    if target:
        import grpc
        from google.cloud.tpu_v1.services.tpu.transports import TpuGrpcTransport

        target = target.split("://", 1)[-1]
        return tpu_v1.TpuClient(transport=TpuGrpcTransport(channel=grpc.insecure_channel(target)))
    return tpu_v1.TpuClient(credentials=credentials())


def compute() -> tuple[Any, str]:
    """(an authorized requests session, the Compute Engine v1 REST base URL)."""
    import requests

    base = emulated("TPUBUILD_COMPUTE_ENDPOINT")
    if base:
        return requests.Session(), base.rstrip("/")
    from google.auth.transport.requests import AuthorizedSession

    return AuthorizedSession(credentials()), "https://compute.googleapis.com/compute/v1"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
