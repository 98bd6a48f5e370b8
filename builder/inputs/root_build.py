"""Pure renderers: the root ``cloudbuild.yaml`` (``tpubuild bootstrap``) and the GitOps trigger
config (``tpubuild trigger``), and the root build's image (:data:`DISPATCH_IMAGE`, which the TTL's
destroy build runs too: builder/inputs/ttl.py). Core, not ``builder.cloud``: it talks to no Google API."""

from __future__ import annotations

from typing import Any

from builder.catalogue.step_kinds import MAX_BUILD_TIMEOUT
from builder.inputs.repo_events import Repo, file_filter

#: The dispatch step's image, pinned by tag.
DISPATCH_IMAGE = "python:3.11.11-slim-bookworm"
#: The root build waits for the pipeline it dispatches (up to step_kinds.MAX_PIPELINE_TIMEOUT,
#: so the root outlives it: timeouts nest); 24 h is Cloud Build's maximum.
DISPATCH_TIMEOUT_S = MAX_BUILD_TIMEOUT
#: Substitution defaults. `auto` converges on values.env (create when nothing was applied yet),
#: so a bare `gcloud builds submit` never destroys anything.
DEFAULTS: dict[str, str] = {
    "_BUILD_ACTION": "auto",
    "_TPU": "default",
    "_MIG": "default",
    "_ALLOW_DATA_LOSS": "false",
    "_ALLOW_WIPE": "false",
    # update: the zone of the ZONE list to move the environment to (dispatch --move-to; '' none)
    "_MOVE_TO": "",
}
#: The action every build of the GitOps trigger runs.
TRIGGER_ACTION = "auto"
#: The root build's config, which the root-only trigger reads.
CONFIG_FILE = "cloudbuild.yaml"


def root_cloudbuild(settings: Any, values: str = "") -> str:
    """The root cloudbuild.yaml of ``settings``' environment (it names the builder account).
    ``values``: the repository-relative values file its step passes to ``dispatch`` (an
    environment's apply trigger, builder/inputs/gitops.py); empty: the root values.env, as
    ``tpubuild bootstrap`` writes it."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("builder", "templates"), undefined=StrictUndefined,
                      keep_trailing_newline=True, autoescape=False)
    return env.get_template("root_cloudbuild.yaml.j2").render(
        defaults=DEFAULTS, image=DISPATCH_IMAGE, timeout_s=DISPATCH_TIMEOUT_S,
        service_account=settings.builder_service_account_resource, values=values)


def trigger(settings: Any, repo: Repo) -> dict[str, Any]:
    """A BuildTrigger resource (the YAML `gcloud builds triggers import --source=/dev/stdin` reads;
    gcloud reads ``--source`` as a path, so ``-`` does not mean stdin): pushes to ``repo``'s branch
    run the root cloudbuild.yaml's ``auto`` as the builder account. The root values.env alone; a
    repository of many environments gets a pair per environment (builder/inputs/gitops.py). Its
    file filter is theirs, plus cloudbuild.yaml, which it reads (builder/inputs/repo_events.py).
    ENV_PROTECTED (``settings.protected``): every build waits for an approval
    (``approvalConfig.approvalRequired``), as an environment's apply trigger does; never dropped."""
    env_name = settings.env_name
    approval = " after an approval (ENV_PROTECTED)" if settings.protected else ""
    return {
        "name": f"tpubuild-{env_name}-auto"[:64],
        "description": f"tpubuild auto: apply what changed in values.env of {env_name} on each push to {repo.branch}{approval}",
        **repo.on(settings.project_id, "push"),
        "filename": CONFIG_FILE,
        **file_filter("values.env", CONFIG_FILE),
        "substitutions": {**DEFAULTS, "_BUILD_ACTION": TRIGGER_ACTION},
        "tags": ["tpubuild", f"tpubuild-{env_name}"],
        "serviceAccount": settings.builder_service_account_resource,
        **({"approvalConfig": {"approvalRequired": True}} if settings.protected else {}),
    }
