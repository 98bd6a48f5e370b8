"""Cloud Billing Catalog SKUs → the price records ``builder.catalogue.cost`` reads: one code path for the
prices ``tpubuild prices update`` reads live and for the bundled ``builder/data/prices.json``
(``tools/bundle_prices.py`` runs :func:`overlay` over the recorded catalogue in tests/data/billing/).

A SKU is one record of (generation × mode × region). Its ``description`` names the generation and the
mode, anchored at both ends, so a decoy of the same chip ("Capacity Optimized TpuV6e running in ...",
a commitment, a calendar reservation) never prices another mode; its ``serviceRegions`` name the regions
(a multi-regional SKU such as "TPU7x running in Americas" applies to each region it lists: the city or
continent in the description is never read). The modes, as Google's catalogue spells them (Compute Engine,
service 6F81-5844-456A; docs/plan_cost_ttl.md cites the pages):

* ``on-demand``: "TpuV6e running in Columbus" (usage type OnDemand);
* ``spot``: "TpuV6e attached to Spot Preemptible VMs running in Columbus" (usage type Preemptible, or
  OnDemand in some regions: either is accepted; the description decides);
* ``flex-start``: "DWS Defined Duration V6e running in Columbus" (Dynamic Workload Scheduler);
* ``calendar``: "Reserved V6e TPU in Columbus in Calendar Mode";
* ``committed-1y`` / ``committed-3y``: "Commitment v1: TpuV6e running in Columbus for 1 Year" / "3 Years".

Where two SKUs price the same record, the one with fewer regions (the regional one over a multi-regional
one) wins, then the lower SKU id (stable). Pure: SKUs in, dicts out.
"""

from __future__ import annotations

import re
from typing import Any

from builder.catalogue import sku_fields, storage_skus, tpu_device_skus

#: The Billing Catalog services ``prices update`` reads: Compute Engine lists v5e, v5p, v6e and TPU7x
#: (and the disks and snapshots), Cloud TPU v2, v3 and v4 (tpu_device_skus.py), Filestore and Cloud
#: Storage the rest of the per-month rows.
COMPUTE_SERVICE = storage_skus.COMPUTE_SERVICE
SERVICES = (COMPUTE_SERVICE, tpu_device_skus.SERVICE, *storage_skus.SERVICES)
#: The Compute Engine generations and how the catalogue spells each (after "Tpu"/"TPU"); v2, v3 and v4
#: are the Cloud TPU service's (tpu_device_skus.py).
GENERATIONS: dict[str, str] = {"v5e": "V5e", "v5p": "V5p", "v6e": "V6e", "tpu7x": "7x"}
#: The modes a SKU can price, in the order ``prices show`` lists them.
MODES = ("on-demand", "spot", "flex-start", "calendar", "committed-1y", "committed-3y")

_REGION = r"(?: in [A-Za-z .()-]+)?"


def _patterns(spelled: str) -> dict[str, re.Pattern[str]]:
    chip = rf"(?:Tpu|TPU) ?{spelled}"
    bare = rf"(?:(?:Tpu|TPU) ?)?{spelled}"
    return {mode: re.compile(rf"^{text}$") for mode, text in {
        "on-demand": rf"{chip} running{_REGION}",
        "spot": rf"(?:{chip} attached to Spot Preemptible VMs|Spot Preemptible {chip}) running{_REGION}",
        "flex-start": rf"(?:DWS Defined Duration {bare}|{chip} attached to DWS Defined Duration VMs) running{_REGION}",
        "calendar": rf"Reserved {bare}(?: TPU)?{_REGION} in Calendar Mode",
        "committed-1y": rf"Commitment v1: {chip} running{_REGION} for 1 Year",
        "committed-3y": rf"Commitment v1: {chip} running{_REGION} for 3 Years?",
    }.items()}


_BY_GENERATION = {g: _patterns(spelled) for g, spelled in GENERATIONS.items()}
#: The usage types each mode's SKU may carry (a commitment's is its term; spot is either).
USAGE = {"on-demand": {"OnDemand"}, "spot": {"Preemptible", "OnDemand"}, "flex-start": {"OnDemand"},
         "calendar": {"OnDemand"}, "committed-1y": {"Commit1Yr"}, "committed-3y": {"Commit3Yr"}}


def classify(sku: dict[str, Any]) -> tuple[str, str] | None:
    """(generation, mode) of one SKU, or None: not a TPU chip-hour SKU tpubuild prices (a decoy)."""
    description = str(sku.get("description", "")).strip()
    usage = sku_fields.usage_type(sku)
    for generation, patterns in _BY_GENERATION.items():
        for mode, pattern in patterns.items():
            if pattern.match(description) and usage in USAGE[mode]:
                return generation, mode
    return None


def unit_price(sku: dict[str, Any], unit: str = "h") -> tuple[float, str] | None:
    """(USD per ``unit``, the date it took effect) of the SKU's current price: its first pricing info's
    first tier that is not free (a free allowance, as Cloud Storage's, is skipped; a TPU SKU has one
    tier, the rate from zero usage); None when it is not priced in ``unit`` ("h": chip-hours,
    "GiBy.mo": GiB-months)."""
    info = (sku_fields.field(sku, "pricingInfo", "pricing_info") or [None])[0]
    if not info:
        return None
    expression = sku_fields.field(info, "pricingExpression", "pricing_expression") or {}
    if sku_fields.field(expression, "usageUnit", "usage_unit") != unit:
        return None
    tiers = [sku_fields.field(t, "unitPrice", "unit_price") or {} for t in sku_fields.field(expression, "tieredRates", "tiered_rates") or []]
    values = [int(p.get("units") or 0) + int(p.get("nanos") or 0) / 1e9 for p in tiers]
    if not values:
        return None
    effective = str(sku_fields.field(info, "effectiveTime", "effective_time") or "")[:10]
    return round(next((v for v in values if v), values[0]), 9), effective


def _records(sku: dict[str, Any]) -> list[tuple[tuple[str, ...], tuple[float, str]]]:
    """(the record's key, (price, effective date)) of each record a SKU prices: a TPU chip-hour
    (``tpu_chip_hour``, generation, mode; a Cloud TPU device's rate divided by its chips: tpu_device_skus.py)
    or another row's field (kind, name, field: storage_skus.py); [] for a SKU tpubuild does not price."""
    kind = classify(sku)
    priced = unit_price(sku) if kind else None
    if kind is not None:
        return [(("tpu_chip_hour", *kind), priced)] if priced else []
    devices = tpu_device_skus.records(sku)
    priced = unit_price(sku) if devices else None
    if devices:
        per_chip = (round(priced[0] / tpu_device_skus.CHIPS_PER_DEVICE, 9), priced[1]) if priced else None
        return [(("tpu_chip_hour", *d), per_chip) for d in devices] if per_chip else []
    row = storage_skus.classify(sku)
    priced = unit_price(sku, storage_skus.unit(row)) if row else None
    return [(row, priced)] if row and priced else []


def match(skus: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"tpu_chip_hour": {gen: {mode: {region: price}}}, "rows": {kind: {name: {field: {region: price}}}},
    "skus": {path: provenance}}``: each record's price and the SKU it came from (``path`` is
    ``tpu_chip_hour.<gen>.<mode>.<region>`` or ``<kind>.<name>.<field>.<region>``; provenance is
    ``{"sku", "description", "effective", "regions"}``)."""
    chosen: dict[tuple[str, ...], dict[str, Any]] = {}
    for sku, (key, priced) in ((sku, found) for sku in skus for found in _records(sku)):
        regions = [str(r) for r in (sku_fields.field(sku, "serviceRegions", "service_regions") or [])]
        for region in regions:
            rank = (len(regions), str(sku_fields.field(sku, "skuId", "sku_id")))
            if (*key, region) in chosen and chosen[(*key, region)]["rank"] <= rank:
                continue
            chosen[(*key, region)] = {"rank": rank, "price": priced[0], "sku": rank[1], "description": sku["description"],
                                      "effective": priced[1], "regions": len(regions)}
    prices: dict[str, dict[str, dict[str, float]]] = {}
    others: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    provenance: dict[str, dict[str, Any]] = {}
    for (kind, name, *rest), found in sorted(chosen.items()):
        if kind == "tpu_chip_hour":
            (mode, region), where = rest, f"tpu_chip_hour.{name}.{rest[0]}.{rest[1]}"
            rows = prices.setdefault(name, {})
            if mode.startswith("pod."):  # a v2/v3 Pod rate: the generation's ``pod`` rows
                rows, mode = rows.setdefault("pod", {}), mode[4:]
            rows.setdefault(mode, {})[region] = found["price"]
        else:
            (field, region), where = rest, storage_skus.path(kind, name, *rest)
            others.setdefault(kind, {}).setdefault(name, {}).setdefault(field, {})[region] = found["price"]
        provenance[where] = {k: found[k] for k in ("sku", "description", "effective", "regions")}
    return {"tpu_chip_hour": prices, "rows": others, "skus": provenance}


def _replaced(old: dict[str, Any], matched: dict[str, Any], default_region: str = "") -> dict[str, Any]:
    """A generation's rows (or its ``pod`` rows, whose default region is the generation's unless they
    name one) replaced by the matched modes, each with its ``default``."""
    keep = {k: v for k, v in old.items() if k in ("default_region", "_about")}
    region = old.get("default_region", default_region)
    for mode, by_region in matched.items():
        if mode == "pod":
            keep["pod"] = _replaced(old.get("pod", {}), by_region, region)
            continue
        keep[mode] = {"default": by_region.get(region), **by_region}
    return keep


def overlay(table: dict[str, Any], matched: dict[str, Any], retrieved: str, source: dict[str, Any]) -> dict[str, Any]:
    """``table`` (prices.json's layout) with every catalogued generation's TPU rows replaced by the
    ``matched`` ones (no row of the old table survives beside them: a mode the catalogue did not price
    has none), each other row's field the catalogue priced (Filestore, disks, what a destroy keeps, the
    worker VMs: storage_skus.py) replaced by its regions (one it did not price keeps ``table``'s figures
    and their SKUs), each ``default`` the default region's price, ``skus`` the
    provenance, ``retrieved`` the date the SKUs were read and ``catalogue`` where from (``source``)."""
    out = {k: v for k, v in table.items()}
    rows = {g: dict(v) for g, v in table["tpu_chip_hour"].items()}
    for generation in (*GENERATIONS, *tpu_device_skus.GENERATIONS):
        if generation in matched["tpu_chip_hour"]:  # one the catalogue priced nothing of keeps its rows
            rows[generation] = _replaced(rows.get(generation, {}), matched["tpu_chip_hour"][generation])
    out["tpu_chip_hour"] = rows
    kept = dict(table.get("skus", {}))
    for kind, names in matched.get("rows", {}).items():
        out[kind] = {n: dict(r) if isinstance(r, dict) else r for n, r in out[kind].items()}
        for name, fields in names.items():
            row = out[kind].setdefault(name, {"default_region": next(iter(next(iter(fields.values()))))})
            for field, by_region in fields.items():
                row[field] = {"default": by_region.get(row["default_region"]), **by_region}
                kept = {p: v for p, v in kept.items() if not p.startswith(f"{kind}.{name}.{field}.")}
    replaced = tuple(f"tpu_chip_hour.{g}." for g in matched["tpu_chip_hour"])
    out["skus"] = {**{p: v for p, v in kept.items() if not p.startswith(replaced)}, **matched["skus"]}
    out["retrieved"] = retrieved
    out["catalogue"] = source
    return out
