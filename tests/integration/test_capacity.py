"""The capacity check (``tpubuild check-capacity``, ``tpubuild plan --check``) against a local
fake of the Cloud Quotas API and of Compute Engine's reservation reads that the real requests
session reaches, on both paths (vm: the Cloud TPU API's quota; mig: Compute Engine's, and the
reservation or calendar-mode request the slice consumes), and its place in every rendered create
(first, before anything billed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from builder.catalogue.modules import accelerator_module
from builder.config import load
from builder.planning import capacity
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, REPO
from tests.support.fakes.quotas import FakeQuotas, aggregate_reservation, quota_info, reservation, serving
from tests.support.pipeline import ancestors

V4 = EXAMPLES / "vm-v4-32.env"  # v4-32: 16 chips, on-demand, us-central2-b
V5E_SPOT = EXAMPLES / "vm-v5litepod-16.env"  # 16 chips, spot, us-west4-a
ALL_VALUES = [*sorted(EXAMPLES.glob("*.env")), REPO / "values.env"]


@pytest.fixture
def quotas(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeQuotas]:
    yield from serving(monkeypatch)


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


def test_a_generation_without_a_known_quota_is_said_and_not_refused(quotas, cli, make_env):
    values = make_env(REPO / "values.env", TPU_ACCELERATOR_TYPE="v3-8")  # a v3 single device: no quota in its record
    code, out, err = cli("--values", values, "check-capacity")
    assert code == 0 and "capacity not checked: no on-demand quota of v3 on TPU_ARCH=vm" in err
    assert not quotas.requests


@pytest.mark.parametrize("values_file, quota_id", [
    (REPO / "values.env", "TPUV3sPodPerProjectPerZoneForTPUAPI"),  # v3-32 on demand
    (EXAMPLES / "vm-v2-32.env", "TPUV2sPreemptiblePodPerProjectPerZoneForTPUAPI"),  # v2-32 preemptible
], ids=lambda v: getattr(v, "name", v))
def test_a_v2_v3_pod_reads_its_pod_quota_in_tensorcores_and_a_zero_names_the_terms(quotas, cli, values_file, quota_id):
    """Google sells v2/v3 Pod types only with evaluation quota or a 1- or 3-year commitment
    (cloud.google.com/tpu/pricing), on a Pod quota apart from the single devices' (tpu/docs/quota)."""
    need = capacity.need(load(values_file))
    assert need.quota_id == quota_id and need.counts == "TensorCores" and need.amount == 32
    zone = load(values_file).zone
    for value in (0, None):
        quotas.infos[(need.project, need.service, quota_id)] = quota_info(
            need.project, need.service, quota_id, {zone: value} if value is not None else {"us-east1-d": 64})
        code, out, err = cli("--values", values_file, "check-capacity")
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and quota_id in lines[0], err
        assert "is a Pod type, which Google offers only with evaluation quota or a 1- or 3-year commitment" in lines[0]
    quotas.infos[(need.project, need.service, quota_id)] = quota_info(need.project, need.service, quota_id, {zone: 32})
    code, out, err = cli("--values", values_file, "check-capacity")
    assert code == 0 and f"{quota_id} (tpu.googleapis.com) allows 32 TensorCores" in out, err


def test_the_plan_says_a_v3_pod_needs_evaluation_quota_or_a_commitment(cli):
    code, out, err = cli("--values", REPO / "values.env", "plan", "--action", "create", "--applied", "none")
    assert code == 0 and "v3-32 is a v3 Pod type: Google offers it only with evaluation quota or a 1- or 3-year " \
                         "commitment" in out, out


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


# --- TPU_ARCH=mig: Compute Engine's quota, and the reservation or request the slice consumes ---

MIG_SPOT = EXAMPLES / "mig-v6e-16-spot.env"  # v6e-16: 16 chips, spot, us-east5-b
MIG_FLEX = EXAMPLES / "mig-v6e-16-flex.env"  # the same slice, flex-start
MIG_V5P = EXAMPLES / "mig-v5p-32.env"  # v5p-32: 16 chips, 4 ct5p-hightpu-4t VMs, reservation, us-east5-a
MIG_CALENDAR = EXAMPLES / "mig-v6e-32-calendar.env"  # v6e-32: 32 chips, calendar, us-east5-a
COMPUTE = "compute.googleapis.com"


def _regional(fake: FakeQuotas, project: str, quota_id: str, regions: dict[str, int], **extra: str) -> None:
    fake.infos[(project, COMPUTE, quota_id)] = quota_info(project, COMPUTE, quota_id, regions, extra or None,
                                                          regional=True)


def test_mig_spot_reads_compute_engines_preemptible_quota_and_refuses_in_one_line(quotas, cli):
    need = capacity.need(load(MIG_SPOT))
    assert (need.service, need.quota_ids, need.per, need.amount) == (
        COMPUTE, ("PREEMPTIBLE-TPU-V6E-per-project-region",), "region", 16)
    _regional(quotas, need.project, need.quota_id, {"us-east5": 8, "": 1536})
    code, out, err = cli("--values", MIG_SPOT, "check-capacity")
    assert code == 1
    (line,) = err.strip().splitlines()
    assert "PREEMPTIBLE-TPU-V6E-per-project-region (compute.googleapis.com)" in line
    assert "allows 8 chips in us-east5" in line and "needs 16" in line and "request an increase" in line
    assert quotas.requests == [f"/v1/projects/{need.project}/locations/global/services/{COMPUTE}/"
                               f"quotaInfos/{need.quota_id}"]
    _regional(quotas, need.project, need.quota_id, {"us-east5": 16})
    code, out, err = cli("--values", MIG_SPOT, "check-capacity")
    assert code == 0 and "allows 16 chips in us-east5; v6e-16 (spot) needs 16" in out, err


@pytest.mark.parametrize("ct6e,refused", [(16, False), (8, True)])
def test_mig_on_demand_counts_only_its_family_of_the_shared_quota(quotas, cli, make_env, ct6e, refused):
    """TPUS-PER-TPU-FAMILY holds every family's chips per region: TPU7x's 1000 must not pass a v6e slice."""
    values = make_env(MIG_SPOT, TPU_PROVISIONING="on-demand")
    need = capacity.need(load(values))
    assert need.quota_ids == ("TPUS-PER-TPU-FAMILY-per-project-region",)
    assert need.dimensions_of(need.quota_id) == (("tpu_family", "CT6E"),)
    info = quota_info(need.project, COMPUTE, need.quota_id, {"us-east5": ct6e}, {"tpu_family": "CT6E"}, regional=True)
    info["dimensionsInfos"] += quota_info(need.project, COMPUTE, need.quota_id, {"us-east5": 1000, "": 1000},
                                          {"tpu_family": "TPU7X"}, regional=True)["dimensionsInfos"]
    quotas.infos[(need.project, COMPUTE, need.quota_id)] = info
    code, out, err = cli("--values", values, "check-capacity")
    assert code == (1 if refused else 0), err
    if refused:
        (line,) = err.strip().splitlines()
        assert "tpu_family=CT6E" in line and f"allows {ct6e} chips in us-east5" in line
    else:
        assert f"allows {ct6e} chips in us-east5" in out


def test_a_familys_default_comes_before_the_regions_default(quotas, cli, make_env):
    values = make_env(MIG_SPOT, TPU_PROVISIONING="on-demand")
    need = capacity.need(load(values))
    info = quota_info(need.project, COMPUTE, need.quota_id, {"": 64}, {"tpu_family": "ct6e"}, regional=True)
    info["dimensionsInfos"] += quota_info(need.project, COMPUTE, need.quota_id, {"us-east5": 0},
                                          regional=True)["dimensionsInfos"]
    quotas.infos[(need.project, COMPUTE, need.quota_id)] = info
    code, out, err = cli("--values", values, "check-capacity")
    assert code == 0 and "allows 64 chips in us-east5" in out, err


@pytest.mark.parametrize("preemptible,family,passes_on", [
    (0, 32, "TPUS-PER-TPU-FAMILY-per-project-region"), (16, 0, "PREEMPTIBLE-TPU-V6E-per-project-region"),
    (8, 0, None)], ids=["standard", "preemptible", "neither"])
def test_flex_start_takes_the_preemptible_quota_else_the_standard_one(quotas, cli, preemptible, family, passes_on):
    need = capacity.need(load(MIG_FLEX))
    assert need.quota_ids == ("PREEMPTIBLE-TPU-V6E-per-project-region", "TPUS-PER-TPU-FAMILY-per-project-region")
    _regional(quotas, need.project, need.quota_ids[0], {"us-east5": preemptible})
    _regional(quotas, need.project, need.quota_ids[1], {"us-east5": family}, tpu_family="CT6E")
    code, out, err = cli("--values", MIG_FLEX, "check-capacity")
    if passes_on is None:
        assert code == 1
        (line,) = err.strip().splitlines()
        assert all(q in line for q in need.quota_ids) and "needs 16" in line and "8" in line
        return
    assert code == 0, err
    assert f"quota {passes_on} (compute.googleapis.com" in out and "allows" in out
    assert "flex-start reserves nothing ahead" in out
    asked = [p.rsplit("/", 1)[-1] for p in quotas.requests]
    assert asked == list(need.quota_ids[:asked.index(passes_on) + 1])  # in order, stopping at the one with room


def test_mig_quota_check_is_what_plan_check_runs(quotas, cli):
    need = capacity.need(load(MIG_SPOT))
    _regional(quotas, need.project, need.quota_id, {"us-east5": 4})
    code, out, err = cli("--values", MIG_SPOT, "plan", "--action", "create", "--check")
    assert code == 1 and "Pipeline steps" in out and "allows 4 chips in us-east5" in err


def _reserved(make_env, name: str = "my-res"):
    values = make_env(MIG_V5P, TPU_RESERVATION=name)
    held = capacity.held(load(values))
    assert isinstance(held, capacity.Held) and (held.vms, held.chips, held.machine_type) == (4, 16, "ct5p-hightpu-4t")
    return values, held


def _path(held: capacity.Held, collection: str = "reservations") -> str:
    return f"/compute/v1/projects/{held.project}/zones/{held.zone}/{collection}/{held.name}"


@pytest.mark.parametrize("body,words", [
    (None, "reservation my-res does not exist in us-east5-a"),
    (reservation("my-res", "us-east5-a", "ct5p-hightpu-4t", 4, in_use=1), "has 3 of 4 ct5p-hightpu-4t VMs free"),
    (reservation("my-res", "us-east5-a", "ct6e-standard-4t", 8), "reserves ct6e-standard-4t VMs"),
    (reservation("my-res", "us-east5-a", "ct5p-hightpu-4t", 4, status="CREATING"), "is CREATING, not READY"),
    (aggregate_reservation("my-res", "us-east5-a", "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E", 64),
     "reserves VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E"),
    (aggregate_reservation("my-res", "us-east5-a", "VM_FAMILY_CLOUD_TPU_POD_SLICE_CT5P", 16, in_use=4),
     "has 12 of 16 TPU chips free"),
], ids=["missing", "too-few-free", "other-machine", "not-ready", "other-family", "too-few-chips"])
def test_a_named_reservation_that_cannot_hold_the_slice_refuses_in_one_line(quotas, cli, make_env, body, words):
    values, held = _reserved(make_env)
    if body is not None:
        quotas.compute[_path(held)] = body
    code, out, err = cli("--values", values, "check-capacity")
    assert code == 1
    (line,) = err.strip().splitlines()
    assert words in line and "TPU_RESERVATION" in line, line
    assert quotas.requests == [_path(held)]  # the reservation, no quota: consuming it takes none


@pytest.mark.parametrize("body,words", [
    (reservation("my-res", "us-east5-a", "zones/us-east5-a/machineTypes/ct5p-hightpu-4t", 6, in_use=2),
     "READY with 4 of 6 ct5p-hightpu-4t VMs free; v5p-32 needs 4"),
    (aggregate_reservation("my-res", "us-east5-a", "VM_FAMILY_CLOUD_TPU_POD_SLICE_CT5P", 32, in_use=16),
     "READY with 16 of 32 TPU chips free; v5p-32 needs 16"),
], ids=["vms", "chips"])
def test_a_reservation_that_holds_the_slice_passes(quotas, cli, make_env, body, words):
    values, held = _reserved(make_env)
    quotas.compute[_path(held)] = body
    code, out, err = cli("--values", values, "check-capacity")
    assert code == 0 and f"tpubuild: capacity: reservation my-res is {words}" in out, err
    assert "not checked" not in err


def test_a_shared_reservation_is_read_in_its_own_project(quotas, cli, make_env):
    values, held = _reserved(make_env, "projects/other-project/zones/us-east5-a/reservations/shared")
    assert (held.project, held.name) == ("other-project", "shared")
    quotas.compute[_path(held)] = reservation("shared", "us-east5-a", "ct5p-hightpu-4t", 4)
    code, out, err = cli("--values", values, "check-capacity")
    assert code == 0 and quotas.requests == [_path(held)], err


def test_an_unreadable_reservation_is_said_and_not_refused(quotas, cli, make_env):
    values, held = _reserved(make_env)
    quotas.denied.add(_path(held))
    code, out, err = cli("--values", values, "check-capacity")
    assert code == 0, err
    (line,) = err.strip().splitlines()
    assert "capacity not checked: reservation my-res of project my-tpu-project: not readable" in line
    assert "roles/compute.viewer" in line


def _zone_list(held: capacity.Held) -> str:
    return f"/compute/v1/projects/{held.project}/zones/{held.zone}/reservations"


def test_any_matching_reservation_passes_on_one_that_holds_the_slice(quotas, cli):
    held = capacity.held(load(MIG_V5P))  # TPU_RESERVATION empty: ANY_RESERVATION
    assert isinstance(held, capacity.Held) and held.kind == "any"
    required = reservation("pinned", "us-east5-a", "ct5p-hightpu-4t", 8, required=True)  # only for VMs naming it
    small = reservation("small", "us-east5-a", "ct5p-hightpu-4t", 2)
    quotas.compute[_zone_list(held)] = {"items": [required, small, aggregate_reservation(
        "pod", "us-east5-a", "VM_FAMILY_CLOUD_TPU_POD_SLICE_CT5P", 64, in_use=32)]}
    code, out, err = cli("--values", MIG_V5P, "check-capacity")
    assert code == 0 and not err, err
    assert "reservation pod is READY with 32 of 64 TPU chips free; v5p-32 needs 16 (any matching" in out
    assert quotas.requests == [_zone_list(held)]


def test_any_matching_reservation_warns_when_none_of_the_projects_holds_it(quotas, cli):
    """Not a refusal: a reservation shared from another project is not in the project's list."""
    held = capacity.held(load(MIG_V5P))
    quotas.compute[_zone_list(held)] = {"items": [reservation("small", "us-east5-a", "ct5p-hightpu-4t", 2)]}
    code, out, err = cli("--values", MIG_V5P, "check-capacity")
    assert code == 0
    (line,) = err.strip().splitlines()
    assert "no reservation of project my-tpu-project in us-east5-a can hold v5p-32" in line
    assert "reservation small has 2 of 2 ct5p-hightpu-4t VMs free, v5p-32 needs 4" in line and "TPU_RESERVATION" in line


@pytest.mark.parametrize("state,refused", [(None, False), ("APPROVED", False), ("DECLINED", True), ("FAILED", True)])
def test_calendar_reads_its_requests_standing(quotas, cli, state, refused):
    held = capacity.held(load(MIG_CALENDAR))
    assert isinstance(held, capacity.Held) and held.name.endswith("-cal") and held.chips == 32
    if state:
        quotas.compute[_path(held, "futureReservations")] = {"name": held.name, "status": {"procurementStatus": state}}
    code, out, err = cli("--values", MIG_CALENDAR, "check-capacity")
    assert code == (1 if refused else 0), err
    advice = f"/compute/v1/projects/{held.project}/regions/us-east5/advice/calendarMode"  # only before it is submitted
    assert quotas.requests == [_path(held, "futureReservations"), *([advice] if state is None else [])]
    if refused:
        (line,) = err.strip().splitlines()
        assert f"calendar-mode request {held.name} is {state}" in line and "TPU_CALENDAR_START" in line
    elif state is None:
        assert "is not submitted yet: this build submits it for 32 chips" in out
    else:
        assert f"calendar-mode request {held.name} is APPROVED" in out and "not checked" not in err


def test_a_reservation_on_vm_is_said_and_not_read(quotas, cli):
    code, out, err = cli("--values", EXAMPLES / "vm-v5p-32.env", "check-capacity")  # reservation, vm
    assert code == 0 and not quotas.requests
    (line,) = err.strip().splitlines()
    assert "capacity not checked: TPU_PROVISIONING=reservation on TPU_ARCH=vm" in line


@pytest.mark.parametrize("values_file,reads", [(V4, "the TPU quota"), (MIG_SPOT, "the TPU quota"),
                                               (MIG_V5P, "the reservation the slice consumes"),
                                               (MIG_CALENDAR, "the calendar-mode request the slice consumes")],
                         ids=lambda v: getattr(v, "name", v))
def test_the_rendered_step_says_what_it_reads(values_file, reads):
    s = load(values_file)
    step = next(st for st in render(s, make_plan(s, "create"))["steps"] if st["id"] == "check-capacity")
    assert f"when {reads} cannot hold the slice" in step["args"][1]
