"""Sub-commands of ``tpubuild``, one module per area. See ``builder.cli``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from builder.applied import applied_settings
from builder.cloud.snapshot import values_path
from builder.config import Settings, load
from builder.errors import BadInput


def load_settings(args: argparse.Namespace, *, strict: bool = False, later: bool = False) -> Settings:
    """Load ``--values`` and print its warnings to stderr (``later``: builder.config.load's)."""
    settings = load(args.values, strict=strict, later=later)
    for warning in settings.warnings:
        print(f"tpubuild: warning: {warning}", file=sys.stderr)
    return settings


def say(message: str) -> None:
    """A command's progress line on stdout, flushed at once (a build log streams it)."""
    print(message, flush=True)


def warn(message: str) -> None:
    print(f"tpubuild: warning: {message}", file=sys.stderr, flush=True)


def applied_or_warn(applied: Any, settings: Settings) -> Settings | None:
    """The values of ``applied`` (a ``builder.cloud.snapshot.Applied``) parsed, or None with a
    warning when they no longer parse: submit's ``auto`` then updates every module, and finalize
    counts every module as changed."""
    where = f"gs://{settings.state_bucket}/{values_path(settings.env_name)}"
    try:
        return applied_settings(applied.values, settings)
    except (BadInput, UnicodeDecodeError) as exc:
        warn(f"{where} no longer parses ({exc}); treating every module as changed")
        return None
