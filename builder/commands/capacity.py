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


def check(settings: Settings) -> None:
    """Say what the check found; ``WorldError`` (exit 1, one line) when the quota refuses the slice."""
    from builder import capacity
    from builder.cloud import quotas

    need = capacity.need(settings)
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


def cmd_check_capacity(args: argparse.Namespace) -> int:
    check(load_settings(args))
    return 0
