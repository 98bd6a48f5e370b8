"""The one place Google Cloud clients are built.

Endpoints for local emulators and fakes (tests, offline work) come from the environment:

* ``STORAGE_EMULATOR_HOST`` (``http://127.0.0.1:PORT``): google-cloud-storage talks to it with
  anonymous credentials; the project comes from values.env.
* ``TPUBUILD_CLOUDBUILD_ENDPOINT``, ``TPUBUILD_FILESTORE_ENDPOINT``, ``TPUBUILD_TPU_ENDPOINT``,
  ``TPUBUILD_SCHEDULER_ENDPOINT`` (``http://127.0.0.1:PORT``): the client's ``api_endpoint`` with the REST transport and
  anonymous credentials. google-cloud-tpu's v1 API (TPU Node) has no REST transport, so for the
  node architecture ``TPUBUILD_TPU_V1_ENDPOINT`` (``127.0.0.1:PORT``) names a plaintext gRPC
  endpoint instead.
* ``TPUBUILD_RESOURCEMANAGER_ENDPOINT`` (REST, like the above) and ``TPUBUILD_IAM_ENDPOINT``
  (``127.0.0.1:PORT``, plaintext gRPC: iam_admin_v1 has no REST transport) for the builder
  service account (``builder/cloud/iam.py``).
* ``TPUBUILD_ARTIFACTREGISTRY_ENDPOINT`` (REST, like the above): the builder image's repository
  (``builder/cloud/registry.py``).
* ``TPUBUILD_COMPUTE_ENDPOINT`` (``http://127.0.0.1:PORT/compute/v1``): the Compute Engine REST
  base used for the MIG (no google-cloud-compute dependency: google-auth's AuthorizedSession).
* ``TPUBUILD_QUOTAS_ENDPOINT`` (``http://127.0.0.1:PORT/v1``): the Cloud Quotas REST base of the
  capacity check (``builder/cloud/quotas.py``; no google-cloud-quotas dependency, the same way).

Outside those, Application Default Credentials are required; when there are none the command
stops with one line telling the user to run ``gcloud auth application-default login``.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from builder.facts.errors import BadInput, WorldError
from builder.facts.files import MAX_CREDENTIALS, read_file

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

    check_credentials_file()
    try:
        creds, _project = google.auth.default(scopes=list(SCOPES))
    except DefaultCredentialsError:
        raise WorldError(NO_CREDENTIALS) from None
    except GoogleAuthError as exc:
        raise WorldError(f"cannot load Google Cloud credentials ({_first_line(exc)}); {NO_CREDENTIALS[30:]}") from None
    except (OSError, ValueError) as exc:  # a key file google-auth could open but not use
        raise BadInput(f"GOOGLE_APPLICATION_CREDENTIALS: cannot be used ({_first_line(exc)}); point it at a "
                       "service-account key file, or unset it and run `gcloud auth application-default login`") from None
    return creds


def check_credentials_file() -> None:
    """GOOGLE_APPLICATION_CREDENTIALS, when set, names a readable JSON key file of at most 1 MiB
    (a directory, /dev/zero or a binary file is bad input, exit 2, naming the variable)."""
    raw = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if raw is None:
        return
    fix = ("point GOOGLE_APPLICATION_CREDENTIALS at a service-account key file, or unset it and run "
           "`gcloud auth application-default login`")
    if not raw.strip():
        raise BadInput(f"GOOGLE_APPLICATION_CREDENTIALS: is set but empty; {fix}")
    data = read_file(Path(raw), MAX_CREDENTIALS, what="a credentials file", fix=fix)
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise BadInput(f"GOOGLE_APPLICATION_CREDENTIALS: {raw} is not a JSON credentials file (no \"type\"); {fix}")


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


def _grpc_options(variable: str, transport: Any) -> dict[str, Any]:
    """For a client with no REST transport: in tests ``variable`` names a plaintext gRPC endpoint
    (``127.0.0.1:PORT``), reached through ``transport``; otherwise the real credentials."""
    target = emulated(variable)
    if target:
        import grpc

        return {"transport": transport(channel=grpc.insecure_channel(target.split("://", 1)[-1]))}
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
    from google.cloud.tpu_v1.services.tpu.transports import TpuGrpcTransport

    return tpu_v1.TpuClient(**_grpc_options("TPUBUILD_TPU_V1_ENDPOINT", TpuGrpcTransport))


def iam_admin() -> Any:
    """IAM admin client (service accounts). google-cloud-iam's iam_admin_v1 has no REST
    transport, so for tests ``TPUBUILD_IAM_ENDPOINT`` (``127.0.0.1:PORT``) names a plaintext gRPC
    endpoint."""
    from google.cloud import iam_admin_v1
    from google.cloud.iam_admin_v1.services.iam.transports import IAMGrpcTransport

    return iam_admin_v1.IAMClient(**_grpc_options("TPUBUILD_IAM_ENDPOINT", IAMGrpcTransport))


def projects() -> Any:
    """Resource Manager v3 projects client (the project's IAM policy), REST."""
    from google.cloud import resourcemanager_v3

    return resourcemanager_v3.ProjectsClient(**_rest_options("TPUBUILD_RESOURCEMANAGER_ENDPOINT"))


def artifact_registry() -> Any:
    """Artifact Registry (the builder image's repository), REST."""
    from google.cloud import artifactregistry_v1

    return artifactregistry_v1.ArtifactRegistryClient(**_rest_options("TPUBUILD_ARTIFACTREGISTRY_ENDPOINT"))


def _session(variable: str, base: str) -> tuple[Any, str]:
    """(a requests session, a REST base URL): plain and ``variable``'s URL for a local fake, else
    google-auth's AuthorizedSession and ``base``."""
    import requests

    fake = emulated(variable)
    if fake:
        return requests.Session(), fake.rstrip("/")
    from google.auth.transport.requests import AuthorizedSession

    return AuthorizedSession(credentials()), base


def compute() -> tuple[Any, str]:
    """(an authorized requests session, the Compute Engine v1 REST base URL)."""
    return _session("TPUBUILD_COMPUTE_ENDPOINT", "https://compute.googleapis.com/compute/v1")


def quotas() -> tuple[Any, str]:
    """(an authorized requests session, the Cloud Quotas v1 REST base URL)."""
    return _session("TPUBUILD_QUOTAS_ENDPOINT", "https://cloudquotas.googleapis.com/v1")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
