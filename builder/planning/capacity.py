"""The capacity check: can the project have the slice, before anything billed is made?

Pure: what to read and what the value read means.

* The quota (:func:`need`): the quota IDs of the slice's generation, path and provisioning model,
  from its record in builder/data/tpu_offers.json (``quota``: the Cloud TPU API's, TPU_ARCH=vm;
  ``mig.quota``: Compute Engine's, TPU_ARCH=mig), and how many chips or TensorCores the slice
  takes, from its topology. :func:`refusal` turns the values read into one line naming the quota
  and what to do, or None.
* The reservation or request the slice consumes (:func:`held`, mig only): a named reservation
  (TPU_PROVISIONING=reservation, TPU_RESERVATION; empty: any matching one of the project in the
  zone, :func:`any_reservation`) or the calendar-mode request (TPU_PROVISIONING=calendar).
  :func:`reservation_refusal` and :func:`calendar_line` say what the resource read means.
  Consuming a reservation takes no further quota, so those modes read no quota.
* flex-start (mig) reads its quota only: nothing is reserved ahead (:data:`FLEX_START`).

``builder/cloud/quotas.py`` and ``builder/cloud/reservations.py`` read the values; ``tpubuild
check-capacity`` (the pipeline's first step) and ``tpubuild plan --check`` run both.
docs/pipeline.md, "The capacity check", says which APIs and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder.catalogue.module_parts import replacing
from builder.catalogue.modules import accelerator_module, spec
from builder.catalogue.status_rows import STANDING
from builder.config.offers import calendar_name
from builder.config.replace import MAKE_BEFORE_BREAK
from builder.facts.records import record, replace
from builder.inputs import tfvars

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

#: The paths whose TPU counts against a quota tpubuild can read: the Cloud TPU API's (vm) and
#: Compute Engine's (mig). node creates nothing any more.
CHECKED_ARCHES = ("vm", "mig")

#: What the check says of flex-start (mig): its quota is read, its capacity cannot be.
FLEX_START = ("flex-start reserves nothing ahead: the slice's resize request waits until Dynamic Workload "
              "Scheduler has every VM at once (tpubuild status shows it); only its quota is checked")

#: A calendar-mode request's ``procurementStatus`` that will never deliver the reservation.
CALENDAR_FAILED = frozenset({"DECLINED", "FAILED", "CANCELLED", "FAILED_PARTIALLY_FULFILLED"})


@record
class Need:
    """The quota ``quota_ids`` of ``service`` (the first with room is taken) must allow ``amount``
    ``counts`` in the slice's zone (``per="zone"``) or region (``per="region"``)."""

    service: str
    quota_ids: tuple[str, ...]
    amount: int
    counts: str
    project: str
    zone: str
    region: str
    accelerator_type: str
    provisioning: str
    per: str = "zone"
    #: (quota ID, its dimensions besides zone and region: ``(("tpu_family", "CT6E"),)``) where it has any
    dimensions: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    #: how Google sells the slice's type when not on demand to all (v2/v3 Pod types: evaluation quota
    #: or a commitment; generations.Generation.pod_terms), named by a refusal; "" otherwise
    terms: str = ""

    def dimensions_of(self, quota_id: str) -> tuple[tuple[str, str], ...]:
        return dict(self.dimensions).get(quota_id, ())

    @property
    def quota_id(self) -> str:
        return self.quota_ids[0]

    @property
    def where(self) -> str:
        return self.region if self.per == "region" else self.zone

    def name_of(self, quota_id: str) -> str:
        """``quota X (compute.googleapis.com, tpu_family=CT6E)``."""
        return f"quota {quota_id} ({', '.join([self.service, *self._dims(quota_id)])})"

    def _dims(self, quota_id: str) -> list[str]:
        return [f"{k}={v}" for k, v in self.dimensions_of(quota_id)]

    @property
    def named(self) -> str:
        """The quota (:meth:`name_of`), or ``quotas X or Y with tpu_family=CT6E (service; ...)``."""
        if len(self.quota_ids) == 1:
            return self.name_of(self.quota_id)
        ids = " or ".join(" with ".join([q, *self._dims(q)]) for q in self.quota_ids)
        return f"quotas {ids} ({self.service}; the first with room is used)"


def need(settings: Settings) -> Need | str:
    """What the slice of ``settings`` needs of which quota, or why tpubuild checks none (a line)."""
    s = settings
    topo = s.topology
    if s.arch not in CHECKED_ARCHES:
        return f"TPU_ARCH={s.arch}: no TPU is created on this path, so there is no quota to read"
    if s.provisioning == "reservation":
        return ("TPU_PROVISIONING=reservation on TPU_ARCH=vm takes any matching TPU reservation (scheduling_config."
                "reserved), which tpubuild does not read; a refusal shows at the TPU's apply" if s.arch == "vm" else
                "a reservation's capacity is reserved already: consuming it takes no quota")
    pod = topo.record.is_pod(topo.chips)
    terms = topo.record.pod_terms if pod else ""
    if s.arch == "vm":  # v2/v3 Pod types count against a quota of their own (pod_quota)
        quota = topo.record.pod_quota if pod and topo.record.pod_quota is not None else topo.record.quota
    else:
        quota = topo.record.mig.quota if topo.record.mig is not None else None
    ids = quota.ids.get(s.provisioning, ()) if quota is not None else ()
    if quota is None or not ids:
        return (f"no {s.provisioning} quota of {topo.generation} on TPU_ARCH={s.arch} is known to tpubuild "
                "(builder/data/tpu_offers.json); a refusal shows at the TPU's apply")
    amount = topo.chips if quota.counts == "chips" else topo.cores
    dimensions = tuple((q, quota.dimensions[q]) for q in ids if q in quota.dimensions)
    return Need(quota.service, ids, amount, quota.counts, s.project_id, s.zone, s.region, topo.accelerator_type,
                s.provisioning, quota.per, dimensions, terms)


def beside(settings: Settings, running: Settings | None) -> Need | str:
    """:func:`need` under make-before-break (TPU_REPLACE, builder/config/replace.py): while the new
    slice is created beside the running one (``running``: the applied values, None: unknown or
    none), the quota must hold both when both count against it. A change that keeps the slice
    (none of the variables that replace it differ) needs what :func:`need` says."""
    new = need(settings)
    if (isinstance(new, str) or running is None or settings.replace != MAKE_BEFORE_BREAK
            or running.arch != settings.arch):
        return new
    module = accelerator_module(settings.arch)
    forcing = replacing(spec(settings.arch, module), settings)
    before, after = tfvars.for_module(running, module), tfvars.for_module(settings, module)
    old = need(running)
    if (all(before.get(v) == after.get(v) for v in forcing) or isinstance(old, str)
            or old.quota_ids != new.quota_ids or old.where != new.where):
        return new
    return replace(new, amount=new.amount + old.amount,
                   accelerator_type=f"{new.accelerator_type} beside the running {old.accelerator_type} "
                                    "(make-before-break: both until the old one is deleted)")


def _request(n: Need) -> str:
    return f"https://console.cloud.google.com/iam-admin/quotas?project={n.project}"


def refusal(n: Need, value: int | None) -> str | None:
    """None when quota ``value`` (None: Cloud Quotas has no value for the zone or region) holds
    the slice, else the one line that fails the build."""
    if n.terms and not value:  # a v2/v3 Pod type with no quota: an increase is not simply requested
        held = "has no value" if value is None else f"allows 0 {n.counts}"
        return (f"{n.named} {held} in {n.where}: {n.accelerator_type} is a Pod type, which "
                f"Google offers only with {n.terms} (cloud.google.com/tpu/pricing); ask Google Cloud sales for "
                f"{n.amount} {n.counts} of it, or choose a single device ({n.accelerator_type.split('-')[0]}-8) "
                "or a newer generation")
    if value is None:
        return (f"{n.named} has no value for {n.where} in project {n.project}: {n.accelerator_type} "
                f"({n.provisioning}) cannot be created there; request {n.amount} {n.counts} at {_request(n)} "
                "or choose another zone")
    if value >= n.amount:
        return None
    return (f"{n.named} allows {value} {n.counts} in {n.where}, {n.accelerator_type} ({n.provisioning}) needs "
            f"{n.amount}: request an increase to {n.amount} at {_request(n)}, or choose a smaller slice")


def refusal_of_all(n: Need, values: dict[str, int | None]) -> str | None:
    """:func:`refusal` where the slice may take any of several quotas (``values``: quota ID → its
    value, None where it has none): None when one holds it, else one line naming them all."""
    if len(values) == 1:
        return refusal(n, next(iter(values.values())))
    if any(v is not None and v >= n.amount for v in values.values()):
        return None
    held = ", ".join(f"{q}: {'no value' if v is None else v}" for q, v in values.items())
    return (f"{n.named} allow too few {n.counts} in {n.where} ({held}), {n.accelerator_type} ({n.provisioning}) "
            f"needs {n.amount}: request an increase to {n.amount} of one of them at {_request(n)}, or choose "
            "a smaller slice")


def passed(n: Need, value: int, quota_id: str | None = None) -> str:
    """The line a passing check prints (``quota_id``: the one of several that holds the slice)."""
    named = n.named if quota_id is None else n.name_of(quota_id)
    return (f"{named} allows {value} {n.counts} in {n.where}; {n.accelerator_type} "
            f"({n.provisioning}) needs {n.amount}")


@record
class Held:
    """A reservation (``kind="reservation"``; ``"any"``: any matching one of the project in the
    zone, TPU_RESERVATION empty) or calendar-mode request (``kind="calendar"``) the slice
    consumes, and what the slice takes of it."""

    kind: str
    project: str
    zone: str
    name: str
    machine_type: str  # of the slice's VMs
    vms: int
    chips: int
    vm_family: str  # an aggregate (TPU) reservation's vmFamily for the generation; "" when unknown
    accelerator_type: str

    @property
    def what(self) -> str:
        if self.kind == "any":
            return f"no reservation of project {self.project} in {self.zone}"
        return f"reservation {self.name}" if self.kind == "reservation" else f"calendar-mode request {self.name}"


def held(settings: Settings) -> Held | None:
    """What the mig slice of ``settings`` consumes that the check reads, or None (no reservation)."""
    s = settings
    if s.arch != "mig" or s.provisioning not in ("reservation", "calendar"):
        return None
    project, zone, name = s.project_id, s.zone, calendar_name(s.tpu_name)
    kind = s.provisioning if s.provisioning == "calendar" or s.reservation else "any"
    if kind == "any":
        name = ""
    elif s.provisioning == "reservation":
        name = s.reservation
        if name.startswith("projects/"):  # projects/P/zones/Z/reservations/NAME (a shared reservation)
            parts = name.split("/")
            project, zone, name = parts[1], parts[3], parts[-1]
    topo, shape = s.topology, s.mig_shape
    calendar = topo.record.calendar
    return Held(kind, project, zone, name, shape.machine_type, shape.vms, topo.chips,
                calendar.vm_family if calendar is not None else "", topo.accelerator_type)


def reads(settings: Settings) -> str:
    """What the check reads, in the words of the rendered step's comment."""
    h = held(settings)
    if h is None:
        return "the TPU quota"
    return "the calendar-mode request the slice consumes" if h.kind == "calendar" else "the reservation the slice consumes"


def _count(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _accelerators(resources: Any) -> int:
    """Chips in an aggregate reservation's ``reservedResources`` or ``inUseResources``."""
    return sum(_count((r.get("accelerator") or {}).get("acceleratorCount")) for r in resources or []
               if isinstance(r, dict))


def reservation_refusal(h: Held, body: dict[str, Any] | None) -> str | None:
    """None when reservation ``body`` (Compute Engine's Reservation; None: it does not exist) can
    hold the slice, else the one line that fails the build."""
    fix = "fix TPU_RESERVATION, or choose another TPU_PROVISIONING"
    if body is None:
        return f"{h.what} does not exist in {h.zone} of project {h.project}: create it, {fix}"
    status = body.get("status", "UNKNOWN")
    if status != "READY":
        return f"{h.what} is {status}, not READY: wait until it is, {fix}"
    specific, aggregate = body.get("specificReservation"), body.get("aggregateReservation")
    if isinstance(specific, dict):
        machine = str((specific.get("instanceProperties") or {}).get("machineType", "")).rsplit("/", 1)[-1]
        if machine != h.machine_type:
            return (f"{h.what} reserves {machine or 'no'} VMs, {h.accelerator_type} runs on {h.machine_type}: "
                    f"use a reservation of {h.machine_type}, {fix}")
        return _short(h, _count(specific.get("count")), _count(specific.get("inUseCount")), f"{machine} VMs",
                      h.vms, fix)
    if isinstance(aggregate, dict):
        family = aggregate.get("vmFamily", "")
        if h.vm_family and family != h.vm_family:
            return (f"{h.what} reserves {family or 'no VM family'}, {h.accelerator_type} needs {h.vm_family}: "
                    f"use a reservation of that family, {fix}")
        return _short(h, _accelerators(aggregate.get("reservedResources")),
                      _accelerators(aggregate.get("inUseResources")), "TPU chips", h.chips, fix)
    return f"{h.what} reserves neither VMs nor TPU chips the slice can use: {fix}"


def _short(h: Held, total: int, used: int, what: str, needs: int, fix: str) -> str | None:
    """None when ``total - used`` free ``what`` hold the slice's ``needs``, else the line that says not."""
    if total - used >= needs:
        return None
    return (f"{h.what} has {total - used} of {total} {what} free, {h.accelerator_type} needs {needs}: "
            f"free or enlarge it, {fix}")


def reservation_passed(h: Held, body: dict[str, Any]) -> str:
    """The line a reservation that holds the slice prints."""
    specific = body.get("specificReservation")
    if isinstance(specific, dict):
        count = _count(specific.get("count"))
        free, unit, needs = count - _count(specific.get("inUseCount")), f"{h.machine_type} VMs", h.vms
    else:
        aggregate = body.get("aggregateReservation") or {}
        count = _accelerators(aggregate.get("reservedResources"))
        free, unit, needs = count - _accelerators(aggregate.get("inUseResources")), "TPU chips", h.chips
    return f"{h.what} is READY with {free} of {count} {unit} free; {h.accelerator_type} needs {needs}"


def any_reservation(h: Held, items: list[dict[str, Any]]) -> tuple[bool, str]:
    """(holds, the line) for ANY_RESERVATION: the project's reservations in the zone (``items``, as
    Compute Engine lists them). One that is READY, open to any VM (not specificReservationRequired)
    and can hold the slice alone passes. None is not a refusal: a reservation shared from another
    project is not listed here and may hold it."""
    open_ = [r for r in items if isinstance(r, dict) and not r.get("specificReservationRequired")]
    for r in open_:
        one = _named(h, r)
        if reservation_refusal(one, r) is None:
            return True, f"{reservation_passed(one, r)} (any matching reservation is consumed)"
    found = "; ".join(_refused_why(h, r) for r in open_[:3]) or "it has none open to any VM"
    return False, (f"{h.what} can hold {h.accelerator_type} ({found}); unless a reservation shared from another "
                   "project does, the slice's VMs will not be created: name one in TPU_RESERVATION to have it checked")


def _named(h: Held, r: dict[str, Any]) -> Held:
    """``h`` as the named reservation ``r``."""
    return replace(h, kind="reservation", name=str(r.get("name", "?")))


def _refused_why(h: Held, r: dict[str, Any]) -> str:
    """Why reservation ``r`` cannot hold the slice, short: its line up to what to do."""
    return (reservation_refusal(_named(h, r), r) or "").split(":", 1)[0]


def calendar_line(h: Held, body: dict[str, Any] | None) -> tuple[bool, str]:
    """(refused, the line) for the calendar-mode request ``body`` (Compute Engine's
    FutureReservation; None: not submitted yet)."""
    if body is None:
        return False, (f"{h.what} is not submitted yet: this build submits it for {h.chips} chips, and Google "
                       "approves or declines it later (tpubuild status shows where it stands)")
    state = str((body.get("status") or {}).get("procurementStatus", "UNKNOWN"))
    words = STANDING.get(state, state.lower())
    if state in CALENDAR_FAILED:
        return True, (f"{h.what} is {state} ({words}): it will not deliver the reservation {h.accelerator_type} "
                      "needs, and a submitted request cannot be changed; choose another TPU_CALENDAR_START or zone "
                      "under another ENV_BUILD_NAME, or another TPU_PROVISIONING")
    return False, f"{h.what} is {state} ({words}); {h.accelerator_type} consumes the reservation it delivers"

