"""Calendar mode's window (TPU_PROVISIONING="calendar"): TPU_CALENDAR_START and TPU_CALENDAR_DAYS.

Google shows calendar availability 1 to 120 days ahead and takes a duration of 1 to 90 days
(https://docs.cloud.google.com/tpu/docs/calendar-mode-reservation; builder/data/tpu_offers.json
records the page and its zone table). So:

* a start beyond 120 days ahead is refused on every command, and so is a window that has ended;
* a create (a new request) refuses a start less than a day ahead (:func:`create_refusal`), and so
  does ``tpubuild validate`` (:func:`validate_refusal`: it reports what plan's and render's default
  action refuses); an update keeps the request already made, whose start may have passed, so it
  is let through there;
* ``+Nd`` (N days from today, midnight UTC) is a preview form: validate, plan and render resolve it;
  submit and dispatch refuse it (:func:`submit_refusal`), since a submitted request cannot be
  changed or cancelled and a relative start would move on every later build. The shipped calendar
  examples use it, so they stay valid on any day, and a user writes the start chosen from Google's
  availability before submitting;
* today is :func:`now`; ``TPUBUILD_NOW`` pins it (tests, goldens, a reviewer's rerun).
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from builder.config.zones import nearest
from builder.facts.errors import BadInput, ConfigError

#: How far ahead a calendar-mode request may start (Google shows availability 1 to 120 days ahead).
CALENDAR_AHEAD_DAYS = (1, 120)
_RELATIVE = re.compile(r"\+([0-9]+)d")
_STAMP = "%Y-%m-%dT%H:%M:%SZ"


def now() -> datetime.datetime:
    """Today's time, UTC: the clock the calendar rules read. ``TPUBUILD_NOW`` (an RFC 3339 UTC time)
    pins it, so tests, goldens and a reviewer's rerun see the same day; it is not a values.env key."""
    fixed = os.environ.get("TPUBUILD_NOW", "").strip()
    if fixed:
        try:
            return datetime.datetime.strptime(fixed, _STAMP).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            raise BadInput(f"TPUBUILD_NOW: {fixed!r} is not a UTC time; write it like 2026-11-28T00:00:00Z, "
                           "or unset it") from None
    return datetime.datetime.now(datetime.timezone.utc)


def resolve_start(written: str, today: datetime.datetime | None = None) -> str:
    """TPU_CALENDAR_START as written → the UTC time it means (``+Nd``: N days from today, midnight)."""
    relative = _RELATIVE.fullmatch(written)
    if relative is None:
        return written
    day = (today or now()).date() + datetime.timedelta(days=int(relative.group(1)))
    return f"{day:%Y-%m-%d}T00:00:00Z"


def calendar_window(start: str, days: int) -> tuple[datetime.datetime, datetime.datetime]:
    """TPU_CALENDAR_START and TPU_CALENDAR_DAYS → the reservation's start and end (UTC)."""
    begin = datetime.datetime.strptime(resolve_start(start), _STAMP).replace(tzinfo=datetime.timezone.utc)
    return begin, begin + datetime.timedelta(days=days)


def _suggested_start(today: datetime.datetime) -> str:
    return f"{today + datetime.timedelta(days=14):%Y-%m-%dT00:00:00Z}"


def create_refusal(settings: Any, today: datetime.datetime | None = None) -> Any:
    """The one-line refusal of a create whose calendar request would start less than a day ahead
    (in the past, or too soon for Google to offer it), or None. A create submits a new request;
    an update keeps the one already made, so it is not refused there."""
    if settings.provisioning != "calendar" or not settings.calendar_start:
        return None
    today = today or now()
    begin = calendar_window(settings.calendar_start, settings.calendar_days)[0]
    if begin >= today + datetime.timedelta(days=CALENDAR_AHEAD_DAYS[0]):
        return None

    when = "is in the past" if begin <= today else "is less than a day ahead"
    return ConfigError(
        f"{settings.calendar_start} {when}: a create submits a new calendar-mode request, and Google "
        f"takes a start {CALENDAR_AHEAD_DAYS[0]} to {CALENDAR_AHEAD_DAYS[1]} days ahead",
        f'set TPU_CALENDAR_START to a UTC time in that window, like "{_suggested_start(today)}"',
        path=settings.source, line=settings.line_of("TPU_CALENDAR_START"), key="TPU_CALENDAR_START")


def submit_refusal(settings: Any) -> Any:
    """The refusal of submitting a relative TPU_CALENDAR_START (``+14d``), or None: the request
    cannot be changed once submitted, so what is sent must be a date the user wrote."""
    written = settings.raw.get("TPU_CALENDAR_START", "").strip()
    if settings.provisioning != "calendar" or not _RELATIVE.fullmatch(written):
        return None

    return ConfigError(
        f"{written!r} previews a start {written[1:-1]} days from today ({settings.calendar_start}); a submitted "
        "calendar-mode request cannot be changed or cancelled, and a relative start would move on every "
        "later build", f'write the start you chose from Google\'s availability, e.g. '
        f'TPU_CALENDAR_START="{settings.calendar_start}"',
        path=settings.source, line=settings.line_of("TPU_CALENDAR_START"), key="TPU_CALENDAR_START")


def check(v: dict[str, Any], mode: str, mode_key: str, gen: Any, fail: Callable[[str, str, str], Any],
              today: datetime.datetime | None = None) -> None:
    """TPU_CALENDAR_START / TPU_CALENDAR_DAYS: both with calendar mode, neither without; the zone
    must be one Google lists for the generation's calendar mode (the hint names the nearest that
    has it); ``+Nd`` is resolved into ``v["calendar_start"]``; a window that has ended, or a start
    beyond Google's advance window (120 days), is refused. A start in the past whose window still
    runs is let through here: it is how an existing request reads on a later update; a create
    refuses it (:func:`create_refusal`)."""
    start, days = v["calendar_start"], v["calendar_days"]
    if mode != "calendar":
        for key, value in (("TPU_CALENDAR_START", start), ("TPU_CALENDAR_DAYS", days)):
            if value:
                fail(key, f"belongs to a calendar-mode reservation, but the TPU is {mode}",
                     f'set TPU_PROVISIONING="calendar" or remove {key}')
        return
    cal = gen.calendar if gen is not None else None
    if cal is not None and v["zone"] not in cal.zones:
        fail(mode_key, f"calendar mode is not offered for {gen.name if gen else ''} in {v['zone']}; Google lists "
             f"{', '.join(cal.zones)} (builder/data/tpu_offers.json)",
             f'set ZONE="{_nearest(v["zone"], cal.zones)}" (the nearest), or use TPU_PROVISIONING="flex-start" '
             f'(no fixed start) in {v["zone"]}')
    today = today or now()
    if not start:
        fail("TPU_PROVISIONING", "calendar mode needs a start time (TPU_CALENDAR_START)",
             f'add TPU_CALENDAR_START="{_suggested_start(today)}" (a UTC time 1 to 120 days ahead)')
    if not days:
        fail("TPU_PROVISIONING", "calendar mode needs a duration (TPU_CALENDAR_DAYS)",
             'add TPU_CALENDAR_DAYS="7" (1 to 90 days)')
    start = v["calendar_start"] = resolve_start(start, today)
    begin, end = calendar_window(start, days)
    if end <= today:
        fail("TPU_CALENDAR_START", f"{start} is in the past: a {days}-day reservation from then ended at "
             f"{end:{_STAMP}}", "set TPU_CALENDAR_START to a UTC time 1 to 120 days ahead, like "
             f'"{_suggested_start(today)}"')
    latest = today + datetime.timedelta(days=CALENDAR_AHEAD_DAYS[1])
    if begin > latest:
        fail("TPU_CALENDAR_START", f"{start} is {(begin - today).days} days ahead; Google takes calendar-mode "
             f"requests for a start 1 to {CALENDAR_AHEAD_DAYS[1]} days ahead (until {latest:{_STAMP}})",
             f'set TPU_CALENDAR_START to a UTC time in that window, like "{_suggested_start(today)}"')


def _nearest(zone: str, offered: Any) -> str:
    return nearest(zone, offered)[0]


def validate_refusal(path: Any, line: int | None, values: dict[str, Any],
                     today: datetime.datetime | None = None) -> Any:
    """``tpubuild validate``'s refusal of a start a create would refuse (``values``: the parsed
    values, before the Settings are made). validate reports what a later command refuses, and
    plan's and render's default action is create (as for a TPU Node file, builder/config/legacy.py); the
    fix says that an update of a request already made still plans."""
    refusal = create_refusal(SimpleNamespace(source=path, line_of=lambda key: line, **{
        k: values[k] for k in ("provisioning", "calendar_start", "calendar_days")}), today)
    if refusal is None:
        return None

    return ConfigError(refusal.what, f"{refusal.fix} (an update of the request already made still plans: "
                       "tpubuild plan --action update)", path=path, line=line, key="TPU_CALENDAR_START")
