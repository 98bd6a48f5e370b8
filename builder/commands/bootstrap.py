"""The two renderers of the cloud area, offline: ``tpubuild bootstrap`` writes the root
cloudbuild.yaml users submit, ``tpubuild trigger`` prints a GitOps push trigger. What they render
is ``builder.inputs.root_build`` (pure); here is only where it goes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from builder.commands import load_settings, say
from builder.config import environments
from builder.config.keys import service_account_email
from builder.config.gate import Door, refuse
from builder.facts.actions import Action
from builder.facts.errors import BadInput, WorldError
from builder.inputs import gitops
from builder.inputs.repo_events import Repo
from builder.inputs.root_build import TRIGGER_ACTION, root_cloudbuild, trigger
from builder.render import yamlout


def cmd_bootstrap(args: argparse.Namespace) -> int:
    text = root_cloudbuild(load_settings(args))
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    current = out.read_text() if out.is_file() else None
    if args.check:
        if current != text:
            raise WorldError(f"{out} differs from what `tpubuild bootstrap` renders; run `tpubuild bootstrap`")
        say(f"{out}: up to date")
        return 0
    if current == text:
        say(f"{out}: up to date")
        return 0
    try:
        out.write_text(text)
    except OSError as exc:
        raise BadInput(f"{out}: cannot write ({exc.strerror}); pass a writable --output") from None
    say(f"{out}: written; submit it with: gcloud builds submit --config={out} . --substitutions=_BUILD_ACTION=create")
    return 0


def cmd_trigger(args: argparse.Namespace) -> int:
    """Every build of the trigger runs ``auto``: a file that ``dispatch --action auto`` refuses
    (the gate's rows for the trigger door, builder/config/gate.py: a TPU Node, the MODEL's rules, a
    relative calendar start, ...) gets the same one-line refusal here, instead of a trigger whose
    every build fails. In a repository of many environments (``environments/<name>/values.env``,
    builder/config/environments.py) it prints each environment's plan/apply pair (builder/inputs/gitops.py) as
    one multi-document YAML; ``--values environments/<name>/values.env`` prints that one's pair only.
    ``--connection``/``--region`` listen through a 2nd-gen connection (builder/inputs/repo_events.py)."""
    repo = Repo(args.repo_owner, args.repo_name, args.branch, args.connection, args.region,
                args.linked_repository).check()
    plan_as = _plan_account(args.plan_service_account)
    root, only = environments.repository_of(args.values)
    if environments.is_layout(root):
        envs = environments.select(root, only, args.values)
        for env in envs:
            refuse(env.settings, Action(TRIGGER_ACTION), Door.TRIGGER)
        docs = [yamlout.to_yaml(t) for env in envs for t in gitops.trigger_pair(env.settings, env.path, repo, plan_as)]
        sys.stdout.write("---\n".join(docs))
        return 0
    if plan_as:
        raise BadInput("--plan-service-account: the root values.env alone has no plan trigger (one push trigger); "
                       "drop the flag, or keep the environments in environments/<name>/values.env")
    import yaml

    settings = load_settings(args)
    refuse(settings, Action(TRIGGER_ACTION), Door.TRIGGER)
    sys.stdout.write(yaml.safe_dump(trigger(settings, repo), sort_keys=False, default_flow_style=False))
    return 0


def _plan_account(email: str) -> str:
    """``--plan-service-account`` checked as BUILD_SERVICE_ACCOUNT is (builder.config.keys)."""
    try:
        return service_account_email(email)
    except ValueError as exc:
        raise BadInput(f"--plan-service-account: {exc}") from None
