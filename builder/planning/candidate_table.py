"""The candidates as ``tpubuild plan`` shows them (docs/capacity.md, "Candidates"): one record,
:func:`section`, that ``plan --format json`` carries as ``candidates`` and the text prints with
:func:`lines`, so both views tell the same facts.

* The list in the order a build tries it (zone by zone, mode by mode), each candidate with the
  hourly price of the slice there (builder/catalogue/cost.py: its region's price for its mode, with the
  house's bounds: "at most" where a stand-in figure is a ceiling, "~" for another region's price).
* Which candidate the plan's figures price: the first, or the granted place the applied snapshot
  records (an update keeps the slice there while the list holds it: builder/config/candidates.py).
  Where the list no longer holds it, the plan says the slice moves (and its before → after shows
  the replacement).
* With ``plan --check``, each candidate's outcome (builder/planning/capacity.py ``Outcome`` (builder/planning/capacity_outcome.py)): holds, refused
  or unchecked, with the quota's and the reservation's line.

:func:`costs` is the cost section's part: which candidate the hourly cost and the totals price, and
the worst case across candidates (the whole environment's hourly cost if the slice lands in the
dearest one). A file with one candidate and no granted place has no section: its plan is as before.
:func:`failover_note` is the plan's note on how the build asks the candidates for the slice.
Pure: prices from the packaged tables only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder.catalogue.cost import Estimate as Est, bound_prefix, estimate, money
from builder.catalogue.module_parts import fails_over, tried
from builder.catalogue.modules import accelerator_module
from builder.config.candidates import at, stays
from builder.facts.actions import Action

if TYPE_CHECKING:  # pragma: no cover
    from builder.planning.capacity_outcome import Outcome
    from builder.config import Settings
    from builder.config.candidates import Candidate
    from builder.catalogue.cost import Estimate

ORDER = "zone by zone, mode by mode"


def _slice(settings: Settings) -> Estimate:
    return estimate(settings, frozenset({accelerator_module(settings.arch)}))


def section(settings: Settings, *, granted: Candidate | None = None,
            outcomes: list[Outcome] | None = None) -> dict[str, Any] | None:
    """The ``candidates`` record of ``plan`` (None: one candidate, nothing granted elsewhere).
    ``settings``: what the plan acts on (placed at the granted candidate when the list holds it);
    ``granted``: the place the applied snapshot records; ``outcomes``: ``plan --check``'s."""
    cands = settings.candidates
    if len(cands) <= 1 and granted is None:
        return None
    kept = stays(cands, granted)
    rows = []
    for n, c in enumerate(cands, 1):
        price = _slice(at(settings, c))
        found = next((o for o in outcomes or () if (o.zone, o.mode) == (c.zone, c.mode)), None)
        rows.append({"n": n, "zone": c.zone, "region": c.region, "mode": c.mode,
                     "slice_hourly": round(price.known, 4) if not price.unknown else None,
                     "slice_price": price.total_text(), "bound": price.bound or None,
                     "approximate": price.approximate,
                     "granted": granted is not None and (c.zone, c.mode) == (granted.zone, granted.mode),
                     "check": found.as_dict() if found is not None else None})
    first = cands[0]
    if granted is None:
        story = "a create tries them in this order and builds everything zonal in the zone that grants the slice"
    elif kept:
        story = (f"granted {granted.zone} {granted.mode} (the applied snapshot): updates keep the slice there while "
                 "the list holds it; a lost slice is tried there first")
    else:
        story = (f"granted {granted.zone} {granted.mode} (the applied snapshot), which the list no longer holds: "
                 f"this update moves the slice to {first.zone} {first.mode} (a replacement)")
    return {"order": ORDER, "rows": rows, "story": story,
            "granted": {"zone": granted.zone, "mode": granted.mode} if granted is not None else None,
            "stays": kept if granted is not None else None, "checked": outcomes is not None}


def lines(info: dict[str, Any]) -> list[str]:
    """The text of :func:`section`'s record: the table, the story, and with ``--check`` each
    candidate's quota and reservation line."""
    rows = info["rows"]
    out = [f"Candidates, tried in order ({info['order']}):"]
    check = info["checked"]
    out.append((f"  {'#':>2}  {'zone':<24} {'mode':<12} {'slice per hour':<22}" + (" check" if check else "")).rstrip())
    for r in rows:
        mark = " (granted)" if r["granted"] else ""
        verdict = f" {r['check']['verdict']}" if check and r["check"] else (" -" if check else "")
        out.append(f"  {r['n']:>2}  {r['zone']:<24} {r['mode']:<12} {r['slice_price'] + mark:<22}{verdict}".rstrip())
    out.append(f"  {info['story']}")
    for r in rows if check else ():
        c = r["check"] or {}
        said = "; ".join(x for x in (c.get("refusal") or c.get("quota"), c.get("reservation")) if x)
        if said:
            out.append(f"  {r['n']:>2}: {said}")
    return out


def costs(settings: Settings, applied_now: frozenset[str], kept: tuple[Any, ...], after: Estimate,
          *, granted: bool) -> dict[str, Any] | None:
    """The cost section's ``candidates`` (None with one candidate): which one the hourly cost and
    the totals price (``granted``: the granted place, else the first), and the worst case: what the
    environment costs per hour if the slice lands in the dearest candidate (every module this
    plan applies priced there, ``kept`` items as they are)."""
    cands = settings.candidates
    if len(cands) <= 1:
        return None
    first = cands[0]
    totals = [(c, Est(tuple(kept) + estimate(at(settings, c), applied_now).items)) for c in cands]
    worst, dearest = max(totals, key=lambda pair: pair[1].known)
    why = "the granted place" if granted else "the first candidate"
    # the dearest total is a ceiling of what the list may cost, unless a floor stands in for a price in it
    most = "at most " if dearest.bound in ("", "at most") else bound_prefix(dearest.bound)
    text = (f"this cost and the totals price {first.zone} {first.mode} ({why}); worst case of the {len(cands)} "
            f"candidates: "
            f"{most}{money(dearest.known, dearest.approximate)}/h if it lands in {worst.zone} {worst.mode}")
    return {"priced": {"zone": first.zone, "mode": first.mode, "why": why},
            "worst": {"zone": worst.zone, "mode": worst.mode, "hourly": round(dearest.known, 4),
                      "bound": dearest.bound or None, "approximate": dearest.approximate},
            "text": text}


def granted_record(place: Candidate, listed: tuple[Candidate, ...]) -> dict[str, Any]:
    """``status``'s ``granted``: where the snapshot says the slice was granted, which candidate of
    values.env's list that is (None: the list no longer holds it) and the list's first."""
    n = next((i for i, c in enumerate(listed, 1) if (c.zone, c.mode) == (place.zone, place.mode)), 0)
    return {"zone": place.zone, "mode": place.mode, "candidate": n or None, "of": len(listed),
            "first": {"zone": listed[0].zone, "mode": listed[0].mode} if listed else None}


def granted_text(g: dict[str, Any]) -> str:
    """``status``'s line of :func:`granted_record`."""
    first = g["first"] or {}
    where = (f"candidate {g['candidate']} of {g['of']}" if g["candidate"] else
             f"no longer in values.env's candidates: the next update moves the slice to "
             f"{first.get('zone')} {first.get('mode')}")
    return f"{g['zone']} {g['mode']} ({where}; the applied snapshot)"


def failover_note(s: Any, plan: Any) -> list[str]:
    """What a build with several candidates does to get the slice (docs/capacity.md)."""
    acc = accelerator_module(s.arch)
    if not fails_over(s) or not plan.applies(acc):  # one candidate (TPU_QUEUED with a list is refused by load)
        return []
    if plan.action is not Action.CREATE:
        zone = ", ".join(c.label for _i, c in tried(s, plan.action))
        return [f"{acc}: a running slice stays where it is; one Google lost is asked for in the candidates of its "
                f"zone in order ({zone}) until one grants it, where its dataset disk and Filestore are"]
    return [f"{acc}: {acc}-apply asks for the slice in each candidate in order until one grants it (a stockout "
            "or a quota refusal tries the next; any other failure stops the build); Filestore and the disk are "
            "made after it, in the zone that granted it"]
