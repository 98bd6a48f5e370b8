"""Pure renderers: the root ``cloudbuild.yaml`` (``tpubuild bootstrap``) and the GitOps trigger
config (``tpubuild trigger``), and the root build's image (:data:`DISPATCH_IMAGE`, which the TTL's
destroy build runs too: builder/inputs/ttl.py). Core, not ``builder.cloud``: it talks to no Google API."""

from __future__ import annotations

import re
from typing import Any

from builder.catalogue.step_kinds import MAX_BUILD_TIMEOUT
from builder.facts.errors import BadInput

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
}
#: The action every build of the GitOps trigger runs.
TRIGGER_ACTION = "auto"
#: What a push must touch to run the trigger.
TRIGGER_FILES: tuple[str, ...] = ("values.env", "modules/**", "env_setup/**", "models/**")


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


_OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_REPO = re.compile(r"[A-Za-z0-9._-]{1,100}")
_BRANCH = re.compile(r"[A-Za-z0-9._/-]{1,200}")


def trigger(env_name: str, owner: str, repo: str, branch: str, service_account: str = "") -> dict[str, Any]:
    """A BuildTrigger resource (the YAML `gcloud builds triggers import --source=/dev/stdin` reads;
    gcloud reads ``--source`` as a path, so ``-`` does not mean stdin). ``service_account`` is the
    ``projects/P/serviceAccounts/EMAIL`` its builds run as. The root values.env alone; a repository
    of many environments gets a pair per environment (builder/inputs/gitops.py)."""
    check_names(owner, repo, branch)
    return {
        "name": f"tpubuild-{env_name}-auto"[:64],
        "description": f"tpubuild auto: apply what changed in values.env of {env_name} on each push to {branch}",
        "github": {"owner": owner, "name": repo, "push": {"branch": f"^{re.escape(branch)}$"}},
        "filename": "cloudbuild.yaml",
        "includedFiles": list(TRIGGER_FILES),
        "substitutions": {**DEFAULTS, "_BUILD_ACTION": TRIGGER_ACTION},
        "tags": ["tpubuild", f"tpubuild-{env_name}"],
        **({"serviceAccount": service_account} if service_account else {}),
    }


def check_names(owner: str, repo: str, branch: str) -> None:
    """``--repo-owner``, ``--repo-name`` and ``--branch`` as GitHub spells them (bad input otherwise)."""
    if not _OWNER.fullmatch(owner):
        raise BadInput(f"--repo-owner: {owner!r} is not a GitHub owner; write the user or organisation, e.g. my-org")
    if not _REPO.fullmatch(repo) or repo in (".", ".."):
        raise BadInput(f"--repo-name: {repo!r} is not a GitHub repository name; write it like tpu-env")
    if not _BRANCH.fullmatch(branch) or ".." in branch or branch.startswith("/") or branch.endswith("/"):
        raise BadInput(f"--branch: {branch!r} is not a branch name; write it like main")
