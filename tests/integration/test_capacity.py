"""The capacity check (``tpubuild check-capacity``, ``tpubuild plan --check``) against a local
fake of the Cloud Quotas API that the real requests session reaches, and its place in every
rendered create (first, before anything billed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from builder import capacity
from builder.config import load
from builder.modules import accelerator_module
from builder.pipeline import render
from builder.plan import make_plan
from tests.conftest import EXAMPLES, REPO
from tests.support.fakes.quotas import FakeQuotas, quota_info
from tests.support.pipeline import ancestors

V4 = EXAMPLES / "vm-v4-32.env"  # v4-32: 16 chips, on-demand, us-central2-b
V5E_SPOT = EXAMPLES / "vm-v5litepod-16.env"  # 16 chips, spot, us-west4-a
ALL_VALUES = [*sorted(EXAMPLES.glob("*.env")), REPO / "values.env"]


@pytest.fixture
def quotas(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeQuotas]:
    fake = FakeQuotas().start()
    monkeypatch.setenv("TPUBUILD_QUOTAS_ENDPOINT", f"{fake.url}/v1")
    yield fake
    fake.stop()


def _set(fake: FakeQuotas, values_file, zones: dict[str, int]) -> capacity.Need:
    need = capacity.need(load(values_file))
    assert isinstance(need, capacity.Need), need
    fake.infos[(need.project, need.service, need.quota_id)] = quota_info(need.project, need.service, need.quota_id,
                                                                         zones)
    return need


@pytest.mark.parametrize("values_file", [V4, V5E_SPOT], ids=lambda p: p.name)
def test_too_little_quota_fails_with_one_line_naming_it(quotas, cli, values_file):
    need = _set(quotas, values_file, {load(values_file).zone: 8, "": 1000})
    code, out, err = cli("--values", values_file, "check-capacity")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and need.quota_id in lines[0] and "allows 8 chips" in lines[0], err
    assert f"needs {need.amount}" in lines[0] and "request an increase" in lines[0]
    assert quotas.requests == [f"/v1/projects/{need.project}/locations/global/services/{need.service}/"
                               f"quotaInfos/{need.quota_id}"]


def test_spot_reads_the_preemptible_quota_and_on_demand_its_own(quotas):
    spot, on_demand = capacity.need(load(V5E_SPOT)), capacity.need(load(V4))
    assert "Preemptible" in spot.quota_id and "Preemptible" not in on_demand.quota_id
    assert spot.amount == load(V5E_SPOT).topology.chips == 16


@pytest.mark.parametrize("zones", [{"us-central2-b": 16}, {"us-central2-b": 64, "": 0}, {"": 32},
                                   {"us-central2-b": -1}], ids=["exact", "zone-over-default", "default", "unlimited"])
def test_enough_quota_passes(quotas, cli, zones):
    _set(quotas, V4, zones)
    code, out, err = cli("--values", V4, "check-capacity")
    assert code == 0, err
    assert "tpubuild: capacity: quota TPUV4PodPerProjectPerZoneForTPUAPI" in out


def test_no_value_for_the_zone_refuses(quotas, cli):
    _set(quotas, V4, {"us-east1-d": 64})
    code, out, err = cli("--values", V4, "check-capacity")
    assert code == 1 and "has no value for us-central2-b" in err and len(err.strip().splitlines()) == 1


def test_a_quota_cloud_quotas_does_not_know_is_said_and_not_refused(quotas, cli):
    code, out, err = cli("--values", V4, "check-capacity")
    assert code == 0
    assert "capacity not checked: quota TPUV4PodPerProjectPerZoneForTPUAPI (tpu.googleapis.com) is unknown" in err


def test_a_path_without_a_known_quota_is_said_and_not_refused(quotas, cli):
    code, out, err = cli("--values", EXAMPLES / "mig-v6e-16-spot.env", "check-capacity")
    assert code == 0 and "capacity not checked: TPU_ARCH=mig" in err and not quotas.requests


def test_plan_check_runs_the_same_check(quotas, cli):
    _set(quotas, V4, {"us-central2-b": 4})
    code, out, err = cli("--values", V4, "plan", "--action", "create", "--check")
    assert code == 1 and "Pipeline steps" in out and "allows 4 chips" in err
    _set(quotas, V4, {"us-central2-b": 16})
    code, out, err = cli("--values", V4, "plan", "--action", "create", "--check")
    assert code == 0 and "needs 16" in out


@pytest.mark.parametrize("values_file", ALL_VALUES, ids=lambda p: p.name)
def test_every_create_checks_capacity_before_anything_billed(values_file):
    s = load(values_file)
    config = render(s, make_plan(s, "create"))
    steps = {st["id"]: st for st in config["steps"]}
    check = steps["check-capacity"]
    assert "tpubuild check-capacity" in check["args"][1] and ancestors(config, "check-capacity") == {"tpubuild-image"}
    # every step that makes something (an apply, and what follows one) comes after the check
    for step_id in steps:
        if step_id.endswith(("-apply", "-seed", "-queue", "-resize")):
            assert "check-capacity" in ancestors(config, step_id), step_id


def test_no_check_when_the_accelerator_is_not_applied():
    s = load(V4)
    assert "check-capacity" not in {st.id for st in make_plan(s, "destroy").steps}
    update = make_plan(s, "update", only=frozenset({"filestore"}))
    assert not update.applies(accelerator_module(s.arch))
    assert "check-capacity" not in {st.id for st in update.steps}


@pytest.mark.parametrize("mode,refused", [("", True), ("break-before-make", False)])
def test_make_before_break_needs_quota_for_both_slices(quotas, cli, make_env, tmp_path, mode, refused):
    """v4-32 (16 chips) → v4-64 (32): make-before-break holds both for a while (48 chips), so a quota of
    40 refuses it, with one line naming both; break-before-make holds one slice at a time."""
    old = tmp_path / "old.env"
    old.write_text(V4.read_text())
    new = make_env(V4, TPU_ACCELERATOR_TYPE="v4-64", TPU_REPLACE=mode or None)
    need = _set(quotas, V4, {"us-central2-b": 40})
    code, out, err = cli("plan", "--values", new, "--action", "update", "--tpu", "--applied", old, "--check")
    assert code == (1 if refused else 0), err
    if refused:
        (line,) = err.strip().splitlines()
        assert need.quota_id in line and "needs 48" in line and "v4-64 beside the running v4-32" in line
    else:
        assert "needs 32" in out
