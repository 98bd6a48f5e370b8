"""``tpubuild status`` (what is running, the lock, the applied snapshot, the TTL) and ``tpubuild
unlock`` (break the environment lock, refused while Cloud Build runs a build of it)."""

from __future__ import annotations

import argparse
import json

from builder.cloud import buckets, builds, clients, lock, status
from builder.commands import load_settings, say
from builder.facts.errors import BadInput, WorldError


def cmd_unlock(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    if not args.force:
        also = " (--even-if-running alone is not enough)" if args.even_if_running else ""
        raise BadInput(f"unlock: breaking the lock needs --force{also}; make sure no build of this environment "
                       "is running")
    client = clients.storage(settings.project_id)
    if not buckets.exists(client, settings.state_bucket):
        raise WorldError(f"the state bucket gs://{settings.state_bucket} does not exist; nothing is locked")
    removed = lock.force_unlock(client.bucket(settings.state_bucket), settings.env_name,
                                live=builds.live_probe(clients.cloudbuild(), settings),
                                even_if_running=args.even_if_running)
    if removed is None:
        say(f"environment {settings.env_name}: not locked")
    else:
        say(f"environment {settings.env_name}: removed the lock of {removed.describe()}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    report = status.gather(settings)
    if args.format == "json":
        say(json.dumps(report, indent=2, sort_keys=True))
    else:
        for line in status.text(report):
            say(line)
    return 1 if report["errors"] else 0
