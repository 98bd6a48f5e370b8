"""Ask Compute Engine whether the file's calendar-mode slice can be had: per zone, the window Google
recommends (and the money it commits), or NO_CAPACITY / CONDITIONS_NOT_MET with Google's details.

examples:
  tpubuild capacity --calendar --values examples/mig-v6e-32-calendar.env
  tpubuild capacity --calendar --start-within 7 --values examples/mig-v6e-32-calendar.env

It asks calendar-mode advice (POST .../regions/REGION/advice/calendarMode) for the generation's slice of
TPU_CALENDAR_DAYS days starting at TPU_CALENDAR_START (or up to --start-within days later), across the
generation's calendar-mode zones of the file's region. Exit 1 when no zone is recommended.
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calendar", action="store_true", help="calendar-mode advice for the file's slice")
    p.add_argument("--start-within", type=int, default=0, metavar="DAYS",
                   help="the window may start up to DAYS days after TPU_CALENDAR_START (default: 0)")
    p.add_argument("--endpoint", metavar="URL", help="Compute Engine's endpoint (http:// needs no credentials)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


VERB = Verb.of(__doc__, "capacity", Group.USER, 14, "ask Compute Engine when and where a calendar-mode slice can be had",
               arguments, work("builder.commands.advice", "run_capacity"))
