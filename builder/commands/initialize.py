"""``tpubuild initialize``: create (or adopt) the state and dataset buckets, the builder service
account and its roles, and upload the workspace. No Terraform runs: initialize has no pipeline."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from builder.commands import load_settings, say

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


def initialize(settings: Settings) -> int:
    from builder.cloud import buckets, clients, iam, workspace

    repo = workspace.find_repo(settings)
    client = clients.storage(settings.project_id)
    for spec in buckets.specs(settings):
        say(buckets.create_or_adopt(client, settings, spec))
    say(iam.ensure_account(clients.iam_admin(), settings))
    say(iam.grant(clients.projects(), settings))
    up, same, gone = workspace.sync(client.bucket(settings.state_bucket), settings, repo)
    say(f"gs://{settings.state_bucket}/{workspace.prefix(settings)}: workspace uploaded "
        f"({up} new or changed, {same} unchanged, {gone} removed)")
    return 0


def cmd_initialize(args: argparse.Namespace) -> int:
    return initialize(load_settings(args))
