"""Calendar-mode advice (builder/commands/advice.py, builder/cloud/advice.py) with the real google-cloud-compute
``AdviceClient`` (REST) against a local fake of ``regions/{region}/advice/calendarMode``: per zone a
recommended window with the money it commits, NO_CAPACITY or CONDITIONS_NOT_MET with Google's details;
``plan`` on a calendar file shows the advice when credentials exist and says plainly when it could not ask."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO
from tests.support.fakes.advice import FakeAdvice

CALENDAR = REPO / "examples" / "mig-v6e-32-calendar.env"  # v6e-32 in us-east5-a, 7 days from 2026-12-12


@pytest.fixture
def fake():
    found = FakeAdvice({"us-east5-a": ("RECOMMENDED", "2026-12-13T00:00:00Z", "2026-12-20T00:00:00Z"),
                        "us-east5-b": ("CONDITIONS_NOT_MET", "the window must start at least 24 hours from now")}).start()
    yield found
    found.stop()


def test_capacity_calendar_prints_each_zone_and_what_a_window_commits(cli, fake) -> None:
    code, out, err = cli("--values", CALENDAR, "capacity", "--calendar", "--start-within", "2", "--endpoint", fake.url)
    assert code == 0, err
    assert "us-east5: v6e-32 (32 chips) for 7 days, starting 2026-12-12T00:00:00Z to 2026-12-14T00:00:00Z" in out
    # the Calendar Mode SKU's $1.89/chip-h × 32 chips × 168 h
    assert ("us-east5-a: RECOMMENDED 2026-12-13T00:00:00Z → 2026-12-20T00:00:00Z; commits $10,160.64 "
            "($1.89/chip-h × 32 chips × 168 h)") in out
    assert "us-east5-b: CONDITIONS_NOT_MET (the window must start at least 24 hours from now)" in out
    [(path, body)] = fake.requests
    assert path == "/compute/v1/projects/my-tpu-project/regions/us-east5/advice/calendarMode"
    spec = body["futureResourcesSpecs"]["slice"]
    assert spec["targetResources"]["aggregateResources"] == {
        "vmFamily": "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E", "acceleratorCount": "32", "workloadType": "BATCH"}
    assert spec["timeRangeSpec"]["minDuration"] == spec["timeRangeSpec"]["maxDuration"] == "604800s"
    assert sorted(spec["locationPolicy"]["locations"]) == ["zones/us-east5-a", "zones/us-east5-b"]
    code, raw, _ = cli("--values", CALENDAR, "capacity", "--calendar", "--endpoint", fake.url, "--format", "json")
    info = json.loads(raw)
    assert code == 0 and info["committed"] == 10160.64 and [z["status"] for z in info["zones"]] == [
        "RECOMMENDED", "CONDITIONS_NOT_MET"]


def test_no_capacity_anywhere_exits_1_and_names_each_zone(cli) -> None:
    fake = FakeAdvice({"us-east5-a": ("NO_CAPACITY", "no v6e capacity in the requested window"),
                       "us-east5-b": ("NO_CAPACITY", "no v6e capacity in the requested window")}).start()
    try:
        code, out, _err = cli("--values", CALENDAR, "capacity", "--calendar", "--endpoint", fake.url)
    finally:
        fake.stop()
    assert code == 1 and out.count("NO_CAPACITY (no v6e capacity in the requested window)") == 2


def test_a_file_that_is_not_calendar_mode_is_bad_input(cli, fake) -> None:
    code, _out, err = cli("--values", REPO / "examples" / "mig-v6e-16-flex.env", "capacity", "--calendar",
                          "--endpoint", fake.url)
    assert code == 2 and "TPU_PROVISIONING" in err and len(err.strip().splitlines()) == 1 and not fake.requests


def test_plan_shows_the_advice_with_credentials_and_says_when_it_could_not_ask(cli, fake, monkeypatch) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")  # credentials exist (compare.has_credentials)
    monkeypatch.setenv("TPUBUILD_COMPUTE_ENDPOINT", f"{fake.url}/compute/v1")
    code, out, err = cli("--values", CALENDAR, "plan", "--applied", "none")
    assert code == 0, err
    assert "Calendar-mode advice from Compute Engine, us-east5" in out and "us-east5-a: RECOMMENDED" in out
    code, raw, _ = cli("--values", CALENDAR, "plan", "--applied", "none", "--format", "json")
    assert json.loads(raw)["calendar_advice"]["zones"][0]["status"] == "RECOMMENDED"
    fake.stop()  # the service is gone: the plan goes on and says why it has no advice
    code, out, err = cli("--values", CALENDAR, "plan", "--applied", "none")
    assert code == 0 and "Calendar-mode advice: not asked (could not ask Compute Engine: asking Compute Engine" in out


def test_plan_without_credentials_says_it_did_not_ask(cli, no_cloud) -> None:
    code, out, err = cli("--values", CALENDAR, "plan", "--applied", "none")
    assert code == 0, err
    assert "Calendar-mode advice: not asked (no Google Cloud credentials" in out
