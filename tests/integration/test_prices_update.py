"""`tpubuild prices update` with the real google-cloud-billing client (REST) against a local fake of the
Billing Catalog (tests/support/fakes/billing.py, paged like the API): the cache it writes is what plan,
plan --all and `prices show` read, every TPU figure follows the catalogue's prices, and nothing else moves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.fakes.billing import FakeCatalog, recorded, scaled

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = ["mig-v6e-16-flex.env", "mig-v6e-32-calendar.env", "mig-v6e-16-spot.env", "mig-tpu7x-128.env",
            "vm-v2-32.env", "vm-v4-32.env", "../values.env"]
#: Destroys: what stays billed every month (the snapshot, the Filestore backup, the buckets).
DESTROYS = ["mig-v6e-16-spot.env@destroy", "mig-v6e-32-calendar.env@destroy", "../tests/data/node-values.env@destroy"]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "prices"
    monkeypatch.setenv("TPUBUILD_PRICES_CACHE", str(folder))
    return folder


def _plan(cli, name: str, *args: str) -> tuple[str, dict]:
    path = REPO / "examples" / name
    code, out, err = cli("--values", path, "plan", "--applied", "none", *args)
    assert code == 0, err
    code, raw, err = cli("--values", path, "plan", "--applied", "none", "--format", "json", *args)
    assert code == 0, err
    return out, json.loads(raw)


def _update(cli, fake: FakeCatalog) -> str:
    code, out, err = cli("prices", "update", "--endpoint", fake.url)
    assert code == 0, err
    return out


def test_update_reads_every_page_and_writes_a_dated_cache(cli, cache) -> None:
    fake = FakeCatalog(page_size=7).start()
    try:
        out = _update(cli, fake)
    finally:
        fake.stop()
    services = recorded()
    # Compute Engine, Cloud TPU (v2-v4), Filestore, Cloud Storage
    assert set(services) == {"6F81-5844-456A", "E000-3F24-B8AA", "D97E-AB26-5D95", "95FF-2EF5-5EA1"}
    for service, found in services.items():  # every page of each service, each once
        assert len([r for r in fake.requests if r[0] == f"/v1/services/{service}/skus"]) == -(-len(found) // 7)
    n = sum(len(found) for found in services.values())
    assert len(fake.requests) == sum(-(-len(f) // 7) for f in services.values()) and f"read {n} SKUs" in out
    [written] = cache.glob("prices-*.json")
    assert written.name == "prices-2026-11-28.json" and str(written) in out
    code, shown, _ = cli("prices", "show", "--generation", "v6e", "--region", "us-east5")
    assert code == 0 and "from the Cloud Billing Catalog read 2026-11-28T00:00:00Z" in shown
    assert '"DWS Defined Duration V6e running in Columbus", effective 2026-08-07' in shown


def _figures(text: str) -> list[str]:
    """The prices on a line ($0.00, nothing billed, is no price)."""
    return [f for f in re.findall(r"\$[0-9][0-9,]*(?:\.[0-9]+)?", text) if f != "$0.00"]


@pytest.mark.parametrize("name", EXAMPLES + DESTROYS)
def test_other_prices_change_every_figure_of_the_plan_and_nothing_else(cli, cache, name) -> None:
    """A catalogue serving other prices (every SKU × 1.5) moves every figure
    plan shows, text and JSON (the TPU, Filestore, the disk, the snapshot, the backup, the buckets, every
    total), and nothing else but the source line and the SKUs' effective dates."""
    name, *action = name.split("@")
    args = ("--action", action[0]) if action else ()
    before_text, before = _plan(cli, name, *args)
    assert before["cost"]["prices"]["source"] == "bundled"
    fake = FakeCatalog(scaled(recorded(), 1.5)).start()
    try:
        _update(cli, fake)
    finally:
        fake.stop()
    after_text, after = _plan(cli, name, *args)
    assert after["cost"]["prices"]["source"] == "catalogue" and "Cloud Billing Catalog" in after_text
    assert {k: v for k, v in before.items() if k != "cost"} == {k: v for k, v in after.items() if k != "cost"}
    old, new = before["cost"]["after"]["items"], after["cost"]["after"]["items"]
    for o, n in zip(old, new, strict=True):  # every item: the TPU, Filestore, the disk
        assert o["hourly"] and n["hourly"] == pytest.approx(o["hourly"] * 1.5), (o, n)
        assert n["basis"] != o["basis"] and "2026-12-05" in n["basis"], (o, n)  # the SKU's new effective date
    for o, n in zip(before["cost"]["totals"], after["cost"]["totals"], strict=True):
        assert n["total"] == pytest.approx(o["total"] * 1.5, rel=1e-3, abs=0.011), (o, n)  # rates shown to 4 digits
        for oi, ni in zip(o["items"], n["items"], strict=True):  # the snapshot, the backup, the buckets
            assert ni["basis"] != oi["basis"] and "2026-12-05" in ni["basis"], (oi, ni)
            if oi["monthly"] is not None:
                assert ni["monthly"] == pytest.approx(oi["monthly"] * 1.5, abs=0.011), (oi, ni)
    moved = [(a, b) for a, b in zip(before_text.splitlines(), after_text.splitlines(), strict=True) if a != b]
    assert moved and all(re.search(r"\$|Billing Catalog|bundled snapshot", a) for a, _ in moved), moved
    for a, b in moved:  # the dollar figures move and nothing else on their lines
        if "Billing Catalog" in b:
            continue
        assert _figures(a) and all(x != y for x, y in zip(_figures(a), _figures(b), strict=True)), (a, b)
        assert re.sub(r"\$[0-9][0-9,.]*", "$", a) == re.sub(r"\$[0-9][0-9,.]*", "$", b), (a, b)
    unmoved = [a for a, b in zip(before_text.splitlines(), after_text.splitlines(), strict=True) if a == b]
    assert not [line for line in unmoved if _figures(line)], unmoved  # no figure stayed behind


def test_other_prices_move_the_node_worker_vms(cli, cache) -> None:
    """A TPU Node file plans destroys only, whose hourly cost is $0: its worker VMs' figure (status
    prices it, and the applied cost before a migration) moves with the catalogue as every other does."""
    from builder.catalogue import cost
    from builder.config import load

    settings = load(REPO / "tests" / "data" / "node-values.env")
    [before] = cost.estimate(settings, ("mig",)).items
    fake = FakeCatalog(scaled(recorded(), 1.5)).start()
    try:
        _update(cli, fake)
    finally:
        fake.stop()
    [after] = cost.estimate(settings, ("mig",)).items
    assert before.hourly and after.hourly == pytest.approx(before.hourly * 1.5) and "2026-12-05" in after.basis


def test_an_unknown_service_or_a_dead_endpoint_is_one_line_and_the_cache_is_kept(cli, cache) -> None:
    fake = FakeCatalog({}).start()
    try:
        code, out, err = cli("prices", "update", "--endpoint", fake.url)
    finally:
        fake.stop()
    assert code == 1 and "Billing Catalog" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    code, _out, err = cli("prices", "update", "--endpoint", fake.url)  # the server is gone
    assert code == 1 and len(err.strip().splitlines()) == 1 and not list(cache.glob("prices-*.json"))


def test_show_lists_each_figure_with_its_source(cli, cache) -> None:
    code, out, _ = cli("prices", "show", "--generation", "tpu7x")
    assert code == 0 and "from the bundled snapshot builder/data/prices.json (catalogue of 2026-11-28)" in out
    assert out.count('SKU 0F71-4391-B6CA "TPU7x running in Americas", effective 2026-06-14') == 3  # each region listed
    code, out, _ = cli("prices", "show", "--generation", "v3")  # the Cloud TPU service's per-device SKU ÷ 4 chips
    assert code == 0 and re.search(r"v3 +on-demand +us-central1 +\$2\.00 +SKU RECN-0308-TPU0 \"Tpu-v3 Accelerator USA\"", out)
    code, raw, _ = cli("prices", "show", "--generation", "v6e", "--region", "asia-northeast1", "--format", "json")
    rows = {r["mode"]: r for r in json.loads(raw)["chip_hour"]}
    assert rows["flex-start"]["bound"] == "at most" and "no published v6e flex-start price" in rows["flex-start"]["why"]
    assert rows["spot"]["price"] == 0.94352 and "the day's price" in rows["spot"]["why"]
    code, _out, err = cli("prices", "show", "--generation", "v9")
    assert code == 2 and "--generation" in err and len(err.strip().splitlines()) == 1


def test_a_cache_older_than_the_bundled_snapshot_or_unreadable_is_not_read(cli, cache) -> None:
    from builder.catalogue import cost

    cache.mkdir()
    (cache / "prices-2026-01-01.json").write_text(json.dumps(
        {"retrieved": "2026-01-01T00:00:00Z", "catalogue": {}, "matched": {"tpu_chip_hour": {}, "skus": {}}}))
    assert cost.table()["source"]["kind"] == "bundled"
    (cache / "prices-2026-12-01.json").write_text("{not json")
    assert cost.table()["source"]["kind"] == "bundled"


def test_no_key_and_no_credentials_is_one_line_naming_both_ways(cli, cache, no_cloud) -> None:
    code, _out, err = cli("prices", "update")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "--api-key" in err and "TPUBUILD_BILLING_API_KEY" in err and "gcloud auth application-default login" in err


def test_show_lists_the_monthly_rows_with_their_skus(cli, cache) -> None:
    code, out, _ = cli("prices", "show", "--region", "us-central1")
    assert code == 0 and "Per month, in USD:" in out
    assert re.search(r"kept_gb_month\.snapshot +us-central1 +\$0\.05/GB-month +SKU RECN-0110-SNP0 "
                     r"\"Storage PD Snapshot in Iowa\", effective 2026-11-28\n", out)
    assert re.search(r"kept_gb_month\.snapshot_multi_region +us-central1 +\$0\.065/GB-month +SKU 34CF-7D88-5D40 "
                     r"\"Storage PD Snapshot in US\"", out)
    assert re.search(r"kept_gb_month\.bucket +us-central1 +\$0\.02/GB-month +SKU E5F0-6A5D-7BAD", out)  # past the free tier
    code, raw, _ = cli("prices", "show", "--format", "json")
    rows = {m["row"]: m for m in json.loads(raw)["per_month"]}
    assert {"filestore_gib_month.BASIC_HDD", "kept_gb_month.bucket"} <= set(rows)
    assert rows["filestore_gib_month.BASIC_HDD"]["confirmed"] and "Iowa/South Carolina/Oregon" in rows[
        "filestore_gib_month.BASIC_HDD"]["basis"]
