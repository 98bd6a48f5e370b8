"""Calendar mode's window (builder/config/calendar.py) against an injected day, and the nearest
zone a hint names (builder/config/offers.py ``nearest``)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from builder.config import calendar, load_text
from builder.config.zones import nearest
from builder.facts import generations
from builder.facts.errors import BadInput, ConfigErrors
from tests.conftest import EXAMPLES

CAL = EXAMPLES / "mig-v6e-32-calendar.env"
DAY = datetime.datetime(2027, 2, 1, 9, 30, tzinfo=datetime.timezone.utc)


def _check(start: str, days: int = 7, today: datetime.datetime = DAY) -> tuple[dict, list[tuple[str, str, str]]]:
    v = {"calendar_start": start, "calendar_days": days, "zone": "us-east5-a"}
    failed: list[tuple[str, str, str]] = []

    def fail(key: str, what: str, fix: str) -> None:
        failed.append((key, what, fix))
        raise RuntimeError  # a rule group stops at its first failure, as in builder.config

    try:
        calendar.check(v, "calendar", "TPU_PROVISIONING", generations.get("v6e"), fail, today=today)
    except RuntimeError:
        pass
    return v, failed


@pytest.mark.parametrize("start, ok", [
    ("2027-02-02T09:30:00Z", True),      # a day ahead
    ("2027-06-01T09:30:00Z", True),      # the 120th day
    ("2027-06-01T09:30:01Z", False),     # a second beyond Google's advance window
    ("2035-01-15T08:00:00Z", False),     # the 2035
    ("2027-01-30T00:00:00Z", True),      # started, not ended: how an existing request reads on an update
    ("2027-01-20T00:00:00Z", False),     # ended on 2027-01-27
])
def test_the_window_is_checked_against_the_day(start: str, ok: bool) -> None:
    _, failed = _check(start)
    assert (failed == []) is ok, failed
    if not ok:
        assert failed[0][0] == "TPU_CALENDAR_START" and '"2027-02-15T00:00:00Z"' in failed[0][2]


def test_a_relative_start_is_resolved_against_the_day() -> None:
    v, failed = _check("+14d")
    assert failed == [] and v["calendar_start"] == "2027-02-15T00:00:00Z"
    assert calendar.resolve_start("+1d", DAY) == "2027-02-02T00:00:00Z"
    assert calendar.resolve_start("2027-03-01T08:00:00Z", DAY) == "2027-03-01T08:00:00Z"


def test_the_day_is_pinned_by_tpubuild_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TPUBUILD_NOW", "2027-02-01T09:30:00Z")
    assert calendar.now() == DAY
    monkeypatch.setenv("TPUBUILD_NOW", "tomorrow")
    with pytest.raises(BadInput, match="TPUBUILD_NOW: 'tomorrow' is not a UTC time"):
        calendar.now()


def _settings(start: str, monkeypatch: pytest.MonkeyPatch, today: str = "2027-02-01T09:30:00Z"):
    monkeypatch.setenv("TPUBUILD_NOW", today)
    text = CAL.read_text().replace('TPU_CALENDAR_START="+14d"', f'TPU_CALENDAR_START="{start}"')
    return load_text(text, Path(CAL))


@pytest.mark.parametrize("start, refused", [
    ("2027-01-31T00:00:00Z", "is in the past"), ("2027-02-02T00:00:00Z", "is less than a day ahead"),
    ("2027-02-02T09:30:00Z", None), ("+1d", "is less than a day ahead"), ("+2d", None),
])
def test_a_create_needs_a_start_at_least_a_day_ahead(start: str, refused: str | None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = calendar.create_refusal(_settings(start, monkeypatch))
    assert (refusal is None) if refused is None else (refused in refusal.message)


def test_validate_refuses_what_a_create_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """validate reports what plan's default action (create) refuses; an update still plans."""
    monkeypatch.setenv("TPUBUILD_NOW", "2027-02-01T09:30:00Z")
    text = CAL.read_text().replace('TPU_CALENDAR_START="+14d"', 'TPU_CALENDAR_START="2027-01-31T00:00:00Z"')
    with pytest.raises(ConfigErrors) as exc:
        load_text(text, Path(CAL), later=True)
    [error] = exc.value.errors
    assert error.key == "TPU_CALENDAR_START" and "is in the past" in error.what
    assert "an update of the request already made still plans: tpubuild plan --action update" in error.fix
    assert load_text(text, Path(CAL)).calendar_start == "2027-01-31T00:00:00Z"  # other commands: the action decides


def test_only_a_relative_start_is_refused_on_submit(monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = calendar.submit_refusal(_settings("+14d", monkeypatch))
    assert refusal is not None and 'TPU_CALENDAR_START="2027-02-15T00:00:00Z"' in refusal.message
    assert calendar.submit_refusal(_settings("2027-02-15T00:00:00Z", monkeypatch)) is None


def test_duration_is_1_to_90_days() -> None:
    text = CAL.read_text()
    for days, ok in (("1", True), ("90", True), ("0", False), ("91", False)):
        changed = text.replace('TPU_CALENDAR_DAYS="7"', f'TPU_CALENDAR_DAYS="{days}"')
        if ok:
            assert load_text(changed, Path(CAL)).calendar_days == int(days)
        else:
            with pytest.raises(ConfigErrors, match="TPU_CALENDAR_DAYS: .* out of range; use 1 to 90"):
                load_text(changed, Path(CAL))


@pytest.mark.parametrize("zone, offered, first", [
    ("us-east1-d", ("asia-northeast1-b", "europe-west4-a", "us-east5-a", "us-east5-b"), "us-east5-a"),
    ("us-east5-c", ("asia-northeast1-b", "europe-west4-a", "us-east5-a", "us-east5-b"), "us-east5-a"),
    ("europe-west1-b", ("asia-northeast1-b", "europe-west4-a", "us-east5-a"), "europe-west4-a"),
    ("northamerica-northeast1-a", ("asia-northeast1-b", "us-east5-a"), "us-east5-a"),
    ("asia-east1-c", ("europe-west4-a", "us-east5-a", "asia-northeast1-b"), "asia-northeast1-b"),
    ("us-central1-a", ("asia-northeast1-b", "us-east5-a", "us-central1-c"), "us-central1-c"),
])
def test_the_nearest_zone_comes_first(zone: str, offered: tuple[str, ...], first: str) -> None:
    assert nearest(zone, offered)[0] == first


def test_the_calendar_zone_table_is_google_s() -> None:
    """builder/data/tpu_offers.json, from Google's calendar-mode page (its sources say which)."""
    zones = {g.name: g.calendar.zones for g in generations.records() if g.calendar is not None}
    assert zones == {"v5p": ("us-east5-a",), "v6e": ("asia-northeast1-b", "europe-west4-a", "us-east5-a", "us-east5-b"),
                     "tpu7x": ("us-central1-c",)}
