"""The Artifact Registry repository of the tpubuild builder image, and the image in it.

``ensure_repository`` creates ``tpubuild-<ENV>`` (``Settings.image_repository``) once, or adopts
it: a Docker repository in the environment's region (like the buckets), with the environment's
labels plus ``tpubuild-role=builder-image``, immutable tags (a tag is one version and one lock:
nothing may move it) and, as its only grant, ``roles/artifactregistry.writer`` for the builder
service account on this repository alone (pipelines pull the image; a pipeline that finds its
tag missing pushes it once). No project-wide Artifact Registry role is granted. An existing
repository that is not a Docker repository is a ``WorldError`` that says what to do; labels or
immutable tags that differ are set (one patch).

``image_exists`` reads the tag (``GetTag``): what ``tpubuild initialize`` checks before it builds.
"""

from __future__ import annotations

from typing import Any

from builder.catalogue.builder_image import NAME, ROLE_LABEL, tag
from builder.cloud.errors import cloud_call
from builder.cloud.iam import add_bindings
from builder.facts.errors import WorldError

#: The one role the builder service account gets, on the repository only.
WRITER = "roles/artifactregistry.writer"


def repository_name(settings: Any) -> str:
    return f"projects/{settings.project_id}/locations/{settings.region}/repositories/{settings.image_repository}"


def labels(settings: Any) -> dict[str, str]:
    return {**settings.labels, **ROLE_LABEL}


def _wanted(settings: Any) -> Any:
    from google.cloud import artifactregistry_v1 as ar

    return ar.Repository(
        format_=ar.Repository.Format.DOCKER,
        description=f"tpubuild builder images of environment {settings.env_name} (tpubuild initialize)",
        labels=labels(settings),
        docker_config=ar.Repository.DockerRepositoryConfig(immutable_tags=True),
    )


def ensure_repository(client: Any, settings: Any) -> str:
    """Create or adopt the repository; one line."""
    from google.api_core import exceptions as gexc
    from google.cloud import artifactregistry_v1 as ar
    from google.protobuf import field_mask_pb2

    name = repository_name(settings)
    where = f"Artifact Registry repository {settings.image_repository} in {settings.region}"
    with cloud_call(f"reading {where}"):
        try:
            repo = client.get_repository(name=name)
        except gexc.NotFound:
            repo = None
    if repo is None:
        with cloud_call(f"creating {where}"):
            try:
                client.create_repository(parent=name.rsplit("/repositories/", 1)[0],
                                         repository_id=settings.image_repository,
                                         repository=_wanted(settings)).result(timeout=300)
                return f"{where}: created (Docker, immutable tags, labelled)"
            except gexc.AlreadyExists:
                with cloud_call(f"reading {where}"):
                    repo = client.get_repository(name=name)
    if repo.format_ != ar.Repository.Format.DOCKER:
        raise WorldError(f"{where} exists but holds {repo.format_.name} packages, not Docker images; delete it "
                         f"(gcloud artifacts repositories delete {settings.image_repository} "
                         f"--location={settings.region}) or change ENV_BUILD_NAME")
    changed = [what for what, ok in (
        ("labels", all(repo.labels.get(k) == v for k, v in labels(settings).items())),
        ("immutable tags", repo.docker_config.immutable_tags),
    ) if not ok]
    if not changed:
        return f"{where}: exists, already configured"
    patch = ar.Repository(name=name, labels={**dict(repo.labels), **labels(settings)},
                          docker_config=ar.Repository.DockerRepositoryConfig(immutable_tags=True))
    with cloud_call(f"updating {where}"):
        client.update_repository(repository=patch, update_mask=field_mask_pb2.FieldMask(
            paths=["labels", "docker_config.immutable_tags"]))
    return f"{where}: exists, set {', '.join(changed)}"


def grant_writer(client: Any, settings: Any, *, attempts: int = 5) -> str:
    """The builder service account may push and pull in this repository (and nowhere else); one line."""
    from google.api_core import exceptions as gexc
    from google.iam.v1 import iam_policy_pb2

    resource = repository_name(settings)
    account = settings.builder_service_account
    for _attempt in range(attempts):
        with cloud_call(f"reading the IAM policy of repository {settings.image_repository}"):
            policy = client.get_iam_policy(request=iam_policy_pb2.GetIamPolicyRequest(resource=resource))
        if not add_bindings(policy, f"serviceAccount:{account}", [(WRITER, None)]):
            return f"repository {settings.image_repository}: {account} has {WRITER}"
        with cloud_call(f"writing the IAM policy of repository {settings.image_repository}"):
            try:
                client.set_iam_policy(request=iam_policy_pb2.SetIamPolicyRequest(resource=resource, policy=policy))
            except (gexc.Aborted, gexc.Conflict):
                continue  # changed since we read it (etag): read it again
        return f"repository {settings.image_repository}: granted {account} {WRITER} (on this repository only)"
    raise WorldError(f"repository {settings.image_repository}: its IAM policy kept changing while granting "
                     f"{account} {WRITER}; run `tpubuild initialize` again")


def image_exists(client: Any, settings: Any) -> bool:
    """Whether the builder image of this tpubuild (its tag) is in the repository."""
    from google.api_core import exceptions as gexc

    name = f"{repository_name(settings)}/packages/{NAME}/tags/{tag()}"
    with cloud_call(f"reading tag {tag()} of {settings.image_repository}/{NAME}"):
        try:
            client.get_tag(name=name)
        except gexc.NotFound:
            return False
    return True
