"""Rules on TPU_RECOVERY (the health check of builder/inputs/recovery.py), run on the whole Settings,
once the capacity mode is settled (builder.config.load_text), each blaming TPU_RECOVERY. A fix
never suggests turning recovery off where it could work: it names the change that keeps it first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from builder.config.candidates import MOVES_ON

Fail = Callable[[str, str, str], None]


def log_prefix(env: str) -> str:
    """How every line of the health build starts in its log (the dashboard's logs tile filters on it)."""
    return f"tpubuild: health: {env}:"


#: Capacity modes whose slice ends on purpose: recovering it would fight the end it was bought with.
_ENDS_BY_DESIGN = ("flex-start", "calendar")


def cross_checks(settings: Any, fail: Fail) -> None:
    _move_checks(settings, fail)
    if settings.recovery_mode != "auto":
        return
    if settings.arch == "node":
        fail("TPU_RECOVERY", "the health check recreates a TPU VM or a MIG slice; the legacy node architecture "
             "has neither", 'remove TPU_RECOVERY, or migrate to TPU_ARCH="vm" with `tpubuild migrate`')
    if settings.provisioning in _ENDS_BY_DESIGN:
        fail("TPU_RECOVERY", f"a {settings.provisioning} slice ends when its capacity does (docs/capacity.md), "
             "and recovering it would ask for capacity it no longer has",
             "remove TPU_RECOVERY (checkpoint before the end instead: docs/capacity.md)")
    if settings.arch == "vm" and settings.queued:
        fail("TPU_RECOVERY", "a queued slice (TPU_QUEUED) is requested by the pipeline's tpu-queue step, which the "
             "health check does not run", "remove TPU_QUEUED so that the health check can recreate the slice, "
             "or remove TPU_RECOVERY (then nothing recreates a preempted queued slice)")


def _move_checks(settings: Any, fail: Fail) -> None:
    """TPU_RECOVERY_MOVE="true" where no recovery can move (empty means: wherever one can)."""
    if settings.recovery_move_mode != "true":
        return
    if not settings.recovery:
        fail("TPU_RECOVERY_MOVE", "a recovery that moves needs the health check, and TPU_RECOVERY is off for these "
             f"values ({settings.provisioning} slice)", 'set TPU_RECOVERY="auto", or remove TPU_RECOVERY_MOVE')
    elif len({c.zone for c in settings.candidates}) < 2:
        fail("TPU_RECOVERY_MOVE", f"ZONE lists one zone ({settings.zone}), so a recovery has no zone to move to",
             f'list a second zone after it (ZONE="{settings.zone},<another zone of the generation>"), '
             "or remove TPU_RECOVERY_MOVE")
    elif settings.queued:
        fail("TPU_RECOVERY_MOVE", "a queued slice (TPU_QUEUED) waits in its zone by design, so it never moves",
             "remove TPU_QUEUED, or remove TPU_RECOVERY_MOVE")
    elif settings.arch not in MOVES_ON:
        fail("TPU_RECOVERY_MOVE", f"a {settings.arch} environment does not move zones yet (only {', '.join(MOVES_ON)}: "
             "docs/capacity.md, \"What is built\")", "remove TPU_RECOVERY_MOVE")
    elif not settings.move:
        fail("TPU_RECOVERY_MOVE", 'a recovery moves by the update that TPU_MOVE="false" turns off',
             'remove TPU_MOVE="false", or remove TPU_RECOVERY_MOVE')
