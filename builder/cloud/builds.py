"""Create a Cloud Build build from a rendered config, follow it, report its outcome.

``create`` turns the pipeline's dict into the real ``cloudbuild_v1.Build`` (camelCase or snake_case
keys, durations as ``"600s"``), points ``source.storageSource`` at the tarball and sends
``CreateBuild``. ``follow`` polls ``GetBuild`` and prints a line whenever the build's or a step's
status changes; ``outcome`` raises a one-line ``WorldError`` naming the failing step and the log
URL when the build did not succeed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from builder.cloud.errors import cloud_call
from builder.facts.errors import WorldError
from builder.facts.records import record

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

FAILED = ("FAILURE", "INTERNAL_ERROR", "TIMEOUT", "CANCELLED", "EXPIRED")
DONE = ("SUCCESS", *FAILED)


def poll_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("TPUBUILD_POLL_SECONDS", "5")))
    except ValueError:
        return 5.0


def to_build(config: dict[str, Any], *, bucket: str, object_name: str, tags: list[str],
             substitutions: dict[str, str]) -> Any:
    from google.cloud.devtools import cloudbuild_v1

    body = dict(config)
    body.pop("source", None)
    build = cloudbuild_v1.Build.from_json(json.dumps(body), ignore_unknown_fields=False)
    build.source = cloudbuild_v1.Source(
        storage_source=cloudbuild_v1.StorageSource(bucket=bucket, object_=object_name))
    for tag in tags:
        if tag not in build.tags:
            build.tags.append(tag)
    for key, value in substitutions.items():
        build.substitutions[key] = value
    return build


def referenced(config: dict[str, Any], name: str) -> bool:
    """Whether the config declares or uses the user substitution ``name`` (``$_X`` or ``${_X}``)."""
    text = json.dumps(config)
    return name in config.get("substitutions", {}) or f"${name}" in text or f"${{{name}}}" in text


@record
class Created:
    id: str
    log_url: str


def create(client: Any, project: str, build: Any) -> Created:
    with cloud_call(f"creating the build in project {project}"):
        operation = client.create_build(project_id=project, build=build)
        meta = operation.metadata
    if meta is None or not meta.build.id:
        raise WorldError(f"Cloud Build accepted the build in project {project} but returned no build id")
    return Created(meta.build.id, meta.build.log_url)


def env_tag(env: str) -> str:
    """The tag every build of environment ``env`` carries (pipelines and their lookups agree on it)."""
    return f"tpubuild-env-{env}"


LIVE = ("QUEUED", "WORKING")


def live_filter(env: str) -> str:
    """ListBuilds filter for the builds of ``env`` that are still queued or running.

    Syntax: https://cloud.google.com/build/docs/view-build-results#filtering_build_results_using_queries
    (``field="value"`` terms joined by AND/OR, parentheses allowed)."""
    states = " OR ".join(f'status="{s}"' for s in LIVE)
    return f'tags="{env_tag(env)}" AND ({states})'


@record
class Live:
    id: str
    status: str
    log_url: str

    def describe(self) -> str:
        return f"build {self.id} ({self.status}; logs: {self.log_url})"


def live(client: Any, project: str, env: str, *, exclude: tuple[str, ...] = ()) -> list[Live]:
    """Builds of ``env`` that Cloud Build reports QUEUED or WORKING (ListBuilds with a filter),
    newest first, leaving out ``exclude`` (our own build, when we run in one)."""
    with cloud_call(f"listing the running builds of environment {env} in project {project}"):
        from google.cloud.devtools import cloudbuild_v1

        request = cloudbuild_v1.ListBuildsRequest(project_id=project, filter=live_filter(env), page_size=50)
        found = list(client.list_builds(request=request))
    # the filter is the server's; trust but verify (a server ignoring it must not hide a live build
    # behind a finished one, nor make a finished one block)
    tag = env_tag(env)
    return [Live(b.id, status_name(b), b.log_url) for b in found
            if status_name(b) in LIVE and tag in b.tags and b.id not in exclude]


def live_probe(client: Any, settings: Settings) -> Callable[[], list[Live]]:
    """The lock's question to Cloud Build: which builds of this environment are QUEUED or WORKING,
    leaving out the root build we run in, when we do (``TPUBUILD_DISPATCH_BUILD``)."""
    own = tuple(b for b in [os.environ.get("TPUBUILD_DISPATCH_BUILD", "").strip()] if b)
    return lambda: live(client, settings.project_id, settings.env_name, exclude=own)


def get(client: Any, project: str, build_id: str) -> Any:
    with cloud_call(f"reading build {build_id}"):
        return client.get_build(project_id=project, id=build_id)


def status_name(build: Any) -> str:
    return build.status.name


def follow(client: Any, project: str, build_id: str, *, emit: Callable[[str], None],
           sleep: Callable[[float], None] = time.sleep) -> Any:
    """Poll until the build is done, emitting one line per status change; return the final Build."""
    seen: dict[str, str] = {}
    while True:
        build = get(client, project, build_id)
        status = status_name(build)
        if seen.get("") != status:
            seen[""] = status
            emit(f"build {build_id}: {status}")
        for index, step in enumerate(build.steps):
            key = step.id or f"step #{index}"
            state = step.status.name
            if state in ("STATUS_UNKNOWN", "QUEUED", "PENDING") or seen.get(key) == state:
                continue
            seen[key] = state
            took = ""
            if state in DONE and step.timing.start_time and step.timing.end_time:
                seconds = (step.timing.end_time - step.timing.start_time).total_seconds()
                took = f" ({seconds:.0f}s)"
            emit(f"  {key}: {state}{took}")
        if status in DONE:
            return build
        sleep(poll_seconds())


def failing_step(build: Any) -> str:
    for index, step in enumerate(build.steps):
        if step.status.name in FAILED:
            return step.id or f"step #{index}"
    return ""


def outcome(build: Any) -> str:
    """The final line for a successful build; a ``WorldError`` otherwise."""
    status = status_name(build)
    if status == "SUCCESS":
        return f"build {build.id}: SUCCESS; logs: {build.log_url}"
    step = failing_step(build)
    where = f" at step {step}" if step else ""
    detail = (build.failure_info.detail or build.status_detail or "").strip()
    why = f" ({' '.join(detail.split())[:200]})" if detail else ""
    raise WorldError(f"build {build.id} {status}{where}{why}; logs: {build.log_url}")
