"""Sub-commands of ``tpubuild``, one module per area. See ``builder.cli``."""

from __future__ import annotations

import argparse
import sys

from builder.config import Settings, load


def load_settings(args: argparse.Namespace, *, strict: bool = False) -> Settings:
    """Load ``--values`` and print its warnings to stderr."""
    settings = load(args.values, strict=strict)
    for warning in settings.warnings:
        print(f"tpubuild: warning: {warning}", file=sys.stderr)
    return settings
