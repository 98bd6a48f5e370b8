"""The hosts' egress preflight (builder/planning/egress.py, run first by ``tpubuild check-capacity``
and ``tpubuild plan --check``) on both architectures, through the real requests session tpubuild
builds for Compute Engine, against the local fake (tests/support/fakes/quotas.py): a subnetwork
without Private Google Access, or with no Cloud NAT for it, stops with one line and exit 1 before
the quota is even read, so before anything is billed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from builder.config import load
from tests.conftest import EXAMPLES
from tests.support.fakes.quotas import FakeQuotas, nat, routers, serving, subnetwork

VALUES = [EXAMPLES / "vm-v4-32.env", EXAMPLES / "mig-v6e-16-spot.env"]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeQuotas]:
    yield from serving(monkeypatch)


def paths(values) -> tuple[str, str, str, str]:
    s = load(values)
    base = f"/compute/v1/projects/{s.project_id}/regions/{s.region}"
    return f"{base}/subnetworks/{s.subnetwork or s.network}", f"{base}/routers", s.project_id, s.region


@pytest.mark.parametrize("values", VALUES, ids=lambda p: p.name)
def test_a_ready_network_passes_and_says_what_it_found(fake, cli, values):
    code, out, err = cli("--values", values, "check-capacity")
    assert code == 0, err
    assert "tpubuild: network: the hosts reach Google APIs and the internet from subnetwork default" in out
    assert "Cloud NAT nat on router nat-router" in out
    subnet, routers_path, _p, _r = paths(values)
    assert fake.network_requests == [subnet, routers_path]


@pytest.mark.parametrize("values", VALUES, ids=lambda p: p.name)
@pytest.mark.parametrize("case, words", [
    ("no-pga", "has no Private Google Access"),
    ("no-router", "no Cloud NAT serves subnetwork default"),
    ("nat-for-other-subnets", "no Cloud NAT serves subnetwork default"),
    ("router-on-other-network", "no Cloud NAT serves subnetwork default"),
    ("no-subnet", "subnetwork default does not exist in"),
    ("other-network", "belongs to network other, not NETWORK=default"),
])
def test_a_network_the_hosts_cannot_install_through_stops_in_one_line_before_the_quota(fake, cli, values, case, words):
    subnet, routers_path, project, region = paths(values)
    fake.compute[subnet] = subnetwork(project, region, "default", pga=case != "no-pga",
                                      network="other" if case == "other-network" else "default")
    fake.compute[routers_path] = {
        "no-router": routers(project, region, "default"),
        "nat-for-other-subnets": routers(project, region, "default", nat("LIST_OF_SUBNETWORKS", "other")),
        "router-on-other-network": routers(project, region, "other", nat()),
    }.get(case, routers(project, region, "default", nat()))
    if case == "no-subnet":
        del fake.compute[subnet]
        fake.ready_network = None
    code, out, err = cli("--values", values, "check-capacity")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and words in lines[0], err
    assert region in lines[0] and "Traceback" not in err
    assert not fake.requests  # refused before the quota or the reservation is read
    if case == "no-pga":
        assert f"gcloud compute networks subnets update default --region={region} --enable-private-ip-google-access" in err
    if case.startswith(("no-router", "nat-for")):
        assert "gcloud compute routers nats create" in err and "TPU_EXTERNAL_IPS=true" in err


def test_a_nat_that_lists_the_subnet_serves_it(fake, cli):
    subnet, routers_path, project, region = paths(VALUES[1])
    fake.compute[routers_path] = routers(project, region, "default", nat("LIST_OF_SUBNETWORKS", "default"))
    code, out, err = cli("--values", VALUES[1], "check-capacity")
    assert code == 0 and "tpubuild: network:" in out, err


def test_external_ips_need_neither_and_read_nothing(fake, cli, make_env):
    values = make_env(VALUES[0], TPU_EXTERNAL_IPS="true")
    code, out, err = cli("--values", values, "check-capacity")
    assert "the hosts have external IPs" in out and not fake.network_requests, err


def test_a_network_these_credentials_cannot_read_is_said_and_not_refused(fake, cli):
    subnet, _routers, _project, _region = paths(VALUES[0])
    fake.denied.add(subnet)
    code, out, err = cli("--values", VALUES[0], "check-capacity")
    assert "network not checked: subnetwork default of project" in err and "roles/compute.viewer" in err
    assert "network" not in out


def test_plan_check_runs_the_same_preflight(fake, cli):
    subnet, _routers, project, region = paths(VALUES[1])
    fake.compute[subnet] = subnetwork(project, region, "default", pga=False)
    code, out, err = cli("--values", VALUES[1], "plan", "--action", "create", "--check")
    assert code == 1 and "Pipeline steps" in out and "has no Private Google Access" in err
    assert len(err.strip().splitlines()) == 1
