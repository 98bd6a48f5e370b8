"""``tpubuild check-capacity``: the pipeline's first step, and ``tpubuild plan --check`` from a
workstation. It reads the quota the slice uses (``builder.capacity`` says which and what the value
means; ``builder.cloud.quotas`` reads it) and refuses, exit 1 with one line, when the quota cannot
hold the slice. A quota tpubuild does not know, or cannot read, is said and not refused.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from builder.commands import load_settings, say, warn
from builder.errors import WorldError

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


def check(settings: Settings, running: Settings | None = None) -> None:
    """Say what the check found; ``WorldError`` (exit 1, one line) when the quota refuses the slice.
    ``running``: the applied values, whose slice runs beside the new one under make-before-break."""
    from builder import capacity
    from builder.cloud import quotas

    need = capacity.beside(settings, running)
    if isinstance(need, str):
        warn(f"capacity not checked: {need}")
        return
    try:
        value = quotas.read(need.project, need.service, need.quota_id, need.zone, need.region)
    except quotas.NotReadable as exc:
        warn(f"capacity not checked: {exc}; a refusal shows at the TPU's apply")
        return
    if value == quotas.UNLIMITED:
        say(f"tpubuild: capacity: quota {need.quota_id} ({need.service}) is unlimited in {need.zone}")
        return
    refused = capacity.refusal(need, value)
    if refused:
        raise WorldError(refused)
    say(f"tpubuild: capacity: {capacity.passed(need, value)}")


def _running(settings: Settings) -> Settings | None:
    """The applied values (the snapshot in the state bucket) under make-before-break, where the new
    slice runs beside the old one for a while; None otherwise, or when there are none to read."""
    from builder.config.replace import MAKE_BEFORE_BREAK

    if settings.replace != MAKE_BEFORE_BREAK:
        return None
    from builder.cloud import clients, snapshot
    from builder.commands import applied_or_warn

    try:
        found = snapshot.read(clients.storage(settings.project_id).bucket(settings.state_bucket), settings.env_name)
    except Exception as exc:  # noqa: BLE001  (a check that cannot read the snapshot checks the new slice alone)
        warn(f"capacity: the applied values could not be read ({' '.join(str(exc).split())[:200]}); the quota is "
             "checked for the new slice alone")
        return None
    return applied_or_warn(found, settings) if found is not None else None


def cmd_check_capacity(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    check(settings, _running(settings) if args.beside_applied else None)
    return 0
