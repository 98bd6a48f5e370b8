"""``tpubuild check-capacity``: the pipeline's first step, and ``tpubuild plan --check`` from a
workstation. It reads the quota the slice uses (``builder.capacity`` says which and what the value
means; ``builder.cloud.quotas`` reads it) and, on mig, the reservation or calendar-mode request it
consumes (``builder.cloud.reservations``), and refuses, exit 1 with one line, when they cannot hold
the slice. A quota or reservation tpubuild does not know, or cannot read, is said and not refused.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from builder import capacity
from builder.cloud import clients, quotas, reservations, snapshot
from builder.commands import applied_or_warn, load_settings, say, warn
from builder.config.replace import MAKE_BEFORE_BREAK
from builder.errors import WorldError

if TYPE_CHECKING:  # pragma: no cover
    from builder.capacity import Held, Need
    from builder.config import Settings


def check(settings: Settings, running: Settings | None = None) -> None:
    """Say what the check found; ``WorldError`` (exit 1, one line) when the quota, reservation or
    calendar-mode request refuses the slice. ``running``: the applied values, whose slice runs
    beside the new one under make-before-break."""
    need, held = capacity.beside(settings, running), capacity.held(settings)
    if not isinstance(need, str):
        _quota(need)
    elif held is None:  # a mode that consumes a reservation says what it reads below instead
        warn(f"capacity not checked: {need}")
    if held is not None:
        _held(held)
    if settings.arch == "mig" and settings.provisioning == "flex-start":
        say(f"tpubuild: capacity: {capacity.FLEX_START}")


def _quota(need: Need) -> None:
    """Read the quota (each of several, in order, until one holds the slice)."""
    values: dict[str, int | None] = {}
    blind = ""
    for quota_id in need.quota_ids:
        try:
            value = quotas.read(need.project, need.service, quota_id, need.zone, need.region,
                                need.dimensions_of(quota_id))
        except quotas.NotReadable as exc:
            blind = blind or str(exc)
            continue
        if value == quotas.UNLIMITED:
            say(f"tpubuild: capacity: {need.name_of(quota_id)} is unlimited in {need.where}")
            return
        if value is not None and value >= need.amount:
            say(f"tpubuild: capacity: {capacity.passed(need, value, quota_id)}")
            return
        values[quota_id] = value
    if blind:  # one it could not read might hold the slice
        warn(f"capacity not checked: {blind}; a refusal shows at the TPU's apply")
        return
    refused = capacity.refusal_of_all(need, values)
    if refused:
        raise WorldError(refused)


def _held(held: Held) -> None:
    """Read the reservation or calendar-mode request the slice consumes."""
    try:
        if held.kind == "any":
            holds, line = capacity.any_reservation(held, reservations.listing(held.project, held.zone))
            if holds:
                say(f"tpubuild: capacity: {line}")
            else:
                warn(f"capacity: {line}")
            return
        body = reservations.read(held.project, held.zone, held.kind, held.name)
    except quotas.NotReadable as exc:
        warn(f"capacity not checked: {exc}; a refusal shows at the TPU's apply")
        return
    if held.kind == "calendar":
        refused, line = capacity.calendar_line(held, body)
        if refused:
            raise WorldError(line)
        say(f"tpubuild: capacity: {line}")
        return
    refused_line = capacity.reservation_refusal(held, body)
    if refused_line or body is None:
        raise WorldError(refused_line or f"{held.what} does not exist")
    say(f"tpubuild: capacity: {capacity.reservation_passed(held, body)}")


def _running(settings: Settings) -> Settings | None:
    """The applied values (the snapshot in the state bucket) under make-before-break, where the new
    slice runs beside the old one for a while; None otherwise, or when there are none to read."""
    if settings.replace != MAKE_BEFORE_BREAK:
        return None

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
