"""Sub-commands of ``tpubuild``, one module per area. See ``builder.cli``.

``builder.cli`` imports this package first for every verb: it loads no ``builder.cloud`` module
(the helpers that read the state bucket load it when they do; tests/unit/test_import_budget.py)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from builder.config import Settings, load
from builder.config.candidates import at, granted, move_to
from builder.facts.errors import BadInput
from builder.planning.applied import applied_settings


def load_settings(args: argparse.Namespace, *, strict: bool = False, later: bool = False) -> Settings:
    """Load ``--values`` and print its warnings to stderr (``later``: builder.config.load's)."""
    settings = load(args.values, strict=strict, later=later)
    for warning in settings.warnings:
        print(f"tpubuild: warning: {warning}", file=sys.stderr)
    zone = getattr(args, "move_to", None)
    if zone:  # --move-to ZONE: an update placed in that zone of the list (docs/capacity.md, "When an update moves")
        if str(getattr(args, "action", "")) != "update":
            raise BadInput(f"--move-to: moving the environment to {zone} is an update; use --action update")
        try:
            settings = move_to(settings, zone.strip())
        except ValueError as exc:
            raise BadInput(f"--move-to: {exc}") from None
    return settings


def placed(settings: Settings) -> Settings:
    """``settings`` where the slice is: at the candidate the applied snapshot says granted it
    (builder/config/candidates.py), for the commands that reach the hosts (train, stop, logs, run).
    Read as ``plan`` reads the snapshot: only for a candidate list and when Google credentials exist
    (offline, ``--dry-run`` shows the first candidate, as ``plan`` without credentials); a snapshot
    that cannot be read leaves the first candidate, with a warning."""
    if len(settings.candidates) <= 1:
        return settings
    from builder.commands.compare import has_credentials

    if not has_credentials():
        return settings
    from builder.cloud import clients, snapshot

    try:
        found = snapshot.read(clients.storage(settings.project_id).bucket(settings.state_bucket), settings.env_name)
    except Exception as exc:  # noqa: BLE001 - the hosts are then looked for at the first candidate
        warn(f"the applied snapshot could not be read ({' '.join(str(exc).split())[:200]}); using the first "
             f"candidate, {settings.zone} {settings.provisioning}")
        return settings
    place = granted(found) if found is not None else None
    return at(settings, place) if place is not None else settings


def say(message: str) -> None:
    """A command's progress line on stdout, flushed at once (a build log streams it)."""
    print(message, flush=True)


def warn(message: str) -> None:
    print(f"tpubuild: warning: {message}", file=sys.stderr, flush=True)


def applied_or_warn(applied: Any, settings: Settings) -> Settings | None:
    """The values of ``applied`` (a ``builder.cloud.snapshot.Applied``) parsed, or None with a
    warning when they no longer parse: submit's ``auto`` then updates every module, and finalize
    counts every module as changed."""
    from builder.cloud.snapshot import values_path

    where = f"gs://{settings.state_bucket}/{values_path(settings.env_name)}"
    try:
        return applied_settings(applied.values, settings)
    except (BadInput, UnicodeDecodeError) as exc:
        warn(f"{where} no longer parses ({exc}); treating every module as changed")
        return None
