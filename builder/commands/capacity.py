"""``tpubuild check-capacity``: the pipeline's first step, and ``tpubuild plan --check`` from a
workstation. It checks first that the hosts will reach what they install (:func:`hosts_reach`), then reads the quota the slice uses (``builder.planning.capacity`` says which and what the value
means; ``builder.cloud.quotas`` reads it) and, on mig, the reservation or calendar-mode request it
consumes (``builder.cloud.reservations``), and refuses, exit 1 with one line, when they cannot hold
the slice. A quota or reservation tpubuild does not know, or cannot read, is said and not refused.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from builder.catalogue import modules as catalogue
from builder.cloud import clients, network, quotas, regions, reservations, snapshot
from builder.commands import applied_or_warn, load_settings, say, warn
from builder.config.calendar import resolve_start
from builder.config.candidates import at
from builder.config.replace import MAKE_BEFORE_BREAK
from builder.facts.errors import WorldError
from builder.planning import capacity, egress
from builder.planning.capacity_outcome import Outcome, advice_line, advice_request, verdict_line

if TYPE_CHECKING:  # pragma: no cover
    from builder.planning.capacity import Held, Need
    from builder.config import Settings


def check(settings: Settings, running: Settings | None = None) -> list[Outcome]:
    """Say what the check found; ``WorldError`` (exit 1, one line) when the quota, reservation or
    calendar-mode request refuses the slice. ``running``: the applied values, whose slice runs
    beside the new one under make-before-break.

    Candidates (builder/config/candidates.py): every zone × mode of the list is read in this one
    call (:func:`assess_all`), each outcome is printed under its candidate's name, and the check
    passes when one of them can hold the slice (it says which); it fails, one line naming each
    candidate's refusal, when none can (:func:`conclude`). A single candidate reads and prints
    exactly what it always did. Returns every candidate's outcome."""
    hosts_reach(settings)
    regions_offer(settings)
    if len(settings.candidates) <= 1:
        outcome = _assess(settings, running, {})
        _print(outcome.said)
        if outcome.refusal:
            raise WorldError(outcome.refusal)
        return [outcome]
    outcomes = assess_all(settings, running)
    for o in outcomes:
        _print(tuple((level, f"{o.label}: {line}") for level, line in o.said))
        if o.refusal:
            say(f"tpubuild: capacity: {o.label}: refused: {o.refusal}")
    conclude(outcomes)
    return outcomes


def hosts_reach(settings: Settings) -> None:
    """The hosts' egress preflight (builder/planning/egress.py): in every region of the candidate
    list, the subnetwork gives hosts without external IPs Private Google Access and a Cloud NAT;
    ``WorldError`` (exit 1, one line) where it does not, before anything is billed. Said and not
    refused where Compute Engine does not let these credentials read it."""
    if settings.arch == "node":
        return
    if settings.tpu_external_ips:
        say("tpubuild: network: the hosts have external IPs (TPU_EXTERNAL_IPS): they reach Google APIs and the "
            "internet directly")
        return
    name = egress.subnet_name(settings.network, settings.subnetwork)
    for region in dict.fromkeys(c.region for c in settings.candidates):
        try:
            subnet = network.subnetwork(settings.project_id, region, name)
            routers = network.routers(settings.project_id, region) if subnet is not None else []
        except quotas.NotReadable as exc:
            warn(f"network not checked: {exc}; hosts without Private Google Access or Cloud NAT stop at boot")
            continue
        refused, line = egress.refusal(settings.project_id, region, settings.network, settings.subnetwork,
                                       subnet, routers)
        if refused:
            raise WorldError(refused)
        say(f"tpubuild: network: {line}")


def regions_offer(settings: Settings, keys: tuple[str, ...] = egress.PIPELINE_SERVICES) -> None:
    """The regional-availability preflight (builder/planning/egress.py ``services``): every
    regional service of ``keys`` the environment makes is offered where it would be made (the
    pipeline's: Filestore, Cloud Scheduler; initialize's: Artifact Registry), by the service's own
    locations API; ``WorldError`` (exit 1, one line) where one is not. Said and not refused where a
    service's locations cannot be read."""
    if settings.arch == "node":
        return
    wanted = frozenset(sp.name for sp in catalogue.specs(settings.arch) if sp.is_wanted(settings))
    found: dict[str, frozenset[str] | None] = {}
    for service, region, what in egress.services(settings, wanted, keys):
        if service not in found:
            try:
                found[service] = regions.offered(service, settings.project_id, egress.SERVICES[service][0])
            except quotas.NotReadable as exc:
                warn(f"region not checked: {exc}; a region without it refuses at its apply")
                found[service] = None
        offered = found[service]
        if offered is None:
            continue
        refused = egress.region_refusal(service, region, what, offered)
        if refused:
            raise WorldError(refused)
    said = sorted({f"{egress.SERVICES[s][0]} in {r}" for s, r, _w in egress.services(settings, wanted, keys) if found.get(s)})
    if said:
        say(f"tpubuild: regions: offered: {', '.join(said)}")


def assess_all(settings: Settings, running: Settings | None = None) -> list[Outcome]:
    """Every candidate's outcome, in the list's order, read in one call and printed nowhere
    (``plan --check`` shows them in its candidates table)."""
    cache: dict[tuple[str, ...], Any] = {}
    return [_assess(at(settings, c), running, cache) for c in settings.candidates]


def conclude(outcomes: list[Outcome]) -> None:
    """The verdict over several candidates: one line naming where the slice can be had, or the
    ``WorldError`` naming each refusal."""
    passes, line = verdict_line(outcomes)
    if not passes:
        raise WorldError(line)
    say(f"tpubuild: capacity: {line}")


def _print(said: tuple[tuple[str, str], ...]) -> None:
    for level, line in said:
        if level == "warn":
            warn(line)
        else:
            say(f"tpubuild: capacity: {line}")


def _assess(settings: Settings, running: Settings | None, cache: dict[tuple[str, ...], Any]) -> Outcome:
    """One candidate's reads (``settings`` placed at it), collected, not printed: the lines a check
    of it alone prints, in that order, and its refusal. ``cache``: the reads already made for an
    earlier candidate (a quota's QuotaInfo is one document for every zone; a zone's reservations
    one list)."""
    said: list[tuple[str, str]] = []
    need, held = capacity.beside(settings, running), capacity.held(settings)
    quota = reservation = ""
    verdict, refusal = "unchecked", ""
    if not isinstance(need, str):
        verdict, refusal, quota = _quota(need, said, cache)
    elif held is None:  # a mode that consumes a reservation says what it reads below instead
        said.append(("warn", f"capacity not checked: {need}"))
        quota = f"not checked: {need}"
    if held is not None and not refusal:
        verdict, refusal, reservation = _held(held, said, cache, settings)
    if settings.arch == "mig" and settings.provisioning == "flex-start" and not refusal:
        said.append(("say", capacity.FLEX_START))
    return Outcome(settings.zone, settings.provisioning, verdict, tuple(said), refusal, quota, reservation)


def _quota(need: Need, said: list[tuple[str, str]], cache: dict[tuple[str, ...], Any]) -> tuple[str, str, str]:
    """Read the quota (each of several, in order, until one holds the slice): (verdict, refusal, line)."""
    values: dict[str, int | None] = {}
    blind = ""
    for quota_id in need.quota_ids:
        try:
            value = quotas.read(need.project, need.service, quota_id, need.zone, need.region,
                                need.dimensions_of(quota_id), cache=cache)
        except quotas.NotReadable as exc:
            blind = blind or str(exc)
            continue
        if value == quotas.UNLIMITED:
            line = f"{need.name_of(quota_id)} is unlimited in {need.where}"
            said.append(("say", line))
            return "holds", "", line
        if value is not None and value >= need.amount:
            line = capacity.passed(need, value, quota_id)
            said.append(("say", line))
            return "holds", "", line
        values[quota_id] = value
    if blind:  # one it could not read might hold the slice
        said.append(("warn", f"capacity not checked: {blind}; a refusal shows at the TPU's apply"))
        return "unchecked", "", f"not checked: {blind}"
    refused = capacity.refusal_of_all(need, values) or ""
    return ("refused" if refused else "holds"), refused, refused


def _held(held: Held, said: list[tuple[str, str]], cache: dict[tuple[str, ...], Any],
          settings: Settings) -> tuple[str, str, str]:
    """Read the reservation or calendar-mode request the slice consumes: (verdict, refusal, line).
    A calendar-mode request not submitted yet is followed by Google's calendar-mode advice for its
    zone and window (:func:`_advice`): said, never a refusal (Google decides the request)."""
    try:
        if held.kind == "any":
            key = ("reservations", held.project, held.zone)
            if key not in cache:
                cache[key] = reservations.listing(held.project, held.zone)
            holds, line = capacity.any_reservation(held, cache[key])
            said.append(("say" if holds else "warn", line if holds else f"capacity: {line}"))
            return ("holds" if holds else "unchecked"), "", line
        body = reservations.read(held.project, held.zone, held.kind, held.name)
    except quotas.NotReadable as exc:
        said.append(("warn", f"capacity not checked: {exc}; a refusal shows at the TPU's apply"))
        return "unchecked", "", f"not checked: {exc}"
    if held.kind == "calendar":
        refused, line = capacity.calendar_line(held, body)
        if refused:
            return "refused", line, line
        said.append(("say", line))
        if body is None and settings.calendar_start:
            line = f"{line}; {_advice(held, settings, said)}"
        return "unchecked", "", line
    refused_line = capacity.reservation_refusal(held, body)
    if refused_line or body is None:
        line = refused_line or f"{held.what} does not exist"
        return "refused", line, line
    line = capacity.reservation_passed(held, body)
    said.append(("say", line))
    return "holds", "", line


def _advice(held: Held, settings: Settings, said: list[tuple[str, str]]) -> str:
    """Google's calendar-mode advice for the request about to be submitted (its zone, chips and
    window), said as a line (a warning where it does not offer the window); the line."""
    start = resolve_start(settings.calendar_start)
    try:
        body = reservations.advice(held.project, settings.region, advice_request(held, start, settings.calendar_days))
    except quotas.NotReadable as exc:
        said.append(("warn", f"capacity: calendar-mode advice not read: {exc}"))
        return f"advice not read: {exc}"
    offered, line = advice_line(held, start, body)
    said.append(("warn", f"capacity: {line}") if offered is False else ("say", line))
    return line


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
