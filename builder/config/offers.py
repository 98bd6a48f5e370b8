"""What Google Cloud offers, per TPU generation: zones, TPU VM runtimes and ways to pay.

The facts are fields of each generation's record (builder/generations.py, the rows of
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
  google-beta 6.50 provider: ``google_tpu_v2_vm.scheduling_config`` has only ``preemptible``,
  ``spot`` and ``reserved``. ``reservation`` with an empty TPU_RESERVATION sets ``reserved`` (the
  project's matching TPU reservation is consumed); a name is refused on ``vm`` with that reason.
  Compute Engine MIGs can name one (``reservation_affinity``), so the key exists for ``mig``.
* Flex-start (Dynamic Workload Scheduler) is a Compute Engine offer: a MIG resize request
  (modules/tpu_mig), so it is listed in each generation's ``mig.provisioning`` only; the TPU API
  path refuses it and names TPU_ARCH="mig". TPU_MAX_RUN_HOURS (1-168, default 168) limits the run.
* Queued resources create TPU VMs, never TPU Nodes; TPU_QUEUED_VALID_FOR needs TPU_QUEUED; a
  queued request is on-demand, spot or reservation (preemptible is not a queued-resource tier).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from builder import generations as records
from builder.topology import Topology

DATA = records.DATA

#: Legacy boolean key → (Settings field, provisioning it means).
LEGACY_FLAGS: dict[str, tuple[str, str]] = {
    "TPU_PREEMPTIBLE": ("tpu_preemptible", "preemptible"),
    "TPU_SPOT": ("tpu_spot", "spot"),
    "TPU_RESERVED": ("tpu_reserved", "reservation"),
}

#: What each provisioning model means, in the plan's words.
MEANING: dict[str, str] = {
    "on-demand": "on-demand: billed per second at the list price; kept until you destroy it, "
                 "but creation fails when the zone has no free capacity",
    "spot": "spot: much cheaper, but Google can take it away at any time (the TPU is then PREEMPTED "
            "and must be recreated); training resumes from checkpoint_last.pt",
    "preemptible": "preemptible: cheaper, but Google can stop it at any time and always within 24 hours; "
                   "training resumes from checkpoint_last.pt",
    "reservation": "reservation: uses capacity your project has reserved, so creation does not compete "
                   "for on-demand capacity",
    "flex-start": "flex-start (Dynamic Workload Scheduler): a resize request waits until Google has the whole "
                  "slice, then starts every VM at once; it runs at most {hours} h, billed at Google's "
                  "flex-start rate (below on-demand; the estimate uses the on-demand price), then Compute Engine deletes the VMs (checkpoint before the limit)",
}

#: Flex-start's longest run (Google: a resize request's run duration is 10 minutes to 7 days); the
#: default of TPU_MAX_RUN_HOURS.
MAX_RUN_HOURS = 7 * 24

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


def check_zone(zone: str, topo: Topology, fail: Fail, *, key: str = "ZONE") -> None:
    offered = zones_for(topo)
    if offered is None or zone in offered:
        return
    fail(key, f"{topo.accelerator_type} is not offered in {zone}; it is offered in {', '.join(offered)} "
         f"(builder/data/tpu_offers.json, from Cloud TPU regions and zones, checked {table()['_checked']})",
         f'set ZONE="{offered[0]}" (and REGION to match, or leave REGION out); if Google offers it in {zone} '
         'now, TPU_ZONE_CHECK="warn" lets it through')


def resolve_provisioning(v: dict[str, Any], topo: Topology, fail: Fail, lines: dict[str, int]) -> None:
    """Set ``v["provisioning"]`` (and the legacy booleans to match it), or fail on the line at fault."""
    declared = v["provisioning"]
    flagged = [(key, mode) for key, (field, mode) in LEGACY_FLAGS.items() if v[field]]
    for key, mode in flagged:
        if declared and mode != declared:
            fail(key, f'"true" means {mode}, but TPU_PROVISIONING is "{declared}"',
                 f"remove {key} (TPU_PROVISIONING replaces it)")
    mode = declared or (flagged[0][1] if flagged else "on-demand")
    mode_key = "TPU_PROVISIONING" if declared else (flagged[0][0] if flagged else "TPU_PROVISIONING")
    v["provisioning"] = mode
    for key, (field, m) in LEGACY_FLAGS.items():
        v[field] = mode == m
    arch = v["arch"]
    gen = records.get(topo.generation)
    if arch == "node":
        if declared and mode not in ("on-demand", "preemptible"):
            fail("TPU_PROVISIONING", f"{mode} is not offered for TPU Nodes (on-demand or preemptible only)",
                 'use TPU_PROVISIONING="preemptible" on node, or migrate to TPU VM with `tpubuild migrate`')
    elif gen is not None and gen.provisioning_on(arch) and mode not in gen.provisioning_on(arch):
        offered = ", ".join(gen.provisioning_on(arch))
        elsewhere = [p for p in records.PATHS if p != arch and gen.offers(p) and mode in gen.provisioning_on(p)]
        fix = 'use TPU_PROVISIONING="spot" (the successor of preemptible)' if mode == "preemptible" \
            else f"use one of {offered}" + (f', or TPU_ARCH="{elsewhere[0]}", which offers {mode}' if elsewhere else "")
        fail(mode_key, f"{mode} is not offered for {topo.generation} TPUs ({topo.accelerator_type}) on "
             f'TPU_ARCH="{arch}"; it offers {offered}', fix)
    if v["max_run_hours"] and mode != "flex-start":
        fail("TPU_MAX_RUN_HOURS", f"limits a flex-start slice's run, but the TPU is {mode}",
             'set TPU_PROVISIONING="flex-start" or remove TPU_MAX_RUN_HOURS')
    reservation = v["reservation"]
    if reservation and mode != "reservation":
        fail("TPU_RESERVATION", f"names a reservation but the TPU is {mode}",
             'set TPU_PROVISIONING="reservation" or remove TPU_RESERVATION')
    if reservation.startswith("projects/"):
        parts = reservation.split("/")  # projects/P/zones/Z/...: P may differ (shared reservations)
        if parts[3] != v["zone"]:
            fail("TPU_RESERVATION", f"is in zone {parts[3]} but ZONE is {v['zone']}",
                 "use a reservation in the TPU's zone")
    if reservation and arch == "vm":
        fail("TPU_RESERVATION", "a TPU VM cannot name a reservation with the pinned provider (google-beta 6.50: "
             "google_tpu_v2_vm.scheduling_config has only preemptible, spot and reserved)",
             'leave TPU_RESERVATION empty: TPU_PROVISIONING="reservation" then uses the project\'s matching TPU reservation')
    if v["queued"]:
        if arch == "node":
            fail("TPU_QUEUED", "queued resources create TPU VMs, not TPU Nodes",
                 'remove TPU_QUEUED, or migrate to TPU VM with `tpubuild migrate`')
        if mode == "preemptible":
            fail("TPU_QUEUED", "a queued resource is on-demand, spot or reservation, not preemptible",
                 'set TPU_PROVISIONING="spot" (or remove TPU_QUEUED)')
    elif v["queued_valid_for"]:
        fail("TPU_QUEUED_VALID_FOR", "is set but TPU_QUEUED is false, so nothing waits in a queue",
             'set TPU_QUEUED="true" or remove TPU_QUEUED_VALID_FOR')


def describe(provisioning: str, queued: bool, valid_for: str, reservation: str, max_run_hours: int = 0) -> str:
    """One line for the plan: which provisioning is used and what it means."""
    text = MEANING[provisioning].format(hours=max_run_hours or MAX_RUN_HOURS)
    if provisioning == "reservation":
        text += f" (reservation {reservation})" if reservation else " (any matching reservation of the project)"
    if queued:
        wait = f"for at most {valid_for}, then the request expires" if valid_for else "until capacity is free"
        text += f"; requested as a queued resource that may wait {wait}"
    return text
