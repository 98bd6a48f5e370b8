"""What an environment costs per hour, from the freshest price table (builder/catalogue/price_source.py:
the Billing Catalog cache of ``tpubuild prices update``, else the bundled ``builder/data/prices.json``).

``estimate(settings, modules)`` prices each plan module by the items its catalogue entry lists in
``prices`` (the TPU per chip-hour by generation, region and provisioning model, :func:`tpu_price`; the
node's worker VMs; Filestore per GiB-month; the shared PD per GB-month, divided by ``hours_per_month``). A price
the table lacks is *unknown* (the item says why, the total reads ``+ unknown``; never $0); another
region's figure is marked ``~``; a TPU figure matched from a SKU, or listed in ``verification.confirmed``,
is confirmed, any other is ``(unconfirmed)``. ``provisioning(settings)`` reads ``TPU_PROVISIONING``,
else the TPU_SPOT / TPU_PREEMPTIBLE / TPU_RESERVED flags. Reads files only (price_source.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from builder.catalogue import modules as catalogue
from builder.catalogue import price_source
from builder.facts import generations
from builder.facts.records import asdict, record

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

PRICES = price_source.BUNDLED


def table() -> dict[str, Any]:
    """The freshest price table: the catalogue cache, else the bundled snapshot (price_source.py)."""
    return price_source.table()


@record
class Item:
    module: str
    what: str
    hourly: float | None  # None: unknown
    approximate: bool = False
    unknown_why: str = ""
    confirmed: bool = False  # every price it uses was found in Google's own page text (prices.json "verification")
    source: str = ""  # the prices.json ``sources`` page it is priced from
    bound: str = ""  # "": the list price; "at most"/"at least": a ceiling/floor stands in (BOUNDS); "stand-in": neither
    bound_why: str = ""  # which figure stands in for which, and why (prices.json verification.stand_ins)
    basis: str = ""  # the SKU it is priced from ("SKU id description, effective date"), or the table row
    note: str = ""  # said after the figure: a spot price is the day's; no published price and what stands in

    def text(self) -> str:
        if self.hourly is None:
            return f"{self.what}: price unknown ({self.unknown_why})"
        return (f"{self.what}: {bound_prefix(self.bound)}{money(self.hourly, self.approximate)}/h"
                f"{'' if self.confirmed else ' (unconfirmed)'}{f' ({self.note})' if self.note else ''}")


#: How a figure that stands in for an unpublished price errs: the real price is at most / at
#: least it; "stand-in": figures that err both ways are summed, so the total is neither.
BOUNDS = ("at most", "at least", "stand-in")


def bound_prefix(bound: str) -> str:
    return {"": "", "stand-in": "about "}.get(bound, f"{bound} ")


def combine(bounds: Any) -> str:
    """One direction for a sum of figures: theirs when they agree, "stand-in" when they differ."""
    found = {b for b in bounds if b}
    return "" if not found else found.pop() if len(found) == 1 else "stand-in"


@record
class Estimate:
    items: tuple[Item, ...]

    @property
    def known(self) -> float:
        return sum(i.hourly for i in self.items if i.hourly is not None)

    @property
    def unknown(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.hourly is None)

    @property
    def approximate(self) -> bool:
        return any(i.approximate for i in self.items)

    @property
    def unconfirmed(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.hourly is not None and not i.confirmed)

    @property
    def bound(self) -> str:
        """"" (list prices), or how the total errs where a figure stands in (:data:`BOUNDS`)."""
        return combine(i.bound for i in self.items if i.hourly is not None)

    def bounds(self) -> list[str]:
        """Each stand-in's reason, once: ``<bound>: <what>: <why>``."""
        return list(dict.fromkeys(f"{i.bound}: {i.bound_why}" for i in self.items if i.bound and i.hourly is not None))

    def total_text(self) -> str:
        if not self.items:
            return "$0.00/h (nothing billed by the hour)"
        if self.unknown and not any(i.hourly is not None for i in self.items):
            return "unknown"
        tail = " + unknown" if self.unknown else ""
        return f"{bound_prefix(self.bound)}{money(self.known, self.approximate)}/h{tail}"

    def as_dict(self) -> dict[str, Any]:
        return {"items": [asdict(i) for i in self.items], "hourly_known": round(self.known, 4),
                "complete": not self.unknown, "approximate": self.approximate, "total": self.total_text(),
                "bound": self.bound or None, "bounds": self.bounds(),
                "unconfirmed": [i.module for i in self.unconfirmed]}


def money(value: float, approximate: bool = False) -> str:
    return f"{'~' if approximate else ''}${value:,.2f}"


def rate(value: float, approximate: bool = False) -> str:
    """A unit price with the digits it has (``$0.3825``, ``$2.00``): chips × rate must read right."""
    digits = f"{value:,.5f}".rstrip("0")
    return f"{'~' if approximate else ''}${digits if len(digits.split('.')[1]) > 2 else f'{value:,.2f}'}"


def provisioning(settings: Settings) -> str:
    """The TPU's provisioning model: on-demand, spot, preemptible, reservation, queued, ..."""
    declared = str(getattr(settings, "provisioning", "") or "").strip().lower()
    if declared:
        return declared
    if settings.tpu_spot:
        return "spot"
    if settings.tpu_preemptible:
        return "preemptible"
    if settings.tpu_reserved:
        return "reservation"
    return "on-demand"


def generation_key(generation: str) -> str:
    """The ``tpu_chip_hour`` key of a generation: its record's name, whatever name or alias
    (v5litepod, trillium, ironwood) the caller used (builder/facts/generations.py)."""
    g = generations.get(generation)
    return g.name if g is not None else generation.strip().lower()


def _regional_key(prices: dict[str, Any], region: str, default_region: str) -> tuple[float | None, bool, str]:
    """(price, approximate, the region key it came from: the region, or the default region)."""
    if region in prices and prices[region] is not None:
        return float(prices[region]), False, region
    value = prices.get("default")
    if value is None:
        return None, False, ""
    return float(value), region != default_region, default_region


def confirmed(path: str) -> bool:
    """Whether the price at ``path`` (``filestore_gib_month.BASIC_HDD.us-west1``) was found in
    Google's own page text (prices.json ``verification.confirmed``)."""
    return path in table().get("verification", {}).get("confirmed", {})


@record
class TpuPrice:
    """One TPU chip-hour figure and where it comes from (:func:`tpu_price`)."""

    value: float | None  # USD per chip-hour; None: unknown
    approximate: bool  # another region's price (``~``)
    unknown_why: str
    bound: str  # "" (a list price) or "at most" (a ceiling stands in: BOUNDS)
    bound_why: str
    path: str  # the table's path of the figure used (``tpu_chip_hour.v6e.flex-start.us-east5``)
    basis: str  # "SKU <id> <description>, effective <date>", or "the bundled snapshot's row"
    note: str  # no published price, and what stands in; a spot price is the day's


def _unknown(why: str) -> TpuPrice:
    return TpuPrice(None, False, why, "", "", "", "", "")


def sku_basis(data: dict[str, Any], path: str) -> str:
    found = data.get("skus", {}).get(path)
    if not found:
        return f"the bundled snapshot's {path} (no catalogue SKU: hand-kept, checked {data.get('verification', {}).get('checked', 'never')})"
    return f"SKU {found['sku']} \"{found['description']}\", effective {found['effective']}"


def _mode_rows(gen: dict[str, Any], rate: str, pod: bool) -> tuple[dict[str, Any] | None, str, str]:
    rows = gen["pod"] if pod and rate in gen.get("pod", {}) else gen
    return rows.get(rate), rows.get("default_region", gen["default_region"]), "pod." if rows is not gen else ""


def tpu_price(generation: str, region: str, model: str, *, pod: bool = False) -> TpuPrice:
    """The chip-hour price of ``generation`` in ``region`` under provisioning ``model``: the mode's own
    record (a Billing Catalog SKU, or the bundled snapshot's hand-kept row), else the default region's
    (``~``), else, for a mode Google bills below on-demand (spot, flex-start, calendar), the on-demand
    rate as a ceiling ("at most", said as "no published price"). Nothing else stands in: no floor."""
    data = table()
    key = generation_key(generation)
    gen = data["tpu_chip_hour"].get(key)
    source = data["sources"]["tpu"]
    if gen is None:
        return _unknown(f"no {generation} prices in tpubuild's table; see {source}")
    rate = data["tpu_provisioning"].get(model)
    if not isinstance(rate, str):
        return _unknown(f"provisioning model {model!r} has no price rule; see {source}")
    rows, default_region, pod_path = _mode_rows(gen, rate, pod)
    value, approx, at = _regional_key(rows or {}, region, default_region)
    bound, why = (data["tpu_provisioning"].get("bounds", {}).get(model) or {"bound": "", "why": ""}).values()
    note = ""
    if value is None and rate in CEILED:
        rows, default_region, pod_path = _mode_rows(gen, "on-demand", pod)
        value, approx, at = _regional_key(rows or {}, region, default_region)
        bound, rate = "at most", "on-demand"
        why = (f"no published {key} {model} price in {region}: the Billing Catalog has no SKU for it; "
               f"priced at the on-demand rate, a ceiling (Google bills {model} below on-demand)")
    elif approx:
        note = f"no published {key} {rate} price in {region}: {at}'s (~)"
    if value is None:
        return _unknown(f"no published {key} {rate} price in {region} (no Billing Catalog SKU); see {source}")
    path = f"tpu_chip_hour.{key}.{pod_path}{rate}.{at}"
    if rate == "spot":
        note = "; ".join(filter(None, [note, f"spot: the day's price, read {data['retrieved']}; Google may change it daily"]))
    if model == "reservation":
        why = "; ".join([why] + _commitments(gen, region))
    return TpuPrice(value, approx, "", bound, why, path, sku_basis(data, path), note)


#: The modes whose missing price the on-demand rate bounds from above (Google bills them below it).
CEILED = ("spot", "flex-start", "calendar")


def _commitments(gen: dict[str, Any], region: str) -> list[str]:
    """What a commitment bills here, where the catalogue lists it (the reservation's rate is one of them)."""
    out = []
    for term in ("committed-1y", "committed-3y"):
        value = (gen.get(term) or {}).get(region)
        if value is not None:
            out.append(f"{term[-2:]} commitment {rate(float(value))}/chip-h in {region}")
    return out


def tpu_chip_hour(generation: str, region: str, model: str, *, pod: bool = False) -> tuple[float | None, bool, str]:
    """(price per chip-hour or None, approximate, why unknown): :func:`tpu_price`'s figure."""
    found = tpu_price(generation, region, model, pod=pod)
    return found.value, found.approximate, found.unknown_why


def tpu_bound(generation: str, model: str, region: str = "") -> tuple[str, str]:
    """(how the chip price errs, why): "at most" where a ceiling stands in (a reservation's on-demand rate,
    or on-demand where the mode has no SKU in ``region``); ("", "") for a list price."""
    data = table()
    gen = data["tpu_chip_hour"].get(generation_key(generation)) or {}
    found = tpu_price(generation, region or gen.get("default_region", ""), model)
    return (found.bound, found.bound_why) if found.value is not None else ("", "")


def _machine_hour(machine_type: str, region: str) -> tuple[float | None, bool, str]:
    data = table()
    m = re.fullmatch(r"([a-z0-9]+)-(standard|highmem|highcpu)-(\d+)", machine_type)
    per_gb = {"standard": {"n1": 3.75}, "highmem": {"n1": 6.5}, "highcpu": {"n1": 0.9}}
    if not m or m.group(1) not in data["compute_hour"]:
        return None, False, f"no price for machine type {machine_type}; see {data['sources']['compute']}"
    family, shape, vcpus = m.group(1), m.group(2), int(m.group(3))
    gb = vcpus * per_gb[shape].get(family, {"standard": 4.0, "highmem": 8.0, "highcpu": 1.0}[shape])
    fam = data["compute_hour"][family]
    (vcpu, a1, _k), (mem, a2, _k) = (_regional_key(fam[f], region, fam["default_region"]) for f in ("vcpu", "gb"))
    if vcpu is None or mem is None:
        return None, False, f"no price for {machine_type} in {region}"
    return vcpus * vcpu + gb * mem, a1 or a2, ""


def per_month(kind: str, name: str, region: str) -> tuple[float | None, bool]:
    """(price per unit-month, approximate) of the table's per-month row ``kind.name`` in ``region``
    (the default region's, approximate, where it lists none); None: no such row or price."""
    row = table()[kind].get(name)
    if row is None:
        return None, False
    return _regional_key(row["price"], region, row["default_region"])[:2]


def _monthly(kind: str, name: str, region: str) -> tuple[float | None, bool, str]:
    """(price per unit-hour, approximate, why unknown) of a per-month row (divided by ``hours_per_month``)."""
    data = table()
    source = data["sources"]["filestore" if kind.startswith("filestore") else "disk"]
    if name not in data[kind]:
        return None, False, f"no price for {name}; see {source}"
    value, approx = per_month(kind, name, region)
    if value is None:
        return None, False, f"no price for {name} in {region}; see {source}"
    return value / data["hours_per_month"], approx, ""


def row_path(kind: str, name: str, field: str, region: str) -> str:
    """The path of the figure ``estimate`` takes from ``data[kind][name][field]`` for ``region`` (the
    region's own, else the default region's): ``disk_gb_month.pd-balanced.price.us-central1``; "" for none."""
    row = table()[kind].get(name) or {}
    _value, _approx, key = _regional_key(row.get(field) or {}, region, row.get("default_region", ""))
    return f"{kind}.{name}.{field}.{key}" if key else ""


def _confirmed_at(kind: str, name: str, field: str, region: str) -> bool:
    """Whether that figure is a confirmed one: matched from a Billing Catalog SKU, or listed in
    ``verification.confirmed``."""
    path = row_path(kind, name, field, region)
    return bool(path) and (path in table().get("skus", {}) or confirmed(path))


def _tpu(s: Settings) -> TpuPrice:
    return tpu_price(s.topology.generation, s.region, provisioning(s), pod=s.hosts > 1)


def _tpu_item(s: Settings) -> tuple[str, float | None, bool, str, bool]:
    t, model, found = s.topology, provisioning(s), _tpu(s)
    price, approx = found.value, found.approximate
    what = f"TPU {s.accelerator_type} ({t.chips} chips, {model}, {s.region})"
    if price is not None:
        what = f"TPU {s.accelerator_type} ({t.chips} chips × {rate(price, approx)}/chip-h {model}, {s.region})"
    ok = bool(found.path) and (found.path in table().get("skus", {}) or confirmed(found.path))
    return what, None if price is None else price * t.chips, approx, found.unknown_why, ok


def _tpu_bound(s: Settings) -> tuple[str, str]:
    found = _tpu(s)
    return found.bound, f"TPU {s.accelerator_type}: {found.bound_why}" if found.bound else ""


def _worker_vms_item(s: Settings) -> tuple[str, float | None, bool, str, bool]:
    price, approx, why = _machine_hour(s.machine_type, s.region)
    family = s.machine_type.split("-", 1)[0]
    ok = all(_confirmed_at("compute_hour", family, f, s.region) for f in ("vcpu", "gb"))
    return f"{s.hosts} worker VMs {s.machine_type}", None if price is None else price * s.hosts, approx, why, ok


def _filestore_item(s: Settings) -> tuple[str, float | None, bool, str, bool]:
    price, approx, why = _monthly("filestore_gib_month", s.shared_fs_tier, s.region)
    ok = _confirmed_at("filestore_gib_month", s.shared_fs_tier, "price", s.region)
    return (f"Filestore {s.shared_fs_tier} {s.shared_fs_capacity_gb} GiB",
            None if price is None else price * s.shared_fs_capacity_gb, approx, why, ok)


def _disk_item(s: Settings) -> tuple[str, float | None, bool, str, bool]:
    # the disk exists (and is billed) whether or not hosts attach it
    price, approx, why = _monthly("disk_gb_month", s.shared_pd_type, s.region)
    ok = _confirmed_at("disk_gb_month", s.shared_pd_type, "price", s.region)
    what = f"shared PD {s.shared_pd_type} {s.shared_pd_size_gb} GB{'' if s.shared_pd_attach else ' (not attached)'}"
    return what, None if price is None else price * s.shared_pd_size_gb, approx, why, ok


def _disk_bound(s: Settings) -> tuple[str, str]:
    row = table()["disk_gb_month"].get(s.shared_pd_type) or {}
    return row.get("bound", ""), f"shared PD {s.shared_pd_type}: {row['why']}" if row.get("bound") else ""


#: Each price item a catalogue entry may list in ``prices`` (builder/catalogue/modules.py): how it is
#: priced, and which page of ``prices.json`` ``sources`` it is checked against.
PRICE_ITEMS: dict[str, tuple[Callable[[Settings], tuple[str, float | None, bool, str, bool]], str]] = {
    "tpu": (_tpu_item, "tpu"),
    "worker_vms": (_worker_vms_item, "compute"),
    "filestore": (_filestore_item, "filestore"),
    "disk": (_disk_item, "disk"),
}
#: The price items whose figure may stand in for one Google does not publish: (bound, why).
BOUND_OF: dict[str, Callable[[Settings], tuple[str, str]]] = {"tpu": _tpu_bound, "disk": _disk_bound}
#: The price items that say where their figure comes from: (basis, note).
BASIS_OF: dict[str, Callable[[Settings], tuple[str, str]]] = {
    "tpu": lambda s: (_tpu(s).basis, _tpu(s).note),
    "filestore": lambda s: (sku_basis(table(), row_path("filestore_gib_month", s.shared_fs_tier, "price", s.region)), ""),
    "disk": lambda s: (sku_basis(table(), row_path("disk_gb_month", s.shared_pd_type, "price", s.region)), ""),
    "worker_vms": lambda s: ("; ".join(sku_basis(table(), row_path("compute_hour", s.machine_type.split("-")[0], f, s.region))
                                       for f in ("vcpu", "gb")), ""),
}


def estimate(settings: Settings, modules: tuple[str, ...] | frozenset[str]) -> Estimate:
    """The hourly cost of ``modules`` (plan modules that exist) with these settings: each
    module's ``prices`` (its catalogue entry), in create's order."""
    items: list[Item] = []
    for spec in catalogue.specs(settings.arch):
        if spec.name not in modules:
            continue
        for kind in spec.prices:
            price_of, source = PRICE_ITEMS[kind]
            what, hourly, approx, why, ok = price_of(settings)
            bound, bound_why = BOUND_OF[kind](settings) if kind in BOUND_OF else ("", "")
            basis, note = BASIS_OF[kind](settings) if kind in BASIS_OF and hourly is not None else ("", "")
            items.append(Item(spec.name, what, hourly, approx, why, confirmed=hourly is not None and ok,
                              source=source, bound=bound, bound_why=bound_why, basis=basis, note=note))
    return Estimate(tuple(items))


def change_text(before: Estimate | None, after: Estimate) -> str:
    """``$8.80/h → $35.20/h (+$26.40/h)``, or the after alone when nothing is applied."""
    if before is None:
        return after.total_text()
    if before.unknown or after.unknown:
        return f"{before.total_text()} → {after.total_text()}"
    delta = after.known - before.known
    sign = "+" if delta >= 0 else "-"
    approx = "~" if before.approximate or after.approximate else ""
    return f"{before.total_text()} → {after.total_text()} ({approx}{sign}${abs(delta):,.2f}/h)"
