"""The regional-availability preflight (builder/planning/egress.py ``services``, run by
``tpubuild check-capacity`` and ``tpubuild plan --check`` before the quota): Cloud Scheduler (the
TTL's and the health check's jobs) and Filestore are offered where the pipeline makes them (the
builder image's Artifact Registry repository: initialize, tests/integration/test_initialize_image.py), as each service's own locations API
says, read by the real clients against local fakes (tests/support/fakes/locations.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import EXAMPLES
from tests.support.fakes.quotas import FakeQuotas, serving

V4 = EXAMPLES / "vm-v4-32.env"  # us-central2 (the v4 zone), on demand: no health check
SPOT_MIG = EXAMPLES / "mig-v6e-16-spot.env"  # us-east5, TPU_RECOVERY on by default for spot


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeQuotas]:
    yield from serving(monkeypatch)


def test_every_service_offered_passes_and_says_so(fake, cli):
    code, out, err = cli("--values", SPOT_MIG, "check-capacity")
    assert code == 0, err
    assert "tpubuild: regions: offered: Cloud Scheduler in us-east5, Filestore in us-east5" in out
    # the builder image's repository is initialize's (tests/integration/test_initialize_image.py)
    assert not fake.locations["artifactregistry"].requests
    assert all(fake.locations[s].requests == ["/v1/projects/my-tpu-project/locations"] for s in ("scheduler", "filestore"))


@pytest.mark.parametrize("service, words", [
    ("scheduler", "Cloud Scheduler is not offered in us-central2 (cloud.google.com/scheduler/docs/locations), where "
                  "the Cloud Scheduler jobs of ENV_TTL_HOURS would be made"),
    ("filestore", "Filestore is not offered in us-central2"),
])
def test_a_region_without_a_service_stops_in_one_line_before_the_quota(fake, cli, make_env, service, words):
    values = make_env(V4, ENV_TTL_HOURS="8")
    fake.locations[service].offered = ["us-central1", "us-east1", "europe-west4", "us-central1-a"]
    code, out, err = cli("--values", values, "check-capacity")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and words in lines[0], err
    assert "choose a ZONE in a region that offers it (it does in europe-west4, us-central1, us-east1)" in lines[0]
    assert not fake.requests  # before the quota is read


def test_no_scheduler_job_no_scheduler_read(fake, cli):
    code, out, err = cli("--values", V4, "check-capacity")  # on demand, no TTL: no job
    assert not fake.locations["scheduler"].requests and "Cloud Scheduler" not in out


def test_locations_these_credentials_cannot_list_are_said_and_not_refused(fake, cli):
    fake.locations["filestore"].denied = True
    code, out, err = cli("--values", SPOT_MIG, "check-capacity")
    assert code == 0 and "region not checked: the locations of Filestore are not readable by these credentials" in err, err


def test_plan_check_runs_the_same_preflight(fake, cli, make_env):
    fake.locations["scheduler"].offered = ["us-central1"]
    code, out, err = cli("--values", SPOT_MIG, "plan", "--action", "create", "--check")
    assert code == 1 and "Cloud Scheduler is not offered in us-east5" in err and len(err.strip().splitlines()) == 1
