"""What the capacity check found (builder/planning/capacity.py says what to read and what a value means):
one :class:`Outcome` per candidate (builder/config/candidates.py), the verdict over a candidate
list, and Google's calendar-mode advice for a request not submitted yet. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder.facts.records import record

if TYPE_CHECKING:  # pragma: no cover
    from builder.planning.capacity import Held


@record
class Outcome:
    """What the check found for one candidate (builder/config/candidates.py): ``verdict`` is
    ``holds`` (a quota or reservation read holds the slice), ``refused`` (``refusal``: the one line
    that fails a build with this candidate alone) or ``unchecked`` (nothing tpubuild can read says
    no: the slice may be had). ``said``: the lines a check of this candidate alone prints, each
    ``(level, text)`` with level ``say`` (stdout) or ``warn``; ``quota`` and ``reservation`` the
    quota's and the reservation's or request's line, for plan's table."""

    zone: str
    mode: str
    verdict: str
    said: tuple[tuple[str, str], ...] = ()
    refusal: str = ""
    quota: str = ""
    reservation: str = ""

    @property
    def label(self) -> str:
        return f"{self.zone} {self.mode}"

    @property
    def can(self) -> bool:
        """Whether the slice may be had here (nothing read refuses it)."""
        return self.verdict != "refused"

    def as_dict(self) -> dict[str, Any]:
        return {"zone": self.zone, "mode": self.mode, "verdict": self.verdict, "refusal": self.refusal or None,
                "quota": self.quota or None, "reservation": self.reservation or None}


def verdict_line(outcomes: list[Outcome]) -> tuple[bool, str]:
    """(passes, the line) of a check over several candidates: it passes when one can hold the slice
    (the first such is where a build's try is expected to land), else one line naming each refusal."""
    can = [o for o in outcomes if o.can]
    if can:
        first = can[0]
        n = outcomes.index(first) + 1
        how = "holds it" if first.verdict == "holds" else "is not refused by anything tpubuild reads"
        return True, (f"{len(can)} of {len(outcomes)} candidates can hold the slice; the first, {first.label} "
                      f"(candidate {n}), {how}")
    why = "; ".join(f"{o.label}: {o.refusal}" for o in outcomes)
    return False, f"none of the {len(outcomes)} candidates can hold the slice: {why}"


def advice_request(h: Held, start: str, days: int) -> dict[str, Any]:
    """The ``futureResourcesSpecs`` entry of a calendar-mode advice request for the slice: its chips
    of the generation's VM family, in its zone only, for exactly its window (the request tpubuild
    submits asks for that start and duration)."""
    seconds = f"{days * 86400}s"
    return {"targetResources": {"aggregateResources": {"vmFamily": h.vm_family, "acceleratorCount": str(h.chips)}},
            "timeRangeSpec": {"startTimeNotEarlierThan": start, "startTimeNotLaterThan": start,
                              "minDuration": seconds, "maxDuration": seconds},
            "locationPolicy": {"locations": {f"zones/{h.zone}": {"preference": "ALLOW"}}}}


def advice_line(h: Held, start: str, body: dict[str, Any] | None) -> tuple[bool | None, str]:
    """(whether Google's advice offers the window in the slice's zone, None when it says nothing;
    the line) for a CalendarModeAdviceResponse. Advice is not a refusal: Google decides the
    request itself."""
    zone = f"zones/{h.zone}"
    for rec in (body or {}).get("recommendations") or []:
        for spec in ((rec or {}).get("recommendationsPerSpec") or {}).values():
            where = str((spec or {}).get("location") or "")
            if where == zone:
                return True, (f"calendar-mode advice: {h.chips} chips of {h.vm_family or h.accelerator_type} are "
                              f"available in {h.zone} from {spec.get('startTime', start)} to {spec.get('endTime', '?')}")
            status = ((spec or {}).get("otherLocations") or {}).get(zone) or {}
            if where or status:
                said = str(status.get("status") or "not recommended")
                return False, (f"calendar-mode advice: Google does not offer {h.chips} chips in {h.zone} from {start} "
                               f"({said})" + (f"; it advises {where.removeprefix('zones/')}" if where else "")
                               + " (gcloud compute advice calendar-mode shows other windows); the request may be "
                               "declined")
    return None, "calendar-mode advice: Google gave none for this window"
