"""Commands that talk to Google Cloud: ``initialize``, ``submit``, ``dispatch``, ``finalize``,
``check-capacity``, ``unlock``, ``status``, plus the two renderers ``bootstrap`` (the root cloudbuild.yaml) and
``trigger`` (a GitOps trigger config).

Nothing here imports ``google.*`` at import time: each command's body lives in its own module
(:data:`BODIES`: initialize, submit (also dispatch), finalize, state (unlock, status), bootstrap
(also trigger)), imported when the command runs; they call the Google edge in ``builder.cloud.*``,
which never imports back up into the commands. See docs/cloud.md for the design (lock, applied
snapshot, auto).
"""

from __future__ import annotations

import argparse
import importlib

from builder.commands.parser import add_action, add_scope


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    def verb(name: str, **kwargs: str) -> argparse.ArgumentParser:
        """The subcommand ``name`` with the common options, run by its body in :data:`BODIES`."""
        p = sub.add_parser(name, parents=[common], **kwargs)
        p.set_defaults(func=_run(name))
        return p

    verb("initialize", help="create the buckets, upload the workspace, build the builder image")

    p = verb("submit", help="pack the source and run the action's pipeline on Cloud Build")
    add_action(p, what="the action to run")
    add_scope(p)
    p.add_argument("--allow-wipe", action="store_true",
                   help="let the seeder overwrite a shared PD that already holds data")
    p.add_argument("--wait", action="store_true",
                   help="stream the build's step states and exit with its outcome")

    p = verb("dispatch", help="the root cloudbuild.yaml's step: raw substitution strings in, action run")
    p.add_argument("--action", required=True, metavar="_BUILD_ACTION")
    p.add_argument("--tpu", default="default", metavar="_TPU")
    p.add_argument("--mig", default="default", metavar="_MIG")
    p.add_argument("--allow-data-loss", default="false", metavar="_ALLOW_DATA_LOSS")
    p.add_argument("--allow-wipe", default="false", metavar="_ALLOW_WIPE")

    p = verb("finalize", help="the pipeline's last step: record the applied snapshot, release the lock")
    p.add_argument("--build-id", required=True, metavar="ID")
    p.add_argument("--action", required=True, metavar="ACTION")

    p = verb("check-capacity", help="the pipeline's first step: refuse (exit 1) when the TPU quota cannot hold the slice")
    p.add_argument("--beside-applied", action="store_true",
                   help="make-before-break: the quota must also hold the applied slice (read from the state bucket) "
                        "while the new one is created beside it")

    p = verb("unlock", help="break the environment lock")
    p.add_argument("--force", action="store_true",
                   help="required; refused while Cloud Build reports a build of this environment QUEUED or WORKING")
    p.add_argument("--even-if-running", action="store_true",
                   help="with --force: break the lock even while a build of this environment runs")

    p = verb("status", help="TPU, Filestore, MIG, Terraform state, lock and applied snapshot")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")

    p = verb("bootstrap", help="write the root cloudbuild.yaml (the file users submit) for values.env's environment")
    p.add_argument("--output", default="cloudbuild.yaml", metavar="PATH",
                   help="where to write it ('-' for stdout; default ./cloudbuild.yaml)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when the file differs from what would be written")

    p = verb("trigger", help="print the GitOps triggers (plan on pull requests, auto on push) for gcloud builds "
                             "triggers import",
             description="Print Cloud Build GitHub triggers as YAML. With the root values.env alone: one push "
             "trigger (_BUILD_ACTION=auto). In a repository with environments/<name>/values.env: for every "
             "environment (the root values.env too, when there is one) a pull-request trigger that plans and a "
             "push trigger that runs auto, the latter waiting for an approval where ENV_PROTECTED=\"true\" "
             "(--values environments/<name>/values.env: that one's pair only). Import it with: "
             "tpubuild trigger --repo-owner O --repo-name N | "
             "gcloud builds triggers import --source=/dev/stdin (gcloud reads --source as a path, "
             "so --source=- does not work)")
    p.add_argument("--repo-owner", required=True, metavar="OWNER", help="the GitHub user or organisation")
    p.add_argument("--repo-name", required=True, metavar="NAME", help="the GitHub repository holding values.env")
    p.add_argument("--plan-service-account", default="", metavar="EMAIL",
                   help="with environments/: the account the pull-request plan triggers run as (one that can only "
                        "read the state buckets and write their plans/ objects); default: each environment's "
                        "builder account")
    p.add_argument("--branch", default="main",
                   help="the branch whose pushes run auto, and whose pull requests are planned (exactly this "
                        "branch; default: main)")


#: Which module of builder/commands/ holds each command's body (``cmd_<name>``): imported only
#: when the command runs, so ``tpubuild --help`` loads none of them.
BODIES: dict[str, str] = {
    "initialize": "builder.commands.initialize",
    "submit": "builder.commands.submit",
    "dispatch": "builder.commands.submit",
    "finalize": "builder.commands.finalize",
    "check-capacity": "builder.commands.capacity",
    "unlock": "builder.commands.state",
    "status": "builder.commands.state",
    "bootstrap": "builder.commands.bootstrap",
    "trigger": "builder.commands.bootstrap",
}


def _run(name: str):  # noqa: ANN202 - argparse callback
    def run(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(BODIES[name]), f"cmd_{name.replace('-', '_')}")(args) or 0)

    run.__name__ = f"run_{name}"
    return run
