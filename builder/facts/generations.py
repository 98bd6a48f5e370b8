"""A Cloud TPU generation as one record: every fact tpubuild knows about v2 ... TPU7x.

The facts, with their sources and the date they were checked, are the rows of
``builder/data/tpu_offers.json`` (one object per generation; its ``_fields`` says what each field
means). This module turns each row into a frozen :class:`Generation` (in the manner of Google's
xpk ``system_characteristics.py``) and answers the questions the other stages ask:

* ``builder.facts.topology``: naming and counting (``prefix``, ``name_counts``, ``cores_per_chip``),
  the sizes offered, hosts, and the MIG form of a slice (``mig``);
* ``builder.config.offers`` / ``validate``: runtimes, zones, provisioning, the paths (node, vm,
  mig) and the disks a host can attach;
* ``builder.catalogue.cost``: the price key (the generation's name, whatever alias a table used);
* the model launchers: ``xla_devices_per_chip`` (through ``Job.from_settings``, as the launchers
  are standard library only);
* ``builder.planning.describe`` / ``validate`` / ``builder.config.migrate``: the API behind each path, what
  Google says of it (the file's ``apis``: Compute Engine recommended, the Cloud TPU API
  maintenance-only) and the path chosen for a generation (``preferred_path``);
* ``env_setup/scripts/startup.sh`` and ``modules/*/variables.tf`` cannot import Python; their
  lists are checked against these records by tests/unit/test_generations.py.

Adding a generation is adding its row to the JSON file: nothing else names a generation.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from builder.facts.records import field, record

DATA = Path(__file__).resolve().parents[1] / "data" / "tpu_offers.json"

#: The ways tpubuild creates a slice (TPU_ARCH values).
PATHS = ("node", "vm", "mig")


@record
class MigFacts:
    """A generation offered as Compute Engine TPU VMs in a managed instance group (TPU_ARCH="mig")."""

    machine_type: str  # of a multi-host slice's VMs
    chips_per_vm: int
    single_host_machine_types: dict[int, str]  # chips → machine type of a one-VM slice of that many chips
    image_project: str
    image_family: str
    boot_disk_type: str
    shapes: dict[int, str]  # size (the N of <prefix>-N) → chip grid, the workload policy's accelerator_topology
    quota: Quota | None = None  # the Compute Engine quota its VMs use; None: none tpubuild checks

    def machine_types(self) -> tuple[str, ...]:
        return (self.machine_type, *(m for m in self.single_host_machine_types.values() if m != self.machine_type))


@record
class Quota:
    """A quota a generation's slices use on one path, as Cloud Quotas names it: the Cloud TPU API's
    (the record's ``quota``, TPU_ARCH=vm) or Compute Engine's (``mig.quota``, TPU_ARCH=mig)."""

    service: str  # tpu.googleapis.com, compute.googleapis.com
    counts: str  # "chips" or "TensorCores"
    #: provisioning model → its quota IDs; more than one: Compute Engine takes the first that has
    #: room (flex-start: the preemptible quota, else the standard one); no entry: none checked
    ids: dict[str, tuple[str, ...]]
    per: str = "zone"  # the quota's scope: "zone" (Cloud TPU API) or "region" (Compute Engine)
    #: quota ID → the dimensions besides zone and region that name the generation in a quota
    #: shared by families (Compute Engine's TPUS-PER-TPU-FAMILY: ``(("tpu_family", "CT6E"),)``)
    dimensions: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)


@record
class CalendarFacts:
    """Calendar-mode future reservations of a generation (TPU_PROVISIONING="calendar", mig path)."""

    tpu_version: str  # gcloud future-reservations create --tpu-version (V6E, TPU7X)
    vm_family: str  # the API's aggregate_reservation.vm_family
    terraform: bool  # google-beta's google_compute_future_reservation accepts vm_family; else a gcloud step
    zones: tuple[str, ...]  # zones Google lists for calendar mode


@record
class Generation:
    """One TPU generation (a row of builder/data/tpu_offers.json)."""

    name: str  # v5e: the generation, the key of prices and of the launchers' pins
    prefix: str  # v5litepod: how accelerator types are named (v5litepod-16)
    aliases: tuple[str, ...]  # other names users write for it (v5e-16 → v5litepod-16)
    name_counts: str  # "TensorCores" or "chips": what the N of <prefix>-N counts
    cores_per_chip: int
    chips_per_host: int  # of a multi-host slice
    single_host_max_chips: int
    sizes: tuple[int, ...]
    paths: tuple[str, ...]  # node, vm, mig
    xla_devices_per_chip: int | None  # None: no proven PyTorch/XLA device count
    shared_pd_types: tuple[str, ...]  # SHARED_PD_DISK_TYPE values its hosts attach read-only; the first is the default
    runtimes: tuple[str, ...]  # TPU VM runtimes (vm path)
    provisioning: tuple[str, ...]
    path_provisioning: dict[str, tuple[str, ...]]  # path → its own TPU_PROVISIONING list (mig: flex-start)
    zones: dict[str, tuple[str, ...]]  # accelerator type or "*" → zones
    mig: MigFacts | None
    quota: Quota | None = None  # None: no quota tpubuild checks (builder/planning/capacity.py)
    calendar: CalendarFacts | None = None
    #: v2, v3: the quota of their Pod types (more than one host), apart from the single devices'
    pod_quota: Quota | None = None
    #: how Google sells its Pod types when not on demand to all (v2, v3); "" otherwise
    pod_terms: str = ""

    def is_pod(self, chips: int) -> bool:
        """Whether a slice of ``chips`` is one of the generation's Pod types (more than one host)."""
        return self.hosts_of(chips) > 1

    def types(self) -> list[str]:
        """Every accelerator type of this generation, smallest first."""
        return [f"{self.prefix}-{size}" for size in self.sizes]

    def chips_of(self, size: int) -> int:
        return size // self.cores_per_chip if self.name_counts == "TensorCores" else size

    def hosts_of(self, chips: int) -> int:
        return 1 if chips <= self.single_host_max_chips else chips // self.chips_per_host

    def provisioning_on(self, path: str) -> tuple[str, ...]:
        """The TPU_PROVISIONING values offered on ``path``."""
        return self.path_provisioning.get(path, self.provisioning)

    def offers(self, path: str) -> bool:
        return path in self.paths


#: How messages name the disk types of ``shared_pd_types``.
DISK_WORDS = {"pd-balanced": "Balanced Persistent Disk", "hyperdisk-ml": "Hyperdisk ML"}


def disk_words(types: tuple[str, ...]) -> str:
    """``("pd-balanced",)`` → "Balanced Persistent Disk"."""
    return " or ".join(DISK_WORDS.get(t, t) for t in types)


def _record(name: str, row: dict[str, Any]) -> Generation:
    mig, cal = row["mig"], row.get("calendar")
    return Generation(
        name=name, prefix=row["prefix"], aliases=tuple(row["aliases"]), name_counts=row["name_counts"],
        cores_per_chip=row["cores_per_chip"], chips_per_host=row["chips_per_host"],
        single_host_max_chips=row["single_host_max_chips"], sizes=tuple(row["sizes"]), paths=tuple(row["paths"]),
        xla_devices_per_chip=row["xla_devices_per_chip"], shared_pd_types=tuple(row["shared_pd_types"]),
        runtimes=tuple(row["runtimes"]), provisioning=tuple(row["provisioning"]),
        path_provisioning={k: tuple(v) for k, v in row.get("path_provisioning", {}).items()},
        zones={k: tuple(v) for k, v in row["zones"].items()},
        mig=None if mig is None else MigFacts(
            machine_type=mig["machine_type"], chips_per_vm=mig["chips_per_vm"],
            single_host_machine_types={int(k): v for k, v in mig["single_host_machine_types"].items()},
            image_project=mig["image_project"], image_family=mig["image_family"],
            boot_disk_type=mig["boot_disk_type"], shapes={int(k): v for k, v in mig["shapes"].items()},
            quota=_quota(mig.get("quota"))),
        quota=_quota(row.get("quota")), pod_quota=_quota(row.get("pod_quota")), pod_terms=row.get("pod_terms", ""),
        calendar=None if cal is None else CalendarFacts(
            tpu_version=cal["tpu_version"], vm_family=cal["vm_family"], terraform=cal["terraform"],
            zones=tuple(cal["zones"])),
    )


_QUOTA_FIELDS = ("service", "counts", "per", "dimensions")


def _quota(row: dict[str, Any] | None) -> Quota | None:
    if row is None:
        return None
    ids = {k: (v,) if isinstance(v, str) else tuple(v) for k, v in row.items() if k not in _QUOTA_FIELDS}
    dimensions = {q: tuple(sorted(d.items())) for q, d in (row.get("dimensions") or {}).items()}
    return Quota(row["service"], row["counts"], ids, row.get("per", "zone"), dimensions)


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The data file as read (its sources, ``_checked`` date and notes included)."""
    return json.loads(DATA.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def records() -> tuple[Generation, ...]:
    """Every generation, in release order (the file's order)."""
    return tuple(_record(name, row) for name, row in table()["generations"].items())


def get(name: str) -> Generation | None:
    """The generation called ``name``: its name (v5e), its type prefix (v5litepod) or an alias
    (trillium), in any case; None when no record knows it."""
    word = name.strip().lower()
    for g in records():
        if word in (g.name, g.prefix, *g.aliases):
            return g
    return None


def by_prefix(prefix: str) -> Generation | None:
    """The generation whose accelerator types are named ``<prefix>-N`` (exactly, not an alias)."""
    return next((g for g in records() if g.prefix == prefix), None)


def on_path(path: str) -> tuple[Generation, ...]:
    """The generations tpubuild can create with TPU_ARCH=``path``."""
    return tuple(g for g in records() if g.offers(path))


@record
class Api:
    """The API behind a path (TPU_ARCH) and what Google says of it (the data file's ``apis``)."""

    path: str  # mig, vm, node
    api: str  # "Compute Engine", "Cloud TPU API", ...
    status: str  # recommended, maintenance-only, retired
    in_short: str
    google_says: str
    source: str  # the page that says it
    checked: str

    @property
    def label(self) -> str:
        """``Compute Engine (TPU_ARCH=mig)``."""
        return f"{self.api} (TPU_ARCH={self.path})"


def api(path: str) -> Api:
    """The API behind TPU_ARCH=``path``."""
    row = table()["apis"][path]
    return Api(path, row["api"], row["status"], row["in_short"], row["google_says"], row["source"], row["checked"])


def preferred_path(gen: Generation) -> str:
    """The path ``tpubuild migrate`` and the examples choose for ``gen``: the first of the data
    file's ``apis.preference`` (Compute Engine before the Cloud TPU API) that the generation offers."""
    return next(p for p in table()["apis"]["preference"] if gen.offers(p))


def path_story(path: str, generation: str) -> tuple[str, str | None]:
    """What ``plan`` and ``validate`` say about a file's path: one line naming the API, what Google
    says of it and the alternative, and a warning where Google does not recommend that API (None
    where it does).

    ``("Cloud TPU API (TPU_ARCH=vm): maintenance-only at Google (bug and security fixes only);
    Compute Engine (TPU_ARCH=mig) is Google's recommended path for v6e", "...")``."""
    here, gen = api(path), get(generation)
    if here.status == "recommended":
        return f"{here.label}: {here.in_short} for {', '.join(g.name for g in on_path(path))}", None
    best = api(preferred_path(gen)) if gen is not None else here
    if best.path != path:
        alternative = (f"{best.label} is {best.in_short} for {generation}" if best.status == "recommended"
                       else f"{best.label} is the path for {generation} now (tpubuild migrate rewrites the file)")
    else:
        offered = [a for a in (api(p) for p in table()["apis"]["preference"]) if a.status == "recommended"]
        alternative = f"the only path for {generation}; " + "; ".join(
            f"{a.label} is {a.in_short} for {', '.join(g.name for g in on_path(a.path))}" for a in offered)
    line = f"{here.label}: {here.status} at Google ({here.in_short}); {alternative}"
    return line, f"{here.label} is {here.status} at Google: {here.google_says} ({here.source}); {alternative}"
