"""GitOps for a repository of many environments: each environment's pair of Cloud Build triggers
(docs/cloud.md, "Many environments"). Pure: it renders the BuildTrigger resources ``tpubuild
trigger`` prints; ``gcloud builds triggers import --source`` creates them.

Per environment (``builder.config.environments``), after Cloud Foundation Toolkit's
``tf_cloudbuild_workspace``:

* ``tpubuild-<ENV>-plan``, on every pull request to the apply branch: one step runs ``tpubuild plan
  --action auto`` for this environment's values file only, prints the text to the build log and
  keeps ``plan.txt``, ``plan.json`` and ``plan.md`` (the money as a table and the pipeline the
  merge would run as a Mermaid picture, for the reviewer) as build artifacts under
  ``gs://<state bucket>/plans/<ENV>/<BUILD_ID>/``. ``plan`` only reads (the applied snapshot, with
  no lock): a plan build never takes the lock and never applies. Pull requests from outside
  contributors wait for a ``/gcbrun`` comment by a collaborator (``commentControl``). It runs as
  the environment's read-only plan account (``tb-<ENV>-pl``, made by ``tpubuild initialize``:
  builder/cloud/iam.py ``PLAN_ROLES``), or the one ``--plan-service-account`` names: the pull
  request's code, installed and run by this step, never runs as the builder account.
* ``tpubuild-<ENV>-auto``, on pushes to the apply branch: the root cloudbuild.yaml's dispatch step
  (``builder.inputs.root_build.root_cloudbuild``) with ``--values <file>``: ``auto`` of this environment
  only. With ``ENV_PROTECTED="true"`` the build waits for an approval
  (``approvalConfig.approvalRequired``; ``gcloud beta builds approve``, role
  ``roles/cloudbuild.builds.approver``) before it runs.

Both start only when the push or pull request
changes a file of their ``includedFiles`` that ``ignoredFiles`` does not drop
(builder/inputs/repo_events.py ``file_filter``; Cloud Build's
rule: an ignored file never counts; then at least one changed file must match an included glob).
"""

from __future__ import annotations

from typing import Any

from builder.inputs.repo_events import Repo, file_filter
from builder.inputs.root_build import DEFAULTS, DISPATCH_IMAGE, TRIGGER_ACTION, root_cloudbuild
#: The plan build's files, saved as artifacts.
PLAN_FILES: tuple[str, ...] = ("plan.txt", "plan.json", "plan.md")
#: The plan build's limit: pip install and three offline plans.
PLAN_TIMEOUT_S = 1800
#: Who may start a pull request's plan: collaborators' pull requests build at once; an outside
#: contributor's waits for a collaborator's ``/gcbrun`` comment.
COMMENT_CONTROL = "COMMENTS_ENABLED_FOR_EXTERNAL_CONTRIBUTORS_ONLY"

#: The plan step. The values file comes in through the step's environment (TPUBUILD_VALUES; ``$$``
#: is Cloud Build's escape of a shell ``$``), never pasted into the script. TPUBUILD_PLAN_BUILD
#: tells ``plan`` that the build's account may read the applied snapshot (it has no key file).
PLAN_SCRIPT = """set -euo pipefail
python -m pip install -q --no-cache-dir .
tpubuild --values "$$TPUBUILD_VALUES" plan --action auto --format json > plan.json
tpubuild --values "$$TPUBUILD_VALUES" plan --action auto --format markdown > plan.md
tpubuild --values "$$TPUBUILD_VALUES" plan --action auto --format text | tee plan.txt
"""


def plan_account(settings: Any, email: str = "") -> str:
    """The ``serviceAccount`` of the plan trigger and build: ``email`` (``tpubuild trigger
    --plan-service-account``, a read-only account of the team's own), else the environment's plan
    account, never the builder account."""
    return f"projects/{settings.project_id}/serviceAccounts/{email or settings.plan_service_account}"


def plan_build(settings: Any, path: str, account: str = "") -> dict[str, Any]:
    """The pull-request build of the environment whose values file is ``path``."""
    return {
        "steps": [{
            "id": "plan",
            "name": DISPATCH_IMAGE,
            "entrypoint": "bash",
            "env": ["TPUBUILD_PLAN_BUILD=$BUILD_ID", f"TPUBUILD_VALUES={path}", "PIP_DISABLE_PIP_VERSION_CHECK=1",
                    "PIP_ROOT_USER_ACTION=ignore"],
            "args": ["-c", PLAN_SCRIPT],
        }],
        "artifacts": {"objects": {"location": f"gs://{settings.state_bucket}/plans/{settings.env_name}/$BUILD_ID/",
                                  "paths": list(PLAN_FILES)}},
        "timeout": f"{PLAN_TIMEOUT_S}s",
        "serviceAccount": plan_account(settings, account),
        "options": {"logging": "CLOUD_LOGGING_ONLY"},
        "tags": ["tpubuild", f"tpubuild-{settings.env_name}", "tpubuild-plan"],
    }


def apply_build(settings: Any, path: str) -> dict[str, Any]:
    """The push build of ``path``'s environment: the root cloudbuild.yaml's dispatch step, for this file."""
    import yaml

    return yaml.safe_load(root_cloudbuild(settings, values=path))


def trigger_pair(settings: Any, path: str, repo: Repo, plan_as: str = "") -> list[dict[str, Any]]:
    """The plan trigger and the apply trigger of the environment whose values file is ``path``
    (``plan_as``: the email the plan trigger runs as; empty: the environment's plan account), on
    ``repo`` through either kind of GitHub connection (builder/inputs/repo_events.py)."""
    env, branch, project = settings.env_name, repo.branch, settings.project_id
    plan = {
        "name": f"tpubuild-{env}-plan"[:64],
        "description": f"tpubuild plan of {env} ({path}) on each pull request to {branch}; applies nothing",
        **repo.on(project, "pullRequest", commentControl=COMMENT_CONTROL),
        "build": plan_build(settings, path, plan_as),
        **file_filter(path),
        "serviceAccount": plan_account(settings, plan_as),
        "tags": ["tpubuild", f"tpubuild-{env}", "tpubuild-plan"],
    }
    approval = " after an approval (ENV_PROTECTED)" if settings.protected else ""
    apply = {
        "name": f"tpubuild-{env}-auto"[:64],
        "description": f"tpubuild auto of {env} ({path}) on each push to {branch}{approval}",
        **repo.on(project, "push"),
        "build": apply_build(settings, path),
        "substitutions": {**DEFAULTS, "_BUILD_ACTION": TRIGGER_ACTION},
        **file_filter(path),
        "serviceAccount": settings.builder_service_account_resource,
        "tags": ["tpubuild", f"tpubuild-{env}", "tpubuild-auto"],
        **({"approvalConfig": {"approvalRequired": True}} if settings.protected else {}),
    }
    return [plan, apply]
