"""tpubuild status on TPU_ARCH="mig": the slice is read from the Compute Engine REST API (the real
google-auth AuthorizedSession against the local fake in tests/support/fakes/gcp.py), never the TPU API,
and shown next to what values.env asks for (VMs x machine type, topology, provisioning)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLES
from tests.support.fakes.fixtures import Fakes, fakes, make_repo, unique_env  # noqa: F401 - fixtures


def _mig_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "mig", unique_env(), base=EXAMPLES / "mig-v6e-16-spot.env")


def test_status_mig_reports_the_slice_against_values_env(fakes: Fakes, tmp_path: Path, cli) -> None:
    from builder.config import load

    values = _mig_repo(tmp_path)
    s = load(values)
    assert s.arch == "mig"
    path = f"/compute/v1/projects/{s.project_id}/zones/{s.zone}/instanceGroupManagers/{s.tpu_name}"
    fakes.google.migs[path] = {
        "manager": {"name": s.tpu_name, "targetSize": 4, "status": {"isStable": False},
                    "resourcePolicies": {"workloadPolicy": f"https://compute.googleapis.com/compute/v1/projects/"
                                                           f"{s.project_id}/regions/{s.region}/resourcePolicies/"
                                                           f"{s.tpu_name}-4x4"}},
        "instances": [{"instanceStatus": "RUNNING"}] * 2 + [{"instanceStatus": "STAGING"}]}

    code, out, err = cli("--values", values, "status")
    assert code == 0, err
    assert (f"slice      {s.tpu_name}: 2/4 running (values.env: 4 x ct6e-standard-4t, topology 4x4, spot), "
            f"policy {s.tpu_name}-4x4, UPDATING") in out
    assert "  tpu " not in out  # no TPU API object on mig
    assert not any(p.startswith(("/v1/projects", "/v2/projects")) and "/nodes/" in p for _m, p in fakes.google.requests)

    code, out, err = cli("--values", values, "status", "--format", "json")
    report = json.loads(out)
    sl = report["slice"]
    assert (sl["target_size"], sl["instances"], sl["running"], sl["policy"], sl["vms"]) == (4, 3, 2, f"{s.tpu_name}-4x4", 4)
    assert "tpu" not in report and "mig" not in report and report["errors"] == []


def _group(s, name: str, topology: str, running: int) -> dict:
    policy = (f"https://compute.googleapis.com/compute/v1/projects/{s.project_id}/regions/{s.region}/"
              f"resourcePolicies/{name}-{topology}")
    return {"manager": {"name": name, "targetSize": 4, "status": {"isStable": running == 4},
                        "resourcePolicies": {"workloadPolicy": policy}},
            "instances": [{"instanceStatus": "RUNNING"}] * running}


def test_status_mig_reads_both_slots_and_shows_the_one_values_env_asks_for(fakes: Fakes, tmp_path: Path,
                                                                          cli) -> None:
    """make-before-break on mig: the slice is tpu-<env> or tpu-<env>-b; while both exist the one
    whose workload policy has the topology values.env asks for is shown, the other named beside it."""
    from builder.config import load

    values = _mig_repo(tmp_path)
    s = load(values)
    groups = f"/compute/v1/projects/{s.project_id}/zones/{s.zone}/instanceGroupManagers"
    b = f"{s.tpu_name}-b"
    fakes.google.migs[f"{groups}/{b}"] = _group(s, b, "4x4", 4)  # after a swap: only slot b
    code, out, err = cli("--values", values, "status")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("  slice "))
    assert line == (f"  slice      {b}: 4/4 running (values.env: 4 x ct6e-standard-4t, topology 4x4, spot), "
                    f"policy {b}-4x4, STABLE"), line

    fakes.google.migs[f"{groups}/{s.tpu_name}"] = _group(s, s.tpu_name, "2x4", 2)  # the old shape, beside it
    code, out, err = cli("--values", values, "status")
    assert code == 0, err
    assert (f"slice      {b}: 4/4 running (values.env: 4 x ct6e-standard-4t, topology 4x4, spot), policy {b}-4x4, "
            f"STABLE; beside it {s.tpu_name} (policy {s.tpu_name}-2x4, 2/4 running) (make-before-break under way)") in out
    code, out, err = cli("--values", values, "status", "--format", "json")
    sl = json.loads(out)["slice"]
    assert (sl["name"], sl["others"]) == (b, [f"{s.tpu_name} (policy {s.tpu_name}-2x4, 2/4 running)"])

    fakes.google.migs[f"{groups}/{b}"] = _group(s, b, "2x4", 4)  # neither has the asked shape: the first
    code, out, err = cli("--values", values, "status")
    assert f"slice      {s.tpu_name}: 2/4 running" in out and f"beside it {b} (policy {b}-2x4, 4/4 running)" in out


def test_status_mig_absent_and_failing_slice(fakes: Fakes, tmp_path: Path, cli) -> None:
    from builder.config import load

    values = _mig_repo(tmp_path)
    s = load(values)
    code, out, err = cli("--values", values, "status")
    assert code == 0 and "slice      absent" in out
    path = f"/compute/v1/projects/{s.project_id}/zones/{s.zone}/instanceGroupManagers/{s.tpu_name}"
    fakes.google.fail[path] = 403
    code, out, err = cli("--values", values, "status")
    assert code == 1 and f"slice      error: reading MIG {s.tpu_name}: HTTP 403" in out
    assert "Traceback" not in out + err


def _capacity_repo(tmp_path: Path, base: Path) -> Path:
    return make_repo(tmp_path / base.stem, unique_env(), base=base)


def test_status_shows_where_a_flex_start_bulk_group_stands(fakes: Fakes, tmp_path: Path, cli) -> None:
    """flex-start is a bulk MIG grown from 0 (no resize request: docs/modules.md): status reads the
    group's target size and its bulk instance operation (status.bulkInstanceOperation)."""
    from builder.config import load

    values = _capacity_repo(tmp_path, EXAMPLES / "mig-v6e-16-flex.env")
    s = load(values)
    group = f"/compute/v1/projects/{s.project_id}/zones/{s.zone}/instanceGroupManagers/{s.tpu_name}"
    code, out, err = cli("--values", values, "status")
    assert code == 0 and "capacity   absent" in out, out + err
    fakes.google.migs[group] = {"manager": {"name": s.tpu_name, "targetSize": 0}, "instances": []}
    code, out, err = cli("--values", values, "status")
    assert code == 0, err
    assert f"capacity   {s.tpu_name}: not asked for yet (target size 0) (EMPTY)" in out, out
    fakes.google.migs[group]["manager"] = {"name": s.tpu_name, "targetSize": 4,
                                           "status": {"bulkInstanceOperation": {"inProgress": True}}}
    code, out, err = cli("--values", values, "status")
    assert (f"capacity   {s.tpu_name}: waiting for capacity (IN_PROGRESS), its VMs run at most "
            f"{s.max_run_hours} h from their start (flex-start bulk group)") in out, out
    fakes.google.migs[group]["manager"] = {"name": s.tpu_name, "targetSize": 4, "status": {"bulkInstanceOperation": {
        "inProgress": False, "lastProgressCheck": {"error": {"errors": [
            {"code": "ZONE_RESOURCE_POOL_EXHAUSTED", "message": "no  capacity"}]}}}}}
    code, out, err = cli("--values", values, "status", "--format", "json")
    report = json.loads(out)
    assert report["capacity"]["state"] == "FAILED" and report["capacity"]["error"] == "no capacity"
    code, out, err = cli("--values", values, "status")
    assert "failed (FAILED: no capacity)" in out


def test_status_shows_a_calendar_request_and_when_it_expires(fakes: Fakes, tmp_path: Path, cli) -> None:
    from builder.config import load

    values = _capacity_repo(tmp_path, EXAMPLES / "mig-tpu7x-8-calendar.env")
    s = load(values)
    path = f"/compute/v1/projects/{s.project_id}/zones/{s.zone}/futureReservations/{s.tpu_name}-cal"
    fakes.google.compute_objects[path] = {
        "name": f"{s.tpu_name}-cal", "status": {"procurementStatus": "APPROVED"},
        "timeWindow": {"startTime": "2030-03-02T08:00:00Z", "endTime": "2030-03-16T08:00:00Z"}}
    code, out, err = cli("--values", values, "status")
    assert code == 0, err
    assert (f"capacity   {s.tpu_name}-cal: approved, waiting for its start (APPROVED), starts 2030-03-02T08:00:00Z, "
            "expires at 2030-03-16T08:00:00Z (calendar-mode future reservation)") in out
    fakes.google.fail[path] = 403
    code, out, err = cli("--values", values, "status")
    assert code == 1 and "capacity   error: reading calendar-mode future reservation" in out
    assert "Traceback" not in out + err
