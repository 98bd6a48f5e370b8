"""``tpubuild capacity --calendar`` and the plan's calendar-mode advice: ask Compute Engine
(builder/cloud/advice.py) whether the file's calendar-mode slice can be had, zone by zone, and what each
recommended window commits (builder/catalogue/cost.py's calendar rate × chips × the window's hours).

The request is the file's: its generation's ``vm_family``, its chips, ``TPU_CALENDAR_DAYS`` whole days,
starting at ``TPU_CALENDAR_START`` or up to ``--start-within`` days later, across the generation's
calendar-mode zones of the file's region (its own zone first). ``plan`` on a calendar file asks the same
question when Google credentials exist and says plainly when it did not or could not ask.
"""

from __future__ import annotations

import argparse
import datetime
import json
from typing import TYPE_CHECKING, Any

from builder.catalogue import cost
from builder.catalogue.cost import money
from builder.cloud import advice
from builder.commands import load_settings
from builder.config.offers import calendar_window
from builder.facts import generations
from builder.facts.errors import BadInput, TpuBuildError

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


def zones(s: Settings) -> list[str]:
    gen = generations.get(s.topology.generation)
    cal = gen.calendar if gen is not None else None
    listed = [z for z in (cal.zones if cal else ()) if z.rsplit("-", 1)[0] == s.region]
    return list(dict.fromkeys([s.zone, *listed]))


def ask(s: Settings, start_within_days: int = 0, endpoint: str | None = None) -> dict[str, Any]:
    """The advice record: the request (region, zones, chips, days, start range), each zone's answer and
    what a recommended window commits (``committed``, USD, with its ``bound``)."""
    gen = generations.get(s.topology.generation)
    if s.provisioning != "calendar" or gen is None or gen.calendar is None or not s.calendar_start:
        raise BadInput("TPU_PROVISIONING: capacity --calendar asks about a calendar-mode slice; set "
                       "TPU_PROVISIONING=\"calendar\", TPU_CALENDAR_START and TPU_CALENDAR_DAYS (docs/capacity.md)")
    begin, _end = calendar_window(s.calendar_start, s.calendar_days)
    latest = begin + datetime.timedelta(days=start_within_days)
    price = cost.tpu_price(gen.name, s.region, "calendar", pod=s.hosts > 1)
    hours = s.calendar_days * 24.0
    committed = None if price.value is None else round(price.value * s.topology.chips * hours, 2)
    answers = advice.calendar_mode(s.project_id, s.region, zones(s), gen.calendar.vm_family, s.topology.chips,
                                   begin, latest, s.calendar_days, endpoint)
    return {"asked": True, "region": s.region, "accelerator_type": s.accelerator_type, "chips": s.topology.chips,
            "days": s.calendar_days, "start_from": f"{begin:%Y-%m-%dT%H:%M:%SZ}",
            "start_by": f"{latest:%Y-%m-%dT%H:%M:%SZ}", "zones": answers, "committed": committed,
            "bound": price.bound, "rate": price.value, "approximate": price.approximate}


def not_asked(why: str) -> dict[str, Any]:
    return {"asked": False, "why": why}


def lines(found: dict[str, Any]) -> list[str]:
    """The text of an advice record (the plan's "Calendar-mode advice" block, ``capacity --calendar``)."""
    if not found["asked"]:
        return [f"Calendar-mode advice: not asked ({found['why']})"]
    what = (f"{found['accelerator_type']} ({found['chips']} chips) for {found['days']} days, starting "
            f"{found['start_from']}" + ("" if found["start_by"] == found["start_from"] else f" to {found['start_by']}"))
    out = [f"Calendar-mode advice from Compute Engine, {found['region']}: {what}"]
    commits = ("price unknown" if found["committed"] is None else
               f"commits {cost.bound_prefix(found['bound'])}{money(found['committed'], found['approximate'])}")
    for z in found["zones"]:
        if z["status"] == "RECOMMENDED" and z["start"]:
            out.append(f"  {z['zone']}: RECOMMENDED {z['start']} → {z['end']}; {commits} "
                       f"({cost.rate(found['rate'] or 0, found['approximate'])}/chip-h × {found['chips']} chips × "
                       f"{found['days'] * 24} h), billed whether used or not")
        else:
            details = f" ({z['details']})" if z["details"] else ""
            out.append(f"  {z['zone']}: {z['status']}{details}")
    return out


def for_plan(s: Settings, credentials: bool) -> dict[str, Any] | None:
    """The plan's advice on a calendar file (None on any other): asked when ``credentials``, else why not."""
    if s.provisioning != "calendar":
        return None
    if not credentials:
        return not_asked("no Google Cloud credentials; `tpubuild capacity --calendar` asks once they exist")
    try:
        return ask(s)
    except TpuBuildError as exc:
        return not_asked(f"could not ask Compute Engine: {exc}")


def run_capacity(args: argparse.Namespace) -> int:
    if not args.calendar:
        raise BadInput("capacity: name what to ask about: --calendar (calendar-mode advice); the quota check is "
                       "`tpubuild plan --check`")
    if args.start_within < 0 or args.start_within > 120:
        raise BadInput("--start-within: days after TPU_CALENDAR_START the window may start, 0 to 120")
    found = ask(load_settings(args), args.start_within, args.endpoint)
    if args.format == "json":
        print(json.dumps(found, indent=2))
    else:
        print("\n".join(lines(found)))
    return 0 if any(z["status"] == "RECOMMENDED" for z in found["zones"]) else 1
