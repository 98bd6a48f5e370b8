"""The capacity check over a candidate list (builder/config/candidates.py): every zone × mode is
read in one call, against the local fakes of Cloud Quotas and Compute Engine that the real
requests session reaches; the check passes when one candidate can hold the slice and says which,
and fails in one line naming each refusal when none can."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from builder.config import load
from builder.config.candidates import at
from builder.planning import capacity
from tests.conftest import EXAMPLES
from tests.support.fakes.quotas import FakeQuotas, quota_info, serving

MIG_SPOT = EXAMPLES / "mig-v6e-16-spot.env"  # v6e-16: 16 chips
COMPUTE = "compute.googleapis.com"
LIST = {"ZONE": "us-east5-b,us-central1-b", "TPU_PROVISIONING": "spot,on-demand"}


@pytest.fixture
def quotas(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeQuotas]:
    yield from serving(monkeypatch)


def _quotas(fake: FakeQuotas, values, spot: dict[str, int], standard: dict[str, int]) -> None:
    s = load(values)
    for c, regions in zip(s.candidates[:2], (spot, standard)):
        need = capacity.need(at(s, c))
        assert isinstance(need, capacity.Need), need
        extra = dict(need.dimensions_of(need.quota_id)) or None
        fake.infos[(need.project, COMPUTE, need.quota_id)] = quota_info(need.project, COMPUTE, need.quota_id,
                                                                         regions, extra, regional=True)


def test_every_candidate_is_read_and_the_first_that_can_hold_it_is_named(quotas, cli, make_env):
    values = make_env(MIG_SPOT, **LIST)
    _quotas(quotas, values, spot={"us-east5": 8, "us-central1": 0}, standard={"us-east5": 0, "us-central1": 16})
    code, out, err = cli("--values", values, "check-capacity")
    assert code == 0, err
    assert "us-east5-b spot: refused: quota PREEMPTIBLE-TPU-V6E-per-project-region" in out
    assert "us-central1-b on-demand: quota TPUS-PER-TPU-FAMILY-per-project-region" in out
    assert ("1 of 4 candidates can hold the slice; the first, us-central1-b on-demand (candidate 4), holds it"
            in out)
    # every candidate read in one call, each quota's QuotaInfo (every zone's values) fetched once
    assert len(quotas.requests) == 2 and len(set(quotas.requests)) == 2


def test_no_candidate_can_hold_it_fails_in_one_line_naming_each(quotas, cli, make_env):
    values = make_env(MIG_SPOT, **LIST)
    _quotas(quotas, values, spot={"us-east5": 8, "us-central1": 8}, standard={"us-east5": 0, "us-central1": 4})
    code, out, err = cli("--values", values, "check-capacity")
    assert code == 1
    (line,) = err.strip().splitlines()
    assert line.startswith("tpubuild: error: none of the 4 candidates can hold the slice: us-east5-b spot: ")
    for label in ("us-east5-b on-demand", "us-central1-b spot", "us-central1-b on-demand"):
        assert f"; {label}: quota " in line, label


def test_plan_check_puts_each_candidates_outcome_in_the_table(quotas, cli, make_env):
    values = make_env(MIG_SPOT, **LIST)
    _quotas(quotas, values, spot={"us-east5": 16, "us-central1": 0}, standard={"us-east5": 0, "us-central1": 0})
    code, out, err = cli("--values", values, "plan", "--applied", "none", "--check")
    assert code == 0, err
    table = out[out.index("Candidates"):].split("\n\n")[0]
    assert "holds" in table.splitlines()[2] and "refused" in table.splitlines()[3], table
    assert "tpubuild: capacity: 1 of 4 candidates can hold the slice; the first, us-east5-b spot" in out


# --- calendar mode: Google's calendar-mode advice for a request not submitted yet ---

MIG_CALENDAR = EXAMPLES / "mig-v6e-32-calendar.env"  # v6e-32: 32 chips, calendar, us-east5-a, "+14d"


def _advice_path(s) -> str:
    return f"/compute/v1/projects/{s.project_id}/regions/{s.region}/advice/calendarMode"


@pytest.mark.parametrize("offered", [True, False])
def test_calendar_advice_is_read_for_the_window_and_said_never_refused(quotas, cli, offered):
    s = load(MIG_CALENDAR)
    spec = {"startTime": s.calendar_start, "endTime": "2026-12-19T00:00:00Z"}
    spec.update({"location": "zones/us-east5-a"} if offered else
                {"otherLocations": {"zones/us-east5-a": {"status": "NO_CAPACITY"}}})
    quotas.advice[_advice_path(s)] = {"recommendations": [{"recommendationsPerSpec": {"tpubuild": spec}}]}
    code, out, err = cli("--values", MIG_CALENDAR, "check-capacity")
    assert code == 0, err
    ((path, body),) = quotas.posted
    sent = body["futureResourcesSpecs"]["tpubuild"]
    assert path == _advice_path(s) and sent["targetResources"]["aggregateResources"] == {
        "vmFamily": "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E", "acceleratorCount": "32"}
    assert sent["timeRangeSpec"]["startTimeNotEarlierThan"] == s.calendar_start
    assert sent["timeRangeSpec"]["minDuration"] == f"{s.calendar_days * 86400}s"
    assert sent["locationPolicy"] == {"locations": {"zones/us-east5-a": {"preference": "ALLOW"}}}
    if offered:
        assert f"calendar-mode advice: 32 chips of VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E are available in us-east5-a" in out
    else:
        (line,) = err.strip().splitlines()
        assert "calendar-mode advice: Google does not offer 32 chips in us-east5-a from " in line and "(NO_CAPACITY)" in line and "may be declined" in line
