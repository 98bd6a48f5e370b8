"""tpubuild status: the real TPU (v1 gRPC, v2 REST), Filestore (REST) clients and Compute REST
calls against the local fakes; Terraform state, lock and snapshot in fake-gcs-server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, NODE
from tests.support.fakes.fixtures import Fakes, fakes, make_repo, repo, unique_env  # noqa: F401 - fixtures


@pytest.fixture
def node_repo(tmp_path: Path) -> Path:
    """A repository whose values.env is a TPU Node file (legacy: status must keep working)."""
    return make_repo(tmp_path / "node", unique_env(), base=NODE)


def test_status_node_reports_tpu_filestore_mig_state_lock_and_snapshot(fakes: Fakes, node_repo: Path, cli) -> None:
    repo = node_repo
    from google.cloud import tpu_v1

    from builder.cloud import lock, snapshot
    from builder.config import load

    s = load(repo)
    assert cli("--values", repo, "initialize")[0] == 0
    bucket = fakes.storage().bucket(s.state_bucket)
    bucket.blob(f"{s.env_name}/tpu/default.tfstate").upload_from_string("{}")
    snapshot.write(bucket, s.env_name, snapshot.Applied(values=b"X=1\n", build_id="b-ok", action="create",
                                                        time="2026-01-01T00:00:00Z", absent=frozenset({"mig"})),
                   expected_generation=0)
    lock.set_build(bucket, lock.acquire(bucket, lock.Lock(env=s.env_name, action="update", holder="ci",
                                                           created="2026-01-02T00:00:00Z")), "b-run")
    prefix = f"projects/{s.project_id}/locations/{s.zone}"
    fakes.tpu1.nodes[f"{prefix}/nodes/{s.tpu_name}"] = tpu_v1.Node(
        name=s.tpu_name, state=tpu_v1.Node.State.READY, health=tpu_v1.Node.Health.HEALTHY,
        accelerator_type="v3-32", tensorflow_version="pytorch-1.13",
        network_endpoints=[tpu_v1.NetworkEndpoint(ip_address="10.3.0.2", port=8470)])
    fakes.google.filestore[f"{prefix}/instances/{s.filestore_name}"] = {
        "name": s.filestore_name, "state": "READY", "tier": "BASIC_HDD",
        "networks": [{"network": "default", "ipAddresses": ["10.0.0.2"]}],
        "fileShares": [{"name": "tpushare", "capacityGb": "1024"}]}
    fakes.google.migs[f"/compute/v1/projects/{s.project_id}/zones/{s.zone}/instanceGroupManagers/{s.mig_name}"] = {
        "manager": {"name": s.mig_name, "targetSize": 4, "status": {"isStable": False}},
        "instances": [{"instanceStatus": "RUNNING"}] * 3 + [{"instanceStatus": "PROVISIONING"}]}

    code, out, err = cli("--values", repo, "status")
    assert code == 0, err
    assert f"tpu        {s.tpu_name}: READY, health HEALTHY, v3-32, pytorch-1.13 (tpu v1)" in out
    assert f"filestore  {s.filestore_name}: READY, 10.0.0.2:/tpushare (1024 GiB, BASIC_HDD)" in out
    assert f"mig        {s.mig_name}: 3/4 running (target 4, 4 TPU hosts), UPDATING" in out
    assert "filestore no, shared_pd no, tpu yes, mig no, dashboard no" in out
    assert "lock       held by build b-run (update, since 2026-01-02T00:00:00Z, by ci)" in out
    assert "applied    build b-ok (create, 2026-01-01T00:00:00Z); absent: mig" in out

    code, out, err = cli("--values", repo, "status", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["tpu"]["endpoints"] == ["10.3.0.2:8470"]
    assert report["filestore"]["ip"] == "10.0.0.2"
    assert report["mig"]["target_size"] == 4 and report["mig"]["running"] == 3
    assert report["terraform"]["modules"] == {"filestore": False, "shared_pd": False, "tpu": True, "mig": False,
                                              "dashboard": False}
    assert report["terraform"]["lock"]["build_id"] == "b-run"
    assert report["errors"] == []


def test_status_vm_uses_tpu_v2_and_reports_absent_resources(fakes: Fakes, tmp_path: Path, cli, monkeypatch) -> None:
    from builder.config import load

    base = (EXAMPLES / "vm-v4-32.env").read_text()
    values = make_repo(tmp_path / "r", unique_env())
    values.write_text(base.replace('ENV_BUILD_NAME="', f'ENV_BUILD_NAME="{unique_env()}" # was "'))
    monkeypatch.chdir(values.parent)
    s = load(values)
    assert s.arch == "vm"
    fakes.google.tpu_nodes[f"projects/{s.project_id}/locations/{s.zone}/nodes/{s.tpu_name}"] = {
        "name": s.tpu_name, "state": "CREATING", "health": "HEALTH_UNSPECIFIED", "acceleratorType": "v4-32",
        "runtimeVersion": "tpu-ubuntu2204-base", "networkEndpoints": [{"ipAddress": "10.1.0.5", "port": 8470}]}
    code, out, err = cli("--values", values, "status", "--format", "json")
    report = json.loads(out)
    assert report["tpu"]["api"] == "tpu v2" and report["tpu"]["state"] == "CREATING"
    assert report["filestore"] == {"state": "ABSENT"}
    assert "mig" not in report
    # not initialized: said so, not an error
    assert code == 0 and report["terraform"]["bucket_exists"] is False and report["errors"] == []
    code, out, err = cli("--values", values, "status")
    assert f"state      gs://{s.state_bucket} does not exist (run tpubuild initialize)" in out
    assert "tpu        " + s.tpu_name + ": CREATING, health HEALTH_UNSPECIFIED, v4-32, tpu-ubuntu2204-base (tpu v2)" in out
    assert any("/nodes/" in p for _m, p in fakes.google.requests if p.startswith("/v2/"))


def test_status_part_that_fails_is_reported_and_exits_1(fakes: Fakes, node_repo: Path, cli) -> None:
    repo = node_repo
    from builder.config import load

    s = load(repo)
    fakes.google.fail[f"/v1/projects/{s.project_id}/locations/{s.zone}/instances/{s.filestore_name}"] = 403
    code, out, err = cli("--values", repo, "status")
    assert code == 1
    assert "filestore  error: reading Filestore " + s.filestore_name in out and "permission denied" in out
    assert "tpu        absent" in out and "mig        absent" in out
    assert "Traceback" not in out + err


def test_status_vm_finds_the_slice_in_either_slot_and_says_when_both_run(fakes: Fakes, tmp_path: Path, cli,
                                                                         monkeypatch) -> None:
    """After make-before-break the slice is tpu-<env>-b; during it both slots run."""
    from builder.config import load

    values = make_repo(tmp_path / "r", unique_env())
    values.write_text((EXAMPLES / "vm-v4-32.env").read_text().replace('ENV_BUILD_NAME="', f'ENV_BUILD_NAME="{unique_env()}" # was "'))
    monkeypatch.chdir(values.parent)
    s = load(values)
    nodes = f"projects/{s.project_id}/locations/{s.zone}/nodes"

    def node(name: str, accel: str, state: str) -> dict[str, object]:
        return {"name": name, "state": state, "health": "HEALTHY", "acceleratorType": accel,
                "runtimeVersion": "tpu-ubuntu2204-base", "networkEndpoints": [{"ipAddress": "10.1.0.5"}]}

    fakes.google.tpu_nodes[f"{nodes}/{s.tpu_name}-b"] = node(f"{s.tpu_name}-b", "v4-32", "READY")
    code, out, err = cli("--values", values, "status", "--format", "json")
    assert code == 0 and json.loads(out)["tpu"]["name"] == f"{s.tpu_name}-b", err
    fakes.google.tpu_nodes[f"{nodes}/{s.tpu_name}"] = node(s.tpu_name, "v4-16", "READY")
    code, out, err = cli("--values", values, "status")
    assert code == 0, err
    assert (f"tpu        {s.tpu_name}-b: READY, health HEALTHY, v4-32, tpu-ubuntu2204-base (tpu v2); beside it "
            f"{s.tpu_name} (v4-16, READY) (make-before-break under way)") in out


def test_status_says_when_a_storage_module_holds_two_zones(fakes: Fakes, tmp_path: Path, cli, monkeypatch) -> None:
    """A Filestore state with two slots (its ``slots`` output, modules/filestore) is a zone move under way
    or left unfinished: status says where both are and how to finish it; one slot says nothing."""
    from builder.config import load

    values = make_repo(tmp_path / "r", unique_env())
    values.write_text((EXAMPLES / "vm-v4-32.env").read_text().replace('ENV_BUILD_NAME="', f'ENV_BUILD_NAME="{unique_env()}" # was "'))
    monkeypatch.chdir(values.parent)
    s = load(values)
    assert cli("--values", values, "initialize")[0] == 0
    bucket = fakes.storage().bucket(s.state_bucket)

    def state(module: str, slots: dict[str, dict[str, str]]) -> None:
        body = {"version": 4, "outputs": {"slots": {"value": slots, "type": "object"}}, "resources": []}
        bucket.blob(f"{s.env_name}/{module}/default.tfstate").upload_from_string(json.dumps(body))

    state("filestore", {"a": {"location": "us-central2-b", "tier": "BASIC_HDD", "source_backup": ""},
                        "b": {"location": "europe-west4-a", "tier": "BASIC_HDD", "source_backup": "nfs-x-20261206"}})
    state("shared_pd", {"a": {"zone": "us-central2-b", "snapshot": ""}})
    code, out, err = cli("--values", values, "status", "--format", "json")
    assert json.loads(out)["terraform"]["moving"] == {"filestore": ["us-central2-b", "europe-west4-a"]}, err
    code, out, err = cli("--values", values, "status")
    [line] = [ln for ln in out.splitlines() if ln.startswith("  moving")]
    assert line.startswith("  moving     filestore is in us-central2-b and europe-west4-a: a move to another zone")
    assert "tpubuild update --move-to ZONE" in line
    state("filestore", {"a": {"location": "us-central2-b", "tier": "BASIC_HDD", "source_backup": ""}})
    code, out, err = cli("--values", values, "status")
    assert "  moving" not in out, out
