"""What Google Cloud offers, per TPU generation: zones, TPU VM runtimes and ways to pay.

The facts are fields of each generation's record (builder/facts/generations.py, the rows of
``builder/data/tpu_offers.json``, with their sources and the date they were checked). This module
applies them to a values.env:

* ``vm_runtimes()``: runtime → generations (``builder.config.validate.VM_RUNTIMES``);
* ``check_zone``: ZONE offers TPU_ACCELERATOR_TYPE (TPU VM architectures; a generation whose
  record lists no zones is not checked, so a new generation is not refused for want of them);
* ``resolve_provisioning``: TPU_PROVISIONING and the legacy booleans TPU_SPOT / TPU_PREEMPTIBLE /
  TPU_RESERVED become one ``provisioning`` value (``on-demand`` when nothing is set); it must be
  a way the generation is offered; TPU_RESERVATION and TPU_QUEUED(_VALID_FOR) must fit it.

Decisions (docs/architecture.md, "Provisioning"):

* Preemptible is offered for v2, v3 and v4 only; Spot is its successor and the choice for v5e and
  later (Google's preemptible page; v5e/v5p/v6e docs use ``--spot``).
* A named reservation (TPU_RESERVATION) cannot be expressed on a TPU VM by the pinned
  google-beta 8.7 provider: ``google_tpu_v2_vm.scheduling_config`` has only ``preemptible``,
  ``spot`` and ``reserved``. ``reservation`` with an empty TPU_RESERVATION sets ``reserved`` (the
  project's matching TPU reservation is consumed); a name is refused on ``vm`` with that reason.
  Compute Engine MIGs can name one (``reservation_affinity``), so the key exists for ``mig``.
* Flex-start (Dynamic Workload Scheduler) is a Compute Engine offer: a MIG resize request
  (modules/tpu_mig), so it is listed in each generation's ``mig.provisioning`` only; the TPU API
  path refuses it and names TPU_ARCH="mig". TPU_MAX_RUN_HOURS (1-168, default 168) limits the run.
* Calendar mode (a calendar-mode future reservation, Dynamic Workload Scheduler) is a Compute
  Engine offer too (``mig.provisioning``), in the zones of the generation's ``calendar`` record:
  TPU_CALENDAR_START (UTC) and TPU_CALENDAR_DAYS (1-90) give the window. Google shows calendar
  availability 1 to 120 days ahead: a start beyond that is refused on every command, a window that
  has ended too, and a create (a new request) refuses a start less than a day ahead
  (:func:`create_refusal`; an update keeps the request already made, whose start may have passed).
  The window's rules are builder/config/calendar.py's.
* What each mode means (when it starts, how long it runs, what it costs, its end) is
  :data:`MODES`, read by ``tpubuild plan`` and written into docs/capacity.md.
* Queued resources create TPU VMs, never TPU Nodes; TPU_QUEUED_VALID_FOR needs TPU_QUEUED; a
  queued request is on-demand, spot or reservation (preemptible is not a queued-resource tier).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from builder.config.calendar import calendar_window, check as _calendar  # noqa: F401 - calendar_window re-exported
from builder.config.zones import nearest
from builder.facts import generations as records
from builder.facts.records import record
from builder.facts.topology import Topology

DATA = records.DATA

#: Legacy boolean key → (Settings field, provisioning it means).
LEGACY_FLAGS: dict[str, tuple[str, str]] = {
    "TPU_PREEMPTIBLE": ("tpu_preemptible", "preemptible"),
    "TPU_SPOT": ("tpu_spot", "spot"),
    "TPU_RESERVED": ("tpu_reserved", "reservation"),
}

@record
class Mode:
    """One capacity mode (TPU_PROVISIONING) in the words of ``tpubuild plan`` and of the table in
    docs/capacity.md (tools/capacity_table.py writes it from :data:`MODES`): how it is rendered,
    when the slice starts, how long it may run, what it costs and what happens at its end.
    ``{max_run_hours}``, ``{calendar_start}``, ``{calendar_days}`` and ``{calendar_end}`` are
    filled from values.env (the docs show the key instead)."""

    rendered: str
    starts: str
    runs: str
    costs: str
    ends: str

    def line(self, **values: Any) -> str:
        return (f"starts {self.starts}; runs {self.runs}; costs {self.costs}; at the end "
                f"{self.ends}").format(**values)


#: Every capacity mode, in the order the docs list them.
MODES: dict[str, Mode] = {
    "on-demand": Mode(
        "Cloud TPU API: no scheduling flag; Compute Engine: template provisioning_model STANDARD",
        "at apply, if the zone has free capacity (else the create fails)", "until you destroy it",
        "the list price, per second", "it is kept until `tpubuild destroy` (or ENV_TTL_HOURS)"),
    "spot": Mode(
        "scheduling_config.spot; Compute Engine: SPOT with instance_termination_action STOP (a multi-host "
        "bulk group, as Google's TPU Spot page) or DELETE (one host)",
        "at apply, if spare capacity exists", "until Google preempts it, which can happen at any time",
        "the Spot price, far below on-demand",
        "preempted hosts stop (a multi-host MIG) or are deleted; with TPU_RECOVERY (on by default) the health "
        "check recreates the slice (a stopped MIG slice through target size 0) and relaunches training from "
        "checkpoint_last.pt (docs/recovery.md)"),
    "preemptible": Mode(
        "scheduling_config.preemptible", "at apply, if spare capacity exists",
        "at most 24 hours, and Google can stop it sooner", "the preemptible price, below on-demand",
        "Google stops it; with TPU_RECOVERY (on by default) the health check recreates it and relaunches "
        "training from checkpoint_last.pt (docs/recovery.md)"),
    "reservation": Mode(
        "scheduling_config.reserved (any matching reservation); Compute Engine: TPU_RESERVATION by "
        "SPECIFIC_RESERVATION (RESERVATION_BOUND in a multi-host bulk group), else ANY_RESERVATION (standard VMs)",
        "at apply, from capacity your project reserved, without competing for on-demand capacity",
        "until you destroy it or the reservation ends", "the reservation's price, paid whether used or not",
        "the capacity returns to the reservation"),
    "flex-start": Mode(
        "Terraform: the group is created empty in bulk mode with repair off, its template FLEX_START "
        "with max_run_duration; mig-resize grows it from 0 to every VM (no resize request)",
        "when Dynamic Workload Scheduler has the whole slice: the bulk group waits for it and every VM "
        "starts at once", "at most {max_run_hours} h from its start (TPU_MAX_RUN_HOURS, 7 days at most)",
        "the flex-start (Dynamic Workload Scheduler) rate, below on-demand; the estimate uses its "
        "Billing Catalog SKU (DWS Defined Duration), else the on-demand price as a ceiling",
        "Compute Engine deletes the VMs at the limit; checkpoint before it"),
    "calendar": Mode(
        "Terraform (google-beta google_compute_future_reservation) where the provider knows the "
        "generation, else the mig-calendar gcloud step; the template consumes the delivered "
        "reservation by name (SPECIFIC_RESERVATION)",
        "at {calendar_start}, if Google approves the calendar-mode request (which cannot be cancelled "
        "or changed once submitted); the group creates its VMs when the reservation is delivered",
        "{calendar_days} days, until {calendar_end}",
        "the calendar-mode (Dynamic Workload Scheduler) rate for the whole reserved period, used or not; "
        "the estimate uses its Billing Catalog SKU (Calendar Mode), else the on-demand price as a ceiling",
        "Compute Engine deletes the reservation and the slice's VMs; checkpoint before it"),
}

#: What docs/capacity.md shows for the values a line is filled with.
DOC_VALUES = {"max_run_hours": "TPU_MAX_RUN_HOURS (1-168)", "calendar_start": "TPU_CALENDAR_START",
              "calendar_days": "TPU_CALENDAR_DAYS (1-90)", "calendar_end": "the start plus those days"}

#: Flex-start's longest run (Google: a resize request's run duration is 10 minutes to 7 days); the
#: default of TPU_MAX_RUN_HOURS.
MAX_RUN_HOURS = 7 * 24


def calendar_name(tpu_name: str) -> str:
    """The calendar request's name, and the reservation it delivers (the MIG consumes it by name)."""
    return f"{tpu_name}-cal"


def bulk_mode(s: Any) -> bool:
    """Whether the slice's MIG is in bulk mode (target size policy BULK; modules/tpu_mig's
    target_size_mode): every multi-host slice (Google refuses a TPU MIG with an accelerator
    topology without it) and every flex-start one (its VMs come from a bulk group grown from 0)."""
    return s.arch == "mig" and (bool(s.mig_shape.accelerator_topology) or s.provisioning == "flex-start")


Fail = Callable[[str, str, str], Any]


def table() -> dict[str, Any]:
    """The data file as read (sources, ``_checked``, ``_zone_evidence``)."""
    return records.table()


def generations() -> dict[str, dict[str, Any]]:
    """The raw rows, generation → row (tests read the zone evidence against them)."""
    return table()["generations"]


def vm_runtimes() -> dict[str, tuple[str, ...]]:
    """TPU VM runtime → the generations it runs on, in the records' order."""
    out: dict[str, list[str]] = {}
    for gen in records.records():
        for runtime in gen.runtimes:
            out.setdefault(runtime, []).append(gen.name)
    return {r: tuple(g) for r, g in out.items()}


def zones_for(topo: Topology) -> list[str] | None:
    """Zones that offer this accelerator type, or None when the record lists no zone for it."""
    gen = records.get(topo.generation)
    if gen is None or not gen.zones:
        return None
    return list(gen.zones.get(topo.accelerator_type, gen.zones.get("*", ())))


def check_zone(zone: str, topo: Topology, fail: Fail, *, key: str = "ZONE", zones: tuple[str, ...] = ()) -> None:
    """ZONE offers the slice. ``zones``: the whole ZONE list this zone is one candidate of (the
    refusal names the candidate, and the hint a zone the list does not hold yet)."""
    offered = zones_for(topo)
    if offered is None or zone in offered:
        return
    source = (f"builder/data/tpu_offers.json, from Cloud TPU regions and zones, checked {table()['_checked']}")
    if len(zones) > 1:
        others = [z for z in nearest(zone, offered) if z not in zones]
        instead = f'replace it with {others[0]} (the nearest not listed) or remove it' if others else "remove it"
        fail(key, f"the candidate zone {zone} (zone {zones.index(zone) + 1} of {len(zones)}) does not offer "
             f"{topo.accelerator_type}; it is offered in {', '.join(offered)} ({source})",
             f'{instead}; if Google offers it in {zone} now, TPU_ZONE_CHECK="warn" lets it through')
        return
    fail(key, f"{topo.accelerator_type} is not offered in {zone}; it is offered in {', '.join(offered)} ({source})",
         f'set ZONE="{nearest(zone, offered)[0]}" (the nearest; and REGION to match, or leave REGION out); if '
         f'Google offers it in {zone} now, TPU_ZONE_CHECK="warn" lets it through')


def resolve_provisioning(v: dict[str, Any], topo: Topology, fail: Fail, lines: dict[str, int]) -> None:
    """Set ``v["provisioning"]`` (and the legacy booleans to match it) and ``v["modes"]``, or fail on
    the line at fault. ``v["provisioning"]`` is TPU_PROVISIONING's first mode, ``v["modes"]`` every
    mode (builder/config/candidates.py): each must be offered for the generation on the
    architecture, and the keys of one mode (TPU_RESERVATION, TPU_MAX_RUN_HOURS, the calendar window)
    need that mode somewhere in the list. A calendar request is one candidate: its mode stands alone
    and its ZONE is one zone."""
    declared = v["provisioning"]
    listed = tuple(v.get("modes") or ())
    zones = tuple(dict.get(v, "zones") or ())  # a ZONE that did not parse stops only the rules reading v["zone"]
    if len(listed) > 1 and "calendar" in listed:
        fail("TPU_PROVISIONING", f"lists calendar with {', '.join(m for m in listed if m != 'calendar')}, but a "
             "calendar-mode request is one candidate (its own zone and window, approved ahead, not tried in turn)",
             'set TPU_PROVISIONING="calendar" alone, or drop calendar from the list')
    flagged = [(key, mode) for key, (field, mode) in LEGACY_FLAGS.items() if v[field]]
    for key, mode in flagged:
        if declared and mode != declared:
            fail(key, f'"true" means {mode}, but TPU_PROVISIONING is "{",".join(listed) or declared}"'
                 + (" (the legacy flags describe the first mode)" if len(listed) > 1 else ""),
                 f"remove {key} (TPU_PROVISIONING replaces it)")
    mode = declared or (flagged[0][1] if flagged else "on-demand")
    mode_key = "TPU_PROVISIONING" if declared else (flagged[0][0] if flagged else "TPU_PROVISIONING")
    v["provisioning"] = mode
    modes = v["modes"] = (mode, *listed[1:])
    for key, (field, m) in LEGACY_FLAGS.items():
        v[field] = mode == m
    arch = v["arch"]
    gen = records.get(topo.generation)
    if arch == "node":
        if len(modes) > 1:
            fail("TPU_PROVISIONING", f"lists {len(modes)} modes ({', '.join(modes)}), but a TPU Node environment "
                 "has one: candidate lists are a TPU VM feature (vm, mig)",
                 f'keep one mode, e.g. TPU_PROVISIONING="{mode}", or migrate to TPU VM with `tpubuild migrate`')
        if declared and mode not in ("on-demand", "preemptible"):
            fail("TPU_PROVISIONING", f"{mode} is not offered for TPU Nodes (on-demand or preemptible only)",
                 'use TPU_PROVISIONING="preemptible" on node, or migrate to TPU VM with `tpubuild migrate`')
    elif gen is not None and gen.provisioning_on(arch):
        for n, each in enumerate(modes, 1):
            if each not in gen.provisioning_on(arch):
                _not_offered(each, n, modes, mode_key, topo, gen, arch, fail)
    if v["max_run_hours"] and "flex-start" not in modes:
        fail("TPU_MAX_RUN_HOURS", f"limits a flex-start slice's run, but the TPU is {' or '.join(modes)}",
             'set TPU_PROVISIONING="flex-start" or remove TPU_MAX_RUN_HOURS')
    if mode == "calendar" and len(zones) > 1:
        fail("ZONE", f"lists {len(zones)} zones ({', '.join(zones)}), but a calendar-mode request is for one zone "
             "(TPU_PROVISIONING=\"calendar\" is one candidate)",
             f'keep the zone the reservation is for, e.g. ZONE="{zones[0]}"')
    _calendar(v, mode, mode_key, gen, fail)
    reservation = v["reservation"]
    if reservation and "reservation" not in modes:
        fail("TPU_RESERVATION", f"names a reservation but the TPU is {' or '.join(modes)}",
             'set TPU_PROVISIONING="reservation" or remove TPU_RESERVATION')
    if reservation.startswith("projects/"):
        parts = reservation.split("/")  # projects/P/zones/Z/...: P may differ (shared reservations)
        if len(zones) > 1:
            fail("TPU_RESERVATION", f"is a reservation in zone {parts[3]}, but ZONE lists {', '.join(zones)} and "
                 "every zone's reservation candidate would name it", "write the reservation's name alone (each "
                 "candidate zone's reservation of that name is used) or keep one zone")
        if parts[3] != v["zone"]:
            fail("TPU_RESERVATION", f"is in zone {parts[3]} but ZONE is {v['zone']}",
                 "use a reservation in the TPU's zone")
    if reservation and arch == "vm":
        fail("TPU_RESERVATION", "a TPU VM cannot name a reservation with the pinned provider (google-beta 8.7: "
             "google_tpu_v2_vm.scheduling_config has only preemptible, spot and reserved)",
             'leave TPU_RESERVATION empty (TPU_PROVISIONING="reservation" then uses the project\'s matching TPU '
             'reservation), or set TPU_ARCH="mig", whose VMs consume a named reservation')
    if v["queued"]:
        if arch == "node":
            fail("TPU_QUEUED", "queued resources create TPU VMs, not TPU Nodes",
                 'remove TPU_QUEUED, or migrate to TPU VM with `tpubuild migrate`')
        if "preemptible" in modes:
            fail("TPU_QUEUED", "a queued resource is on-demand, spot or reservation, not preemptible",
                 'set TPU_PROVISIONING="spot" (or remove TPU_QUEUED)')
    elif v["queued_valid_for"]:
        fail("TPU_QUEUED_VALID_FOR", "is set but TPU_QUEUED is false, so nothing waits in a queue",
             'set TPU_QUEUED="true" or remove TPU_QUEUED_VALID_FOR')


def _not_offered(mode: str, n: int, modes: tuple[str, ...], mode_key: str, topo: Topology, gen: Any, arch: str,
                 fail: Fail) -> None:
    """Refuse a mode the generation is not offered in on ``arch`` (the ``n``-th of ``modes``)."""
    offered = ", ".join(gen.provisioning_on(arch))
    elsewhere = [p for p in records.PATHS if p != arch and gen.offers(p) and mode in gen.provisioning_on(p)]
    if len(modes) > 1:
        fix = f"remove {mode} from TPU_PROVISIONING" + (
            f', or set TPU_ARCH="{elsewhere[0]}", which offers {mode}' if elsewhere else "")
        fail("TPU_PROVISIONING", f"the candidate mode {mode} (mode {n} of {len(modes)}) is not offered for "
             f'{topo.generation} TPUs ({topo.accelerator_type}) on TPU_ARCH="{arch}"; it offers {offered}', fix)
    fix = 'use TPU_PROVISIONING="spot" (the successor of preemptible)' if mode == "preemptible" \
        else f"use one of {offered}" + (f', or TPU_ARCH="{elsewhere[0]}", which offers {mode}' if elsewhere else "")
    fail(mode_key, f"{mode} is not offered for {topo.generation} TPUs ({topo.accelerator_type}) on "
         f'TPU_ARCH="{arch}"; it offers {offered}', fix)


def describe(provisioning: str, queued: bool, valid_for: str, reservation: str, *, max_run_hours: int = 0,
             calendar_start: str = "", calendar_days: int = 0, calendar_written: str = "") -> str:
    """One line for the plan: which capacity mode is used and what it means (:data:`MODES`).
    ``calendar_written``: TPU_CALENDAR_START as written; a ``+Nd`` preview says submit refuses it."""
    end = calendar_window(calendar_start, calendar_days)[1].strftime("%Y-%m-%dT%H:%M:%SZ") if calendar_start else ""
    text = f"{provisioning}: " + MODES[provisioning].line(
        max_run_hours=max_run_hours or MAX_RUN_HOURS, calendar_start=calendar_start, calendar_days=calendar_days,
        calendar_end=end)
    if provisioning == "calendar" and calendar_written.startswith("+"):
        text += (f' (TPU_CALENDAR_START="{calendar_written}" previews a start {calendar_written[1:-1]} days from today; '
                 "submit asks for the start written out)")
    if provisioning == "reservation":
        text += f" (reservation {reservation})" if reservation else " (any matching reservation of the project)"
    if queued:
        wait = f"for at most {valid_for}, then the request expires" if valid_for else "until capacity is free"
        text += f"; requested as a queued resource that may wait {wait}"
    return text
