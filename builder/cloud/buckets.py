"""The environment's two buckets: created once, adopted when they already exist and are ours.

Both buckets (``settings.state_bucket`` and ``settings.dataset_bucket``) live in the
environment's region with object versioning, uniform bucket-level access, public access
prevention enforced and the environment's labels. ``ensure`` is idempotent: an existing bucket of
this project in the right location is brought to that configuration (a patch only when something
differs); a bucket that exists elsewhere (another project, or one we may not read) or in another
location is a ``WorldError`` (exit 1) that says what to change.
"""

from __future__ import annotations

from typing import Any

from builder.cloud.errors import cloud_call
from builder.config import Settings
from builder.facts.errors import WorldError
from builder.facts.records import record


@record
class BucketSpec:
    name: str
    location: str
    labels: dict[str, str]
    versioning: bool = True
    uniform_access: bool = True
    public_access_prevention: str = "enforced"


def specs(settings: Settings) -> list[BucketSpec]:
    labels = dict(settings.labels)
    return [
        BucketSpec(settings.state_bucket, settings.region, {**labels, "tpubuild-role": "state"}),
        BucketSpec(settings.dataset_bucket, settings.region, {**labels, "tpubuild-role": "dataset"}),
    ]


def _configure(bucket: Any, spec: BucketSpec) -> list[str]:
    """Set the spec on a bucket object; return what differed (empty: already right).

    Every setting is assigned even when it already holds, so a ``patch()`` sends all of them
    (some servers reset fields a patch leaves out)."""
    iam = bucket.iam_configuration
    labels = dict(bucket.labels or {})
    changed = [what for what, ok in (
        ("versioning", bucket.versioning_enabled is spec.versioning),
        ("uniform bucket-level access", iam.uniform_bucket_level_access_enabled is spec.uniform_access),
        ("public access prevention", iam.public_access_prevention == spec.public_access_prevention),
        ("labels", all(labels.get(k) == v for k, v in spec.labels.items())),
    ) if not ok]
    bucket.versioning_enabled = spec.versioning
    iam.uniform_bucket_level_access_enabled = spec.uniform_access
    iam.public_access_prevention = spec.public_access_prevention
    bucket.labels = {**labels, **spec.labels}
    return changed


def _owned_by(client: Any, name: str, project: str) -> bool:
    with cloud_call(f"listing the buckets of project {project}"):
        return any(b.name == name for b in client.list_buckets(project=project, prefix=name))


def _adopt(client: Any, settings: Settings, spec: BucketSpec, bucket: Any, elsewhere: str) -> str:
    where = f"gs://{spec.name}"
    if not _owned_by(client, spec.name, settings.project_id):
        raise WorldError(elsewhere)
    location = (bucket.location or "").upper()
    if location != spec.location.upper():
        raise WorldError(
            f"{where} exists in {location or 'an unknown location'}, but REGION is {spec.location}; "
            f"set REGION/ZONE to match it in values.env, or delete the bucket (gcloud storage rm -r {where})"
        )
    changed = _configure(bucket, spec)
    if not changed:
        return f"{where}: exists, already configured"
    with cloud_call(f"updating {where}"):
        bucket.patch()
    return f"{where}: exists, set {', '.join(changed)}"


def create_or_adopt(client: Any, settings: Settings, spec: BucketSpec) -> str:
    from google.api_core import exceptions as gexc

    where = f"gs://{spec.name}"
    elsewhere = (f"{where} already exists and belongs to another project (or you may not read it); "
                 "bucket names are global: change ENV_BUILD_NAME (or PROJECT_ID) in values.env")
    for _attempt in range(2):
        with cloud_call(f"looking up {where}"):
            try:
                bucket = client.get_bucket(spec.name)
            except gexc.NotFound:
                bucket = None
            except gexc.Forbidden:
                raise WorldError(elsewhere) from None
        if bucket is not None:
            return _adopt(client, settings, spec, bucket, elsewhere)
        new = client.bucket(spec.name)
        _configure(new, spec)
        new.storage_class = "STANDARD"
        with cloud_call(f"creating {where}"):
            try:
                client.create_bucket(new, project=settings.project_id, location=spec.location)
            except gexc.Conflict:
                continue  # created in the meantime, here or elsewhere: look again
        return f"{where}: created in {spec.location.upper()} (versioned, uniform access, public access prevented)"
    raise WorldError(elsewhere)


def exists(client: Any, name: str) -> bool:
    from google.api_core import exceptions as gexc

    with cloud_call(f"looking up gs://{name}"):
        try:
            client.get_bucket(name)
        except gexc.NotFound:
            return False
    return True
