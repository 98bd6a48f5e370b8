"""Capacity candidates: the ordered places and ways a slice may be had (docs/capacity.md, "Candidates").

``ZONE`` may be an ordered, comma-separated list of zones and ``TPU_PROVISIONING`` an ordered,
comma-separated list of capacity modes. The candidates are their product, **zone by zone, mode by
mode** (zone-major): every mode of the first zone, in TPU_PROVISIONING's order, then every mode of
the second zone, and so on. A user who writes ``ZONE="a,b"`` and ``TPU_PROVISIONING="spot,on-demand"``
would rather pay on-demand in their first zone than move the data to a second one for a spot slice;
a user who would rather move writes the zones the other way round, or one mode.

A single value keeps today's meaning exactly: one candidate. ``Settings.zone``, ``.region`` and
``.provisioning`` are the first candidate's; :attr:`Settings.candidates` are all of them.

``REGION`` follows the zone: empty, each candidate's region is its zone's; set, every zone of the
list must be in it (a list that spans regions leaves REGION empty).

The granted place. A build that acquired the slice records in the applied snapshot
``granted = {"zone": ..., "mode": ...}``; :func:`granted` reads it back. Later updates stay there
(:func:`settle` puts the granted candidate first) unless the user edited the list so that it no
longer contains it, or put another zone first (:func:`reordered`): then the first candidate of the
new list is where the environment goes, and the plan shows the move (builder/planning/move.py). A snapshot without
``granted`` (every snapshot made before candidates) reads as today: the first candidate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from builder.facts.actions import Action
from builder.facts.records import record, replace


@record
class Candidate:
    """One place and way to get the slice: a zone, its region and a capacity mode."""

    zone: str
    region: str
    mode: str

    @property
    def label(self) -> str:
        """``us-east5-b spot``: how plan, status and the refusals name a candidate."""
        return f"{self.zone} {self.mode}"


def region_of(zone: str) -> str:
    """The region a zone is in (``us-east5-b`` → ``us-east5``)."""
    return zone.rsplit("-", 1)[0]


def ordered(zones: Sequence[str], modes: Sequence[str]) -> tuple[Candidate, ...]:
    """The candidates of ``zones`` × ``modes``, zone by zone, mode by mode."""
    return tuple(Candidate(z, region_of(z), m) for z in zones for m in modes)


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def split(value: str) -> list[str]:
    """The items of a comma-separated list as written (blanks around each dropped)."""
    return [item.strip() for item in value.split(",")]


def listed(element: Callable[[str], str], what: str) -> Callable[[str], str]:
    """A key parser for an ordered list of ``element`` values: each item is parsed by ``element``
    (so aliases resolve), and an empty item (``"a,,b"``, a trailing comma) or an item named twice
    is refused, naming it. Returns the items as one comma-joined string, each as ``element``
    returned it; a single value is parsed exactly as ``element`` parses it."""

    def parse(value: str) -> str:
        if "," not in value:
            return element(value)
        items = split(value)
        seen: dict[str, str] = {}
        out: list[str] = []
        for n, item in enumerate(items, 1):
            if item == "":
                where = "a trailing comma" if n == len(items) else (
                    "a leading comma" if n == 1 else f"an empty {_ordinal(n)} {what}")
                raise ValueError(f"{value.strip()!r} has {where}; remove the extra comma")
            try:
                parsed = element(item)
            except ValueError as exc:
                bad, _, fix = str(exc).partition("; ")
                raise ValueError(f"the {_ordinal(n)} {what} of {value.strip()!r}: {bad}; {fix}") from None
            if parsed in seen:
                twice = f"{parsed!r}" if seen[parsed] == item else f"{parsed!r} (as {seen[parsed]!r} and {item!r})"
                raise ValueError(f"{value.strip()!r} names {twice} twice; name each {what} once")
            seen[parsed] = item
            out.append(parsed)
        return ",".join(out)

    return parse


def granted(snapshot: Any) -> Candidate | None:
    """The place the build got the slice, as the applied snapshot records it (``granted``:
    ``{"zone": ..., "mode": ...}``, as a key of the snapshot's record, an attribute of
    ``builder.cloud.snapshot.Applied``, or that JSON text as the object metadata carries it), or
    None: no snapshot, or one written before candidates (then the environment is where its first
    candidate says, as before), or a record that is not a zone and a mode."""
    record_ = snapshot.get("granted") if isinstance(snapshot, Mapping) else getattr(snapshot, "granted", None)
    if isinstance(record_, (str, bytes)) and record_:
        try:
            record_ = json.loads(record_)
        except ValueError:
            return None
    if not isinstance(record_, Mapping):
        return None
    zone, mode = record_.get("zone"), record_.get("mode")
    if not (isinstance(zone, str) and zone and isinstance(mode, str) and mode):
        return None
    return Candidate(zone, region_of(zone), mode)


def stays(candidates: Sequence[Candidate], place: Candidate | None) -> bool:
    """Whether an update keeps the slice where it was granted: the list still holds that place."""
    return place is not None and any((c.zone, c.mode) == (place.zone, place.mode) for c in candidates)


def first_is(candidates: Sequence[Candidate], place: Candidate) -> tuple[Candidate, ...]:
    """``candidates`` with ``place`` first and the others in their order (the failover order of a
    slice that was granted there and is lost again: the granted place is tried first)."""
    hit = [c for c in candidates if (c.zone, c.mode) == (place.zone, place.mode)]
    return (*hit, *(c for c in candidates if c not in hit))


def at(settings: Any, place: Candidate) -> Any:
    """``settings`` (a :class:`~builder.config.settings.Settings`) as if ``place`` were its first
    candidate: its zone, region and mode (and the legacy booleans that mirror the mode), the other
    candidates after it in their order. How the plan prices a candidate, the check reads one, and
    an environment granted elsewhere than its first candidate is planned and read where it is."""
    listed = settings.candidates or (Candidate(settings.zone, settings.region, settings.provisioning),)
    return replace(settings, zone=place.zone, region=place.region, provisioning=place.mode,
                   tpu_spot=place.mode == "spot", tpu_preemptible=place.mode == "preemptible",
                   tpu_reserved=place.mode == "reservation",
                   candidates=first_is(listed, place) if stays(listed, place) else (place, *listed))


def reordered(settings: Any, place: Candidate | None, first: str | None) -> bool:
    """Whether the user put another zone first to move the environment there (docs/capacity.md,
    "Moving an environment to another zone"): the list's first zone is neither the applied list's
    first zone (``first``; None: not known, nothing reordered) nor the zone the slice is in. A list
    whose first zone did not change keeps a slice that a failover granted further down the list."""
    return (place is not None and first is not None and bool(settings.candidates)
            and settings.candidates[0].zone not in (first, place.zone))


def settle(settings: Any, place: Candidate | None, first: str | None = None) -> Any:
    """Where an update of ``settings`` keeps the slice: at ``place`` (the granted place the
    applied snapshot records) while the list still holds it and was not reordered to put another
    zone first (:func:`reordered`; ``first``: the applied list's first zone); else the first
    candidate, and the plan shows the move (builder/planning/move.py)."""
    if getattr(settings, "move_to", ""):  # placed on purpose (--move-to): the place asked for wins
        return settings
    keep = stays(settings.candidates, place) and place is not None and not reordered(settings, place, first)
    return at(settings, place) if keep and place is not None else settings


def move_to(settings: Any, zone: str) -> Any:
    """``settings`` with the candidates of ``zone`` first, the others after in their order: the
    list a user would write to move the environment there (``--move-to ZONE``; the health build's
    move to the next candidate zone, docs/recovery.md), marked so that :func:`settle` places it
    there whatever the granted place (``move_to``). Raises ValueError when the list has no
    candidate in ``zone``."""
    hit = [c for c in settings.candidates if c.zone == zone]
    if not hit:
        listed = ", ".join(dict.fromkeys(c.zone for c in settings.candidates))
        raise ValueError(f"{zone!r} is not a zone of the ZONE list ({listed}); name one of them")
    return replace(at(settings, hit[0]), move_to=zone)


#: The architectures whose update renders a move to another zone (docs/capacity.md, "What is built").
MOVES_ON = ("vm",)


def acting(settings: Any, place: Candidate | None, action: Action, first: str | None = None) -> Any:
    """Where ``action`` acts on an environment whose slice the applied snapshot says was granted
    at ``place``: the one rule plan, render, submit, dispatch and auto follow. A destroy takes down
    what is there (:func:`at`: the backups of the storage are taken in its zone); any other action
    keeps the slice there while the list holds it and puts no other zone first (:func:`settle`;
    ``first``: the applied list's first zone), and an update placed in another zone records the zone it
    moves from (``moving_from``). ``settings`` itself without a granted place."""
    if place is None:
        return settings
    if Action(action) is Action.DESTROY:
        return at(settings, place)
    out = settle(settings, place, first)
    # an update placed in another zone than the slice's moves the environment there (TPU_MOVE): the
    # pipeline copies the storage from ``moving_from`` first (docs/capacity.md, "Moving an environment").
    # Only where the slice's slots record their zone (modules/tpu_vm; modules/tpu_mig's do not yet):
    # elsewhere the update renders no move and the guard refuses the storage's replacement, as before
    moves = (Action(action) is Action.UPDATE and getattr(out, "move", False) and out.zone != place.zone
             and getattr(out, "arch", "") in MOVES_ON)
    return replace(out, moving_from=place.zone) if moves else out
