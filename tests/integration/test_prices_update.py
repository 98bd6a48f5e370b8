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
EXAMPLES = ["mig-v6e-16-flex.env", "mig-v6e-32-calendar.env", "mig-v6e-16-spot.env", "mig-tpu7x-128.env"]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "prices"
    monkeypatch.setenv("TPUBUILD_PRICES_CACHE", str(folder))
    return folder


def _plan(cli, name: str) -> tuple[str, dict]:
    path = REPO / "examples" / name
    code, out, err = cli("--values", path, "plan", "--applied", "none")
    assert code == 0, err
    code, raw, err = cli("--values", path, "plan", "--applied", "none", "--format", "json")
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
    n = len(recorded()["6F81-5844-456A"])
    assert len(fake.requests) == -(-n // 7) and f"read {n} SKUs" in out  # every page, each once
    [written] = cache.glob("prices-*.json")
    assert written.name == "prices-2026-11-28.json" and str(written) in out
    code, shown, _ = cli("prices", "show", "--generation", "v6e", "--region", "us-east5")
    assert code == 0 and "from the Cloud Billing Catalog read 2026-11-28T00:00:00Z" in shown
    assert '"DWS Defined Duration V6e running in Columbus", effective 2026-08-07' in shown


@pytest.mark.parametrize("name", EXAMPLES)
def test_other_prices_change_every_tpu_figure_of_the_plan_and_nothing_else(cli, cache, name) -> None:
    before_text, before = _plan(cli, name)
    assert before["cost"]["prices"]["source"] == "bundled"
    fake = FakeCatalog(scaled(recorded(), 1.5)).start()
    try:
        _update(cli, fake)
    finally:
        fake.stop()
    after_text, after = _plan(cli, name)
    assert after["cost"]["prices"]["source"] == "catalogue" and "Cloud Billing Catalog" in after_text
    assert {k: v for k, v in before.items() if k != "cost"} == {k: v for k, v in after.items() if k != "cost"}
    old, new = before["cost"]["after"]["items"], after["cost"]["after"]["items"]
    for o, n in zip(old, new, strict=True):
        tpu = o["what"].startswith("TPU ")
        assert n["hourly"] == pytest.approx(o["hourly"] * (1.5 if tpu else 1.0)), (o, n)
        assert (n["basis"] != o["basis"]) == tpu  # a new effective date on the SKU
    for o, n in zip(before["cost"]["totals"], after["cost"]["totals"], strict=True):
        # totals of storage alone (the checkpoint copy's bucket, the Filestore billed before a calendar
        # window) are hand-kept rates, not catalogue SKUs: they stay
        scale = 1.0 if o["kind"] in ("checkpoint_copy", "calendar_before_window") else 1.5
        assert n["total"] == pytest.approx(o["total"] * scale, abs=0.011), (o, n)
    moved = [(a, b) for a, b in zip(before_text.splitlines(), after_text.splitlines(), strict=True) if a != b]
    assert moved and all(re.search(r"\$|Billing Catalog|bundled snapshot", a) for a, _ in moved), moved


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
    code, out, _ = cli("prices", "show", "--generation", "v3")
    assert code == 0 and "the bundled snapshot's tpu_chip_hour.v3.on-demand.us-central1 (no catalogue SKU" in out
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


def test_show_lists_the_hand_kept_monthly_rows_as_such(cli, cache) -> None:
    code, out, _ = cli("prices", "show", "--region", "us-central1")
    assert code == 0 and "Per month, hand-kept rows of the bundled snapshot (not read from the catalogue" in out
    assert re.search(r"kept_gb_month\.snapshot +us-central1 +\$0\.05/GB-month", out)
    code, raw, _ = cli("prices", "show", "--format", "json")
    assert {"filestore_gib_month.BASIC_HDD", "kept_gb_month.bucket"} <= {m["row"] for m in json.loads(raw)["per_month"]}
