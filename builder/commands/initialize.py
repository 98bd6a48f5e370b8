"""``tpubuild initialize``: create (or adopt) the state and dataset buckets, the builder service
account and the pull-request plan account and their roles, upload the workspace, and make the
tpubuild builder image: its Artifact Registry repository (``builder/cloud/registry.py``) and, unless its tag is there, the image itself,
built by Cloud Build from the pipelines' own ``tpubuild-image`` step (``builder/catalogue/builder_image.py``).
No Terraform runs: initialize has no pipeline."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from builder.cloud import buckets, builds, clients, iam, registry, source, workspace
from builder.commands import load_settings, say
from builder.commands.capacity import regions_offer
from builder.planning import egress
from builder.render import pipeline

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from builder.config import Settings


def initialize(settings: Settings) -> int:
    repo = workspace.find_repo(settings)
    # the region offers the builder image's repository, before anything is made (docs/cloud.md)
    regions_offer(settings, egress.INITIALIZE_SERVICES)
    client = clients.storage(settings.project_id)
    for spec in buckets.specs(settings):
        say(buckets.create_or_adopt(client, settings, spec))
    admin = clients.iam_admin()
    for account in iam.accounts(settings):
        say(iam.ensure_account(admin, settings, account))
    for line in iam.grant(clients.projects(), settings):
        say(line)
    up, same, gone = workspace.sync(client.bucket(settings.state_bucket), settings, repo)
    say(f"gs://{settings.state_bucket}/{workspace.prefix(settings)}: workspace uploaded "
        f"({up} new or changed, {same} unchanged, {gone} removed)")
    builder_image(settings, client.bucket(settings.state_bucket), repo)
    return 0


def builder_image(settings: Settings, bucket: Any, repo: Path) -> None:
    """The repository, its one grant, and the image of this tpubuild (built when its tag is missing)."""
    ar = clients.artifact_registry()
    say(registry.ensure_repository(ar, settings))
    say(registry.grant_writer(ar, settings))
    ref = pipeline.image(settings, "tpubuild")
    if registry.image_exists(ar, settings):
        say(f"builder image {ref}: exists")
        return
    src = source.pack(source.collect(repo, workspace.values_bytes(settings), {}))
    source.upload(bucket, src)
    build = builds.to_build(pipeline.render_image_build(settings), bucket=settings.state_bucket,
                            object_name=src.object_name, tags=[], substitutions={})
    cb = clients.cloudbuild()
    created = builds.create(cb, settings.project_id, build)
    say(f"builder image {ref}: building (build {created.id}; logs: {created.log_url})")
    say(builds.outcome(builds.follow(cb, settings.project_id, created.id, emit=say)))
    say(f"builder image {ref}: pushed; pipelines run guard and finalize in it")


def check(settings: Settings) -> int:
    """``initialize --check``: what a real project would refuse the builds for lack of, one line
    each on stderr and exit 1; nothing is written. The builder account and the plan account, and
    their roles (the builder's: the union of the environment's modules' and the pipeline's;
    builder/cloud/iam.py)."""
    admin = clients.iam_admin()
    absent = [a.email for a in iam.accounts(settings) if not iam.account_exists(admin, settings, a.email)]
    lines = [f"service account {email} does not exist in project {settings.project_id}; run `tpubuild initialize`"
             for email in absent] or iam.missing(clients.projects(), settings)
    for line in lines:
        print(f"tpubuild: {line}", file=sys.stderr)
    if lines:
        return 1
    for account in iam.accounts(settings):
        say(f"project {settings.project_id}: {account.email} has its {len(account.bindings)} roles")
    return 0


def cmd_initialize(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    return check(settings) if args.check else initialize(settings)
