"""Billing Catalog SKUs of storage → the per-month rows of prices.json (``filestore_gib_month``,
``disk_gb_month``, ``kept_gb_month``): the same matching as the TPU rates (builder/catalogue/skus.py,
whose :func:`~builder.catalogue.skus.match` calls :func:`match` here), one record per product × tier or
class × region.

A SKU prices a record when it belongs to the record's service (its ``name`` is ``services/<id>/skus/...``),
its whole description is the record's words followed by a location ("Balanced PD Capacity in Iowa",
"Filestore Capacity Basic HDD (Standard) Iowa/South Carolina/Oregon", "Standard Storage US Regional"),
it is billed per GiB-month and its geography is the record's: ``geoTaxonomy.type`` REGIONAL or
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

COMPUTE_SERVICE = "6F81-5844-456A"
FILESTORE_SERVICE = "D97E-AB26-5D95"
STORAGE_SERVICE = "95FF-2EF5-5EA1"
REGIONAL, MULTI = "REGIONAL", "MULTI_REGIONAL"
#: A SKU's location words after the record's: Compute Engine's "in Iowa" (so "Storage PD Snapshot Archive
#: in Iowa" is not a snapshot's), Filestore's and Cloud Storage's bare "Iowa/South Carolina/Oregon", "US Regional".
_LOCATION = r" [A-Z][A-Za-z .()/-]*"

#: (row kind, row name) → (service, the description's words before the location, geography).
RECORDS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("filestore_gib_month", "BASIC_HDD"): (FILESTORE_SERVICE, r"Filestore Capacity Basic HDD \(Standard\)", REGIONAL),
    ("filestore_gib_month", "BASIC_SSD"): (FILESTORE_SERVICE, r"Filestore Capacity Basic SSD \(Premium\)", REGIONAL),
    ("filestore_gib_month", "ZONAL"): (FILESTORE_SERVICE, r"Filestore Capacity Zonal", REGIONAL),
    ("filestore_gib_month", "HIGH_SCALE_SSD"): (FILESTORE_SERVICE, r"Filestore Capacity High Scale SSD", REGIONAL),
    ("filestore_gib_month", "REGIONAL"): (FILESTORE_SERVICE, r"Filestore Capacity Regional", REGIONAL),
    ("filestore_gib_month", "ENTERPRISE"): (FILESTORE_SERVICE, r"Filestore Capacity Enterprise", REGIONAL),
    ("disk_gb_month", "pd-standard"): (COMPUTE_SERVICE, r"Storage PD Capacity", REGIONAL),
    ("disk_gb_month", "pd-balanced"): (COMPUTE_SERVICE, r"Balanced PD Capacity", REGIONAL),
    ("disk_gb_month", "pd-ssd"): (COMPUTE_SERVICE, r"SSD backed PD Capacity", REGIONAL),
    ("disk_gb_month", "hyperdisk-ml"): (COMPUTE_SERVICE, r"Hyperdisk ML Capacity", REGIONAL),
    ("disk_gb_month", "hyperdisk-balanced"): (COMPUTE_SERVICE, r"Hyperdisk Balanced Capacity", REGIONAL),
    ("kept_gb_month", "snapshot"): (COMPUTE_SERVICE, r"Storage PD Snapshot", REGIONAL),
    ("kept_gb_month", "snapshot_multi_region"): (COMPUTE_SERVICE, r"Storage PD Snapshot", MULTI),
    ("kept_gb_month", "filestore_backup"): (FILESTORE_SERVICE, r"Filestore Backup Storage", REGIONAL),
    ("kept_gb_month", "bucket"): (STORAGE_SERVICE, r"Standard Storage", REGIONAL),
}
#: The services whose SKUs these records read (Compute Engine's are read for the TPU rates too).
SERVICES = (FILESTORE_SERVICE, STORAGE_SERVICE)
_PATTERNS = {key: re.compile(rf"^{words}(?:{' in' if svc == COMPUTE_SERVICE else ''}{_LOCATION})?$")
             for key, (svc, words, _g) in RECORDS.items()}
_GEO = {2: REGIONAL, 3: MULTI, "REGIONAL": REGIONAL, "MULTI_REGIONAL": MULTI}


def _get(d: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in d:
            return d[name]
    return None


def geography(sku: dict[str, Any]) -> str:
    """REGIONAL or MULTI_REGIONAL: the SKU's ``geoTaxonomy.type``, else what its resource group or
    description says ("MultiRegionalStorage", "... Multi-region"), else regional."""
    found = _GEO.get(_get(_get(sku, "geoTaxonomy", "geo_taxonomy") or {}, "type", "type_"))
    if found:
        return found
    group = str(_get(sku.get("category") or {}, "resourceGroup", "resource_group") or "")
    return MULTI if group.startswith("MultiRegional") or "Multi-region" in str(sku.get("description")) else REGIONAL


def classify(sku: dict[str, Any]) -> tuple[str, str] | None:
    """The (row kind, row name) the SKU prices, or None."""
    service = str(sku.get("name", "")).split("/")[1:2]
    description = str(sku.get("description", "")).strip()
    usage = _get(sku.get("category") or {}, "usageType", "usage_type")
    for key, (svc, _words, geo) in RECORDS.items():
        if service == [svc] and usage == "OnDemand" and _PATTERNS[key].match(description) and geography(sku) == geo:
            return key
    return None


def path(kind: str, name: str, region: str) -> str:
    """A per-month figure's path in prices.json (its ``skus`` provenance and ``verification.confirmed``)."""
    return f"{kind}.{name}.price.{region}"
