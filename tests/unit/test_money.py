"""Money you can trust (builder/catalogue/cost.py, builder/planning/money.py, builder/planning/replacement.py): every
combination ``validate`` accepts has a price, no shipped example prints "unknown", and the plan
shows what is committed (calendar, flex-start, TTL), what a destroy leaves billed, and the
make-before-break overlap of both slices with its upper bound: the same record in text and JSON."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from builder.catalogue import cost
from builder.config import load, load_text
from builder.facts import generations
from builder.planning import money
from builder.planning.plan import make_plan
from tests.conftest import rewrite_env

REPO = Path(__file__).resolve().parents[2]
SHIPPED = [REPO / "values.env", *sorted((REPO / "examples").glob("*.env"))]


def _plan(cli, path: Path, *extra: str) -> tuple[str, dict]:
    code, out, err = cli("--values", path, "plan", "--applied", "none", *extra)
    assert code == 0, err
    code, raw, err = cli("--values", path, "plan", "--applied", "none", "--format", "json", *extra)
    assert code == 0, err
    return out, json.loads(raw)


def _strings(node: object) -> list[str]:
    """Every string value in a JSON document (its keys, like ``unknown_why``, left out)."""
    if isinstance(node, dict):
        return [v for x in node.values() for v in _strings(x)]
    if isinstance(node, list):
        return [v for x in node for v in _strings(x)]
    return [node.lower()] if isinstance(node, str) else []


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_example_is_priced_in_full(cli, path: Path) -> None:
    """No shipped example prints "unknown" (text or JSON); a figure that stands in for an
    unpublished price (TPU7x, flex-start, calendar, a reservation, Hyperdisk ML's throughput) is
    said once, with the figure used, and the total is marked as a bound."""
    out, info = _plan(cli, path)
    after = info["cost"]["after"]
    assert "unknown" not in out.lower() and not [v for v in _strings(info["cost"]) if "unknown" in v], path.name
    assert after["complete"] and all(i["hourly"] is not None for i in after["items"]), path.name
    for item in after["items"]:
        assert bool(item["bound"]) == bool(item["bound_why"]), item
    bounded = [i for i in after["items"] if i["bound"]]
    assert after["bound"] == (cost.combine(i["bound"] for i in bounded) or None)
    for line in after["bounds"]:  # said once, in the text too
        assert out.count(line) == 1, line
    if after["bound"]:
        assert after["total"].startswith(cost.bound_prefix(after["bound"]))
        assert f"Cost per hour: {after['total']}" in out
    s = load(path)
    if s.topology.generation == "tpu7x":  # priced from its own multi-regional SKU, never v5p's rate as a floor
        [tpu] = [i for i in after["items"] if i["what"].startswith("TPU ")]
        assert 'SKU 0F71-4391-B6CA "TPU7x running in Americas"' in tpu["basis"] and tpu["bound"] != "at least"
        assert not any("v5p" in line for line in after["bounds"]), after["bounds"]


def _accepted():
    for gen in generations.records():
        for path in gen.paths:
            for size in gen.sizes:
                accel = f"{gen.prefix}-{size}"
                pod = gen.hosts_of(gen.chips_of(size)) > 1
                for zone in gen.zones.get(accel, gen.zones.get("*", ())):
                    for mode in gen.provisioning_on(path):
                        if mode == "calendar" and zone not in (gen.calendar.zones if gen.calendar else ()):
                            continue
                        yield gen.name, zone.rsplit("-", 1)[0], mode, pod


def test_every_generation_mode_and_region_the_offers_table_accepts_is_priced() -> None:
    """Every generation × provisioning mode × zone of builder/data/tpu_offers.json (single host and
    pod slices alike) has a price of its own region, or says "no published price" and what stands in:
    another region's figure (``~``) or the on-demand rate as a ceiling whose bound the plan states."""
    missing = []
    for gen, region, mode, pod in sorted(set(_accepted())):
        found = cost.tpu_price(gen, region, mode, pod=pod)
        bound, because = found.bound, found.bound_why
        said = "no published" in found.note or "no published" in because
        if (found.value is None or found.value <= 0 or (found.approximate and not said)
                or bool(bound) != bool(because) or not found.basis):
            missing.append((gen, region, mode, "pod" if pod else "single host", found.unknown_why))
    assert not missing, missing
    for gen in generations.records():
        for disk in gen.shared_pd_types:
            row = cost.table()["disk_gb_month"][disk]
            assert row["price"]["default"] > 0 and bool(row.get("bound")) == bool(row.get("why")), disk
    assert cost.table()["disk_gb_month"]["hyperdisk-balanced"]["price"]["default"] > 0


def test_pod_slices_have_their_own_rate() -> None:
    """v2 and v3 Pod types are priced per chip apart from single devices (the SKU catalog's
    v3-32 is $32/h in europe-west4, a v3-8 $8.80/h)."""
    assert cost.tpu_chip_hour("v3", "europe-west4", "on-demand", pod=True)[0] * 16 == 32.0
    assert cost.tpu_chip_hour("v3", "europe-west4", "on-demand")[0] * 4 == pytest.approx(8.8)


def test_each_mode_is_priced_from_its_own_sku_and_a_missing_one_is_said() -> None:
    """flex-start and calendar read their DWS / Calendar Mode SKUs; TPU7x its multi-regional SKU; where the
    catalogue has no SKU for a mode the on-demand rate stands in as a ceiling and says so; no floor."""
    flex, cal = cost.tpu_price("v6e", "us-east5", "flex-start"), cost.tpu_price("v6e", "us-east5", "calendar")
    assert (flex.value, flex.bound) == (1.35, "") and "DWS Defined Duration V6e" in flex.basis
    assert (cal.value, cal.bound) == (1.89, "") and "Calendar Mode" in cal.basis
    for region in ("us-central1", "us-east1", "us-west1"):  # each region the SKU lists
        seven = cost.tpu_price("tpu7x", region, "on-demand")
        assert (seven.value, seven.approximate, seven.bound) == (12.0, False, "") and "0F71-4391-B6CA" in seven.basis
    missing = cost.tpu_price("v6e", "us-east1", "flex-start")  # no DWS SKU in us-east1
    assert missing.value == 2.7 and missing.bound == "at most" and "no published v6e flex-start price" in missing.bound_why
    assert cost.tpu_bound("tpu7x", "on-demand") == ("", "") and cost.tpu_bound("v6e", "spot", "us-east5") == ("", "")
    assert "the day's price" in cost.tpu_price("v6e", "us-east5", "spot").note
    assert cost.tpu_bound("tpu7x", "reservation")[0] == "at most"
    assert cost.combine(["", "at most", "at most"]) == "at most" and cost.combine(["at most", "at least"]) == "stand-in"


def test_the_calendar_example_shows_its_committed_total(cli) -> None:
    path = REPO / "examples" / "mig-v6e-32-calendar.env"
    out, info = _plan(cli, path)
    [total] = [t for t in info["cost"]["totals"] if t["kind"] == "calendar_committed"]
    s = load(path)
    tpu = [i for i in info["cost"]["after"]["items"] if i["module"] == "mig"]
    assert total["hours"] == s.calendar_days * 24 == 168 and total["hourly"] == sum(i["hourly"] for i in tpu)
    # the Calendar Mode SKU's $1.89/chip-h (not on-demand's $2.70 as a ceiling): 32 chips × 168 h
    assert total["total"] == round(total["hourly"] * 168, 2) == 10160.64 and total["bound"] == ""
    assert f"  {total['text']}" in out.split("Totals:")[1] and "$10,160.64" in total["text"]


def test_flex_start_shows_the_most_it_can_cost_and_a_ttl_the_cost_until_it(cli, tmp_path) -> None:
    text = (REPO / "examples" / "mig-v6e-16-flex.env").read_text(encoding="utf-8")
    path = tmp_path / "flex.env"
    path.write_text(rewrite_env(text, ENV_TTL_HOURS="8"), encoding="utf-8")
    out, info = _plan(cli, path)
    totals = {t["kind"]: t for t in info["cost"]["totals"]}
    s = load(path)
    flex, ttl = totals["flex_max"], totals["until_ttl"]
    assert flex["hours"] == s.max_run_hours and flex["total"] == round(flex["hourly"] * s.max_run_hours, 2)
    assert ttl["hours"] == 8 and ttl["total"] == round(info["cost"]["after"]["hourly_known"] * 8, 2)
    for t in (flex, ttl):
        assert f"  {t['text']}\n" in out


def test_destroy_shows_what_keeps_billing_every_month(cli) -> None:
    out, info = _plan(cli, REPO / "values.env", "--action", "destroy")
    [tail] = [t for t in info["cost"]["totals"] if t["kind"] == "monthly_after_destroy"]
    s = load(REPO / "values.env")
    kept = cost.table()["kept_gb_month"]
    snap = kept["snapshot"]["price"][s.region] * s.shared_pd_size_gb
    backup = kept["filestore_backup"]["price"]["default"] * s.shared_fs_capacity_gb
    assert tail["per"] == "month" and tail["total"] == round(snap + backup, 2) and tail["bound"] == "at most"
    assert [i["monthly"] is None for i in tail["items"]] == [False, False, True]  # the buckets: a rate only
    assert s.state_bucket in tail["text"] and f"  {tail['text']}\n" in out and "$0.00/h" in out


def test_a_destroyed_calendar_reservation_bills_until_its_end(monkeypatch) -> None:
    s = load(REPO / "examples" / "mig-v6e-32-calendar.env")  # "+14d", 7 days: from 2026-12-12T00:00Z
    plan = make_plan(s, "destroy")
    after = cost.Estimate(())
    start = datetime.datetime(2026, 12, 15, 8, tzinfo=datetime.timezone.utc)  # three days into the seven
    [_, left] = money.totals(s, plan, after, False, now=start)
    assert left.kind == "calendar_after_destroy" and left.hours == 88 and left.total == round(88 * left.hourly, 2)
    # without a time given, the one clock (builder/config/calendar.py's now, TPUBUILD_NOW) is read
    monkeypatch.setenv("TPUBUILD_NOW", "2026-12-17T00:00:00Z")
    [_, left] = money.totals(s, plan, after, False)
    assert left.hours == 48 and left.total == round(48 * left.hourly, 2)
    monkeypatch.setenv("TPUBUILD_NOW", "2026-12-19T00:00:00Z")  # the window has ended: nothing billed on
    assert [t.kind for t in money.totals(s, plan, after, False)] == ["monthly_after_destroy"]


def test_the_overlap_counts_both_slices_with_an_upper_bound(cli, tmp_path) -> None:
    """v3-32 → v3-128: both slices bill from the new one's create to the old one's release; the
    expected figure uses the step estimates, the bound the rendered step timeouts."""
    text = (REPO / "values.env").read_text(encoding="utf-8")
    new = tmp_path / "new.env"
    new.write_text(rewrite_env(text, TPU_ACCELERATOR_TYPE="v3-128"), encoding="utf-8")
    code, raw, err = cli("--values", new, "plan", "--action", "update", "--tpu", "--applied", REPO / "values.env",
                         "--format", "json")
    assert code == 0, err
    rep = json.loads(raw)["replacement"]
    old_s, new_s = load_text(text, Path("old.env")), load(new)
    old_h = cost.estimate(old_s, frozenset({"tpu"})).known
    new_h = cost.estimate(new_s, frozenset({"tpu"})).known
    assert (rep["old_hourly"], rep["new_hourly"]) == (old_h, new_h) == (32.0, 128.0)
    assert rep["overlap_cost"] == round((old_h + new_h) * rep["overlap_minutes"] / 60, 2)
    assert rep["overlap_cost_max"] == round((old_h + new_h) * rep["overlap_minutes_max"] / 60, 2) > rep["overlap_cost"]
    assert rep["overlap_minutes_max"] >= 30 + rep["overlap_minutes"]  # the checkpoint wait alone may take 30 min
    assert f"at most ${rep['overlap_cost_max']:,.2f}" in rep["text"] and "v3-128 at $128.00/h" in rep["text"]


def test_a_calendar_destroy_does_not_read_as_nothing_billed(cli) -> None:
    """The destroy's $0.00/h is the environment's: the hourly line names the reservation's rate,
    which goes on until its end, in text and JSON alike."""
    out, info = _plan(cli, REPO / "examples" / "mig-v6e-32-calendar.env", "--action", "destroy")
    [left] = [t for t in info["cost"]["totals"] if t["kind"] == "calendar_after_destroy"]
    said = f"except the calendar-mode reservation, which a destroy cannot cancel: ${left['hourly']:,.2f}/h"
    assert said in info["cost"]["change"] and f"Cost per hour: {info['cost']['change']}" in out
