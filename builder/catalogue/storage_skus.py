"""Billing Catalog SKUs of storage and of the node's worker VMs → the per-month rows of prices.json
(``filestore_gib_month``, ``disk_gb_month``, ``kept_gb_month``) and ``compute_hour``: the same matching as the TPU rates (builder/catalogue/skus.py,
whose :func:`~builder.catalogue.skus.match` calls :func:`match` here), one record per product × tier or
class × region.

A SKU prices a record when it belongs to the record's service (its ``name`` is ``services/<id>/skus/...``),
its whole description is the record's words followed by a location ("Balanced PD Capacity in Iowa",
"Filestore Capacity Basic HDD (Standard) Iowa/South Carolina/Oregon", "Standard Storage US Regional"),
it is billed in the record's unit (GiB-months; hours and GiB-hours for a VM's core and RAM) and its geography is the record's: ``geoTaxonomy.type`` REGIONAL or
MULTI_REGIONAL (a SKU without one is regional unless its resource group or description says
multi-region). The location words are never read: the regions are the SKU's ``serviceRegions``, and a
multi-regional SKU ("Storage PD Snapshot in US") prices each region it lists. So a regional snapshot and
the nearest multi-region's are two records, a decoy of the same words ("Regional Balanced PD Capacity",
"Hyperdisk Balanced IOPS", "Standard Storage US Multi-region" for a regional bucket) prices nothing.
The services and descriptions, as Google's catalogue spells them, are cited in docs/plan_cost_ttl.md.
"""

from __future__ import annotations

import re
from typing import Any

from builder.catalogue.sku_fields import field, service, usage_type

COMPUTE_SERVICE = "6F81-5844-456A"
FILESTORE_SERVICE = "D97E-AB26-5D95"
STORAGE_SERVICE = "95FF-2EF5-5EA1"
REGIONAL, MULTI = "REGIONAL", "MULTI_REGIONAL"
#: A SKU's location words after the record's: Compute Engine's "in Iowa" (so "Storage PD Snapshot Archive
#: in Iowa" is not a snapshot's), Filestore's and Cloud Storage's bare "Iowa/South Carolina/Oregon", "US Regional".
_LOCATION = r" [A-Z][A-Za-z .()/-]*"

#: (row kind, row name, field) → (service, the description's words before the location, geography (None:
#: either), the SKU's usage unit). The per-month rows' field is ``price``; the worker VMs' (``compute_hour``,
#: the node architecture's n1/n2 hosts) ``vcpu`` and ``gb``, per hour.
RECORDS: dict[tuple[str, str, str], tuple[str, str, str | None, str]] = {
    ("filestore_gib_month", "BASIC_HDD", "price"): (FILESTORE_SERVICE, r"Filestore Capacity Basic HDD \(Standard\)", REGIONAL, "GiBy.mo"),
    ("filestore_gib_month", "BASIC_SSD", "price"): (FILESTORE_SERVICE, r"Filestore Capacity Basic SSD \(Premium\)", REGIONAL, "GiBy.mo"),
    ("filestore_gib_month", "ZONAL", "price"): (FILESTORE_SERVICE, r"Filestore Capacity Zonal", REGIONAL, "GiBy.mo"),
    ("filestore_gib_month", "HIGH_SCALE_SSD", "price"): (FILESTORE_SERVICE, r"Filestore Capacity High Scale SSD", REGIONAL, "GiBy.mo"),
    ("filestore_gib_month", "REGIONAL", "price"): (FILESTORE_SERVICE, r"Filestore Capacity Regional", REGIONAL, "GiBy.mo"),
    ("filestore_gib_month", "ENTERPRISE", "price"): (FILESTORE_SERVICE, r"Filestore Capacity Enterprise", REGIONAL, "GiBy.mo"),
    ("disk_gb_month", "pd-standard", "price"): (COMPUTE_SERVICE, r"Storage PD Capacity", REGIONAL, "GiBy.mo"),
    ("disk_gb_month", "pd-balanced", "price"): (COMPUTE_SERVICE, r"Balanced PD Capacity", REGIONAL, "GiBy.mo"),
    ("disk_gb_month", "pd-ssd", "price"): (COMPUTE_SERVICE, r"SSD backed PD Capacity", REGIONAL, "GiBy.mo"),
    ("disk_gb_month", "hyperdisk-ml", "price"): (COMPUTE_SERVICE, r"Hyperdisk ML Capacity", REGIONAL, "GiBy.mo"),
    ("disk_gb_month", "hyperdisk-balanced", "price"): (COMPUTE_SERVICE, r"Hyperdisk Balanced Capacity", REGIONAL, "GiBy.mo"),
    ("kept_gb_month", "snapshot", "price"): (COMPUTE_SERVICE, r"Storage PD Snapshot", REGIONAL, "GiBy.mo"),
    ("kept_gb_month", "snapshot_multi_region", "price"): (COMPUTE_SERVICE, r"Storage PD Snapshot", MULTI, "GiBy.mo"),
    ("kept_gb_month", "filestore_backup", "price"): (FILESTORE_SERVICE, r"Filestore Backup Storage", REGIONAL, "GiBy.mo"),
    ("kept_gb_month", "bucket", "price"): (STORAGE_SERVICE, r"Standard Storage", REGIONAL, "GiBy.mo"),
    ("compute_hour", "n1", "vcpu"): (COMPUTE_SERVICE, r"N1 Predefined Instance Core running", None, "h"),
    ("compute_hour", "n1", "gb"): (COMPUTE_SERVICE, r"N1 Predefined Instance Ram running", None, "GiBy.h"),
    ("compute_hour", "n2", "vcpu"): (COMPUTE_SERVICE, r"N2 Instance Core running", None, "h"),
    ("compute_hour", "n2", "gb"): (COMPUTE_SERVICE, r"N2 Instance Ram running", None, "GiBy.h"),
}
#: The services whose SKUs these records read (Compute Engine's are read for the TPU rates too).
SERVICES = (FILESTORE_SERVICE, STORAGE_SERVICE)
_PATTERNS = {key: re.compile(rf"^{words}(?:{' in' if svc == COMPUTE_SERVICE else ''}{_LOCATION})?$")
             for key, (svc, words, _g, _u) in RECORDS.items()}
_GEO = {2: REGIONAL, 3: MULTI, "REGIONAL": REGIONAL, "MULTI_REGIONAL": MULTI}


def geography(sku: dict[str, Any]) -> str:
    """REGIONAL or MULTI_REGIONAL: the SKU's ``geoTaxonomy.type``, else what its resource group or
    description says ("MultiRegionalStorage", "... Multi-region"), else regional."""
    found = _GEO.get(field(field(sku, "geoTaxonomy", "geo_taxonomy") or {}, "type", "type_"))
    if found:
        return found
    group = str(field(sku.get("category") or {}, "resourceGroup", "resource_group") or "")
    return MULTI if group.startswith("MultiRegional") or "Multi-region" in str(sku.get("description")) else REGIONAL


def classify(sku: dict[str, Any]) -> tuple[str, str, str] | None:
    """The (row kind, row name, field) the SKU prices, or None."""
    of = service(sku)
    description = str(sku.get("description", "")).strip()
    usage = usage_type(sku)
    for key, (svc, _words, geo, _unit) in RECORDS.items():
        if of == svc and usage == "OnDemand" and _PATTERNS[key].match(description) and geo in (None, geography(sku)):
            return key
    return None


def unit(key: tuple[str, str, str]) -> str:
    """The usage unit a record's SKU is priced in ("GiBy.mo", "h", "GiBy.h")."""
    return RECORDS[key][3]


def path(kind: str, name: str, field: str, region: str) -> str:
    """A figure's path in prices.json (its ``skus`` provenance and ``verification.confirmed``)."""
    return f"{kind}.{name}.{field}.{region}"
