"""Billing Catalog SKUs → prices (builder/catalogue/skus.py): each mode picks its own SKU, decoys price
nothing, spot under either usage type, a multi-regional SKU applies to each region it lists (never a
city name), and the bundled builder/data/prices.json is what the same code makes of the recording."""

from __future__ import annotations

import json

from builder.catalogue import cost, skus, storage_skus, tpu_device_skus
from tests.support.fakes.billing import RECORDED


def _sku(description: str, usage: str, regions: list[str], price: float, sku_id: str = "AAAA-BBBB-CCCC") -> dict:
    units = int(price)
    return {"skuId": sku_id, "description": description, "category": {"resourceGroup": "TPU", "usageType": usage},
            "serviceRegions": regions, "pricingInfo": [{"effectiveTime": "2026-12-01T00:00:00Z", "pricingExpression": {
                "usageUnit": "h", "tieredRates": [{"unitPrice": {"units": str(units),
                                                                 "nanos": round((price - units) * 1e9)}}]}}]}


COLUMBUS = [
    _sku("TpuV6e running in Columbus", "OnDemand", ["us-east5"], 2.70, "A-1"),
    _sku("DWS Defined Duration V6e running in Columbus", "OnDemand", ["us-east5"], 1.35, "A-2"),
    _sku("TpuV6e attached to Spot Preemptible VMs running in Columbus", "Preemptible", ["us-east5"], 1.4033, "A-3"),
    _sku("Capacity Optimized TpuV6e running in Columbus", "OnDemand", ["us-east5"], 9.99, "A-4"),
    _sku("Reserved V6e TPU in Columbus in Calendar Mode", "OnDemand", ["us-east5"], 1.89, "A-5"),
    _sku("Commitment v1: TpuV6e running in Columbus for 1 Year", "Commit1Yr", ["us-east5"], 1.70, "A-6"),
    _sku("Commitment v1: TpuV6e running in Columbus for 3 Years", "Commit3Yr", ["us-east5"], 1.22, "A-7"),
    _sku("Reserved TpuV6e in Columbus", "OnDemand", ["us-east5"], 0.0, "A-8"),  # a commitment placeholder
    _sku("TpuV6e running in Columbus", "Commit1Yr", ["us-east5"], 0.5, "A-9"),  # the right words, the wrong usage
    _sku("TpuV6e attached to Spot Preemptible VMs running in Dallas", "OnDemand", ["us-south1"], 1.35, "B-1"),
    _sku("TPU7x running in Americas", "OnDemand", ["us-west1", "us-central1", "us-east1"], 12.0, "C-1"),
    _sku("TPU7x running in Iowa", "OnDemand", ["us-central1"], 11.0, "C-2"),  # regional beats multi-regional
    _sku("TpuV6e running in Netherlands", "OnDemand", ["us-east1"], 3.0, "D-1"),  # serviceRegions decide, not the city
]


def test_each_mode_picks_its_own_sku_and_decoys_price_nothing() -> None:
    m = skus.match(COLUMBUS)["tpu_chip_hour"]["v6e"]
    assert {mode: m[mode]["us-east5"] for mode in skus.MODES} == {
        "on-demand": 2.7, "spot": 1.4033, "flex-start": 1.35, "calendar": 1.89, "committed-1y": 1.7, "committed-3y": 1.22}
    for decoy in ("Capacity Optimized TpuV6e running in Columbus", "Reserved TpuV6e in Columbus"):
        assert skus.classify(_sku(decoy, "OnDemand", ["us-east5"], 1.0)) is None
    assert skus.classify(COLUMBUS[8]) is None  # an on-demand description under a commitment's usage type


def test_spot_under_either_usage_type_and_regions_from_service_regions() -> None:
    found = skus.match(COLUMBUS)
    assert found["tpu_chip_hour"]["v6e"]["spot"]["us-south1"] == 1.35  # usage type OnDemand
    assert found["tpu_chip_hour"]["v6e"]["on-demand"]["us-east1"] == 3.0  # "Netherlands" is not read
    assert "europe-west4" not in found["tpu_chip_hour"]["v6e"]["on-demand"]


def test_a_multi_regional_sku_applies_to_each_region_it_lists_and_a_regional_one_wins() -> None:
    found = skus.match(COLUMBUS)
    assert found["tpu_chip_hour"]["tpu7x"]["on-demand"] == {"us-central1": 11.0, "us-east1": 12.0, "us-west1": 12.0}
    assert found["skus"]["tpu_chip_hour.tpu7x.on-demand.us-east1"]["sku"] == "C-1"
    assert found["skus"]["tpu_chip_hour.tpu7x.on-demand.us-central1"]["description"] == "TPU7x running in Iowa"


def test_the_bundled_table_is_what_the_matching_code_makes_of_the_recording() -> None:
    """Stale when the recording, the matcher or prices.json changed apart: run tools/bundle_prices.py --write."""
    from tools import bundle_prices

    assert json.loads(bundle_prices.bundled_text()) == json.loads(cost.PRICES.read_text(encoding="utf-8"))
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert cost.table()["retrieved"] == recorded["recorded"] and cost.table()["source"]["kind"] == "bundled"


def test_a_region_with_no_sku_says_no_published_price_and_what_stands_in() -> None:
    flex = cost.tpu_price("v6e", "asia-northeast1", "flex-start")  # no DWS SKU there, nor in the default region
    assert flex.bound == "at most" and flex.value == 3.24 and "no published v6e flex-start price" in flex.bound_why
    od = cost.tpu_price("v6e", "asia-south2", "on-demand")  # no v6e SKU in that region at all
    assert od.approximate and "no published v6e on-demand price in asia-south2: us-east1's (~)" in od.note
    assert cost.tpu_price("v9", "us-east1", "on-demand").value is None


def _storage(service: str, description: str, regions: list[str], price: float, geo: str | None = "REGIONAL",
             sku_id: str = "S-1", free_first: bool = False) -> dict:
    sku = _sku(description, "OnDemand", regions, price, sku_id)
    sku["name"] = f"services/{service}/skus/{sku_id}"
    expression = sku["pricingInfo"][0]["pricingExpression"]
    expression["usageUnit"] = "GiBy.mo"
    if free_first:
        expression["tieredRates"].insert(0, {"unitPrice": {"units": "0", "nanos": 0}})
    if geo:
        sku["geoTaxonomy"] = {"type": geo, "regions": regions}
    return sku


CE, FS, GCS = skus.COMPUTE_SERVICE, storage_skus.FILESTORE_SERVICE, storage_skus.STORAGE_SERVICE
STORAGE = [
    _storage(CE, "Storage PD Snapshot in Iowa", ["us-central1"], 0.05, sku_id="P-1"),
    _storage(CE, "Storage PD Snapshot in US", ["us-central1", "us-east5"], 0.065, "MULTI_REGIONAL", "P-2"),
    _storage(CE, "Storage PD Snapshot Archive in Iowa", ["us-central1"], 0.019, sku_id="P-3"),  # another class
    _storage(CE, "Balanced PD Capacity in Iowa", ["us-central1"], 0.1, sku_id="P-4"),
    _storage(CE, "Regional Balanced PD Capacity in Iowa", ["us-central1"], 0.2, sku_id="P-5"),  # replicated
    _storage(FS, "Balanced PD Capacity in Oregon", ["us-west1"], 9.0, sku_id="P-6"),  # the wrong service
    _storage(FS, "Filestore Capacity Basic HDD (Standard) Iowa/South Carolina/Oregon",
             ["us-central1", "us-east1", "us-west1"], 0.2, sku_id="F-1"),
    _storage(GCS, "Standard Storage US Regional", ["us-central1", "us-east1"], 0.02, sku_id="G-1", free_first=True),
    _storage(GCS, "Standard Storage US Multi-region", ["us-central1", "us-east5"], 0.026, None, "G-2"),  # no geoTaxonomy
]


def test_storage_records_each_from_its_service_class_and_geography() -> None:
    """Filestore, disks, snapshots and buckets: one record each (product × tier/class × region); a
    multi-regional SKU prices each region it lists as the multi-region's record, never a regional one."""
    found = skus.match(STORAGE)["rows"]
    assert found["kept_gb_month"]["snapshot"]["price"] == {"us-central1": 0.05}
    assert found["kept_gb_month"]["snapshot_multi_region"]["price"] == {"us-central1": 0.065, "us-east5": 0.065}
    assert found["disk_gb_month"] == {"pd-balanced": {"price": {"us-central1": 0.1}}}  # not the replicated one, nor Filestore's
    assert found["filestore_gib_month"]["BASIC_HDD"]["price"] == {"us-central1": 0.2, "us-east1": 0.2, "us-west1": 0.2}
    assert found["kept_gb_month"]["bucket"]["price"] == {"us-central1": 0.02, "us-east1": 0.02}  # past the free tier
    assert storage_skus.geography(STORAGE[-1]) == "MULTI_REGIONAL"  # said by its description when untagged
    assert skus.match(STORAGE)["skus"]["kept_gb_month.snapshot_multi_region.price.us-east5"]["sku"] == "P-2"
    assert storage_skus.classify({**STORAGE[0], "geoTaxonomy": {"type": 3}}) == ("kept_gb_month", "snapshot_multi_region", "price")


def test_worker_vm_cores_and_ram_each_from_their_own_sku() -> None:
    def vm(description: str, usage: str, unit: str, price: float, sku_id: str) -> dict:
        sku = _storage(CE, description, ["us-central1", "us-east1"], price, None, sku_id)
        sku["category"]["usageType"] = usage
        sku["pricingInfo"][0]["pricingExpression"]["usageUnit"] = unit
        return sku

    found = skus.match([vm("N1 Predefined Instance Core running in Americas", "OnDemand", "h", 0.031611, "V-1"),
                        vm("N1 Predefined Instance Ram running in Americas", "OnDemand", "GiBy.h", 0.004237, "V-2"),
                        vm("Spot Preemptible N1 Predefined Instance Core running in Americas", "Preemptible", "h", 0.0067, "V-3"),
                        vm("N2 Custom Instance Core running in Americas", "OnDemand", "h", 0.033, "V-4"),
                        vm("N2 Instance Core running in Americas", "OnDemand", "GiBy.h", 0.5, "V-5")])  # the wrong unit
    assert found["rows"] == {"compute_hour": {"n1": {"vcpu": {"us-central1": 0.031611, "us-east1": 0.031611},
                                                     "gb": {"us-central1": 0.004237, "us-east1": 0.004237}}}}


def test_a_catalogue_without_a_storage_row_keeps_the_bundled_one() -> None:
    """A live read that prices no Filestore backup keeps the bundled figure and its SKU (no row vanishes)."""
    base = cost.table()
    out = skus.overlay(base, skus.match(STORAGE), "2026-12-05", {})
    assert out["kept_gb_month"]["filestore_backup"] == base["kept_gb_month"]["filestore_backup"]
    assert out["skus"]["kept_gb_month.filestore_backup.price.us-central1"]["sku"] == "RECN-0207-FS00"
    assert out["kept_gb_month"]["snapshot"]["price"] == {"default": 0.05, "us-central1": 0.05}  # europe-west4 not re-read


def _device(description: str, usage: str, regions: list[str], price: float, sku_id: str = "T-1") -> dict:
    return {**_sku(description, usage, regions, price, sku_id), "name": f"services/{tpu_device_skus.SERVICE}/skus/{sku_id}"}


def test_cloud_tpu_device_skus_price_v2_to_v4_per_chip() -> None:
    """The Cloud TPU service prices a 4-chip device: ÷ 4; "Pod" is a v2/v3 slice's own rate (v4's only
    rate); "Preemptible" (usage type OnDemand) prices preemptible and spot; a commitment its term."""
    found = skus.match([
        _device("TPU-v2 Accelerator USA", "OnDemand", ["us-central1"], 4.5, "T-1"),
        _device("Tpu-v2 Pod Accelerator", "OnDemand", ["us-central1", "europe-west4"], 6.0, "T-2"),
        _device("Preemptible Tpu-v3 Accelerator Europe", "OnDemand", ["europe-west4"], 2.244, "T-3"),
        _device("Tpu-v4 Pod Accelerator", "OnDemand", ["us-central2"], 12.88, "T-4"),
        _device("Commitment v1: Tpu-v4 Pod Accelerator for 1 Year", "Commit1Yr", ["us-central2"], 8.1144, "T-5"),
        _device("Tpu-v3 Accelerator Europe", "Preemptible", ["europe-west4"], 0.01, "T-6"),  # an unpriced usage type
        {**_sku("TPU-v2 Accelerator USA", "OnDemand", ["us-east1"], 9.0, "T-7"), "name": "services/X/skus/T-7"},
    ])
    chips = found["tpu_chip_hour"]
    assert chips["v2"] == {"on-demand": {"us-central1": 1.125}, "pod": {"on-demand": {"us-central1": 1.5, "europe-west4": 1.5}}}
    assert chips["v3"] == {"preemptible": {"europe-west4": 0.561}, "spot": {"europe-west4": 0.561}}
    assert chips["v4"] == {"on-demand": {"us-central2": 3.22}, "committed-1y": {"us-central2": 2.0286}}
    assert found["skus"]["tpu_chip_hour.v2.pod.on-demand.europe-west4"]["sku"] == "T-2"
