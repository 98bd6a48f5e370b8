"""startup.sh on the TPU VMs of a slice MIG (TPU_ARCH="mig"), run by real bash in the sandbox of
test_startup_sandbox.py: the PJRT worker id and peers come from the MIG's own listing."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_startup_sandbox import STARTUP, MetadataServer, Sandbox, source_profile

WORKSPACE = "gs://proj-env1-tf-backend/workspace/env1"
MEMBERS = ("tpu-env1-q7xd", "tpu-env1-a2bc", "tpu-env1-m0nz", "tpu-env1-zz01")


def mig_box(tmp_path: Path, md: MetadataServer, *, name: str, members: tuple[str, ...] = MEMBERS,
            vm_count: str = "4") -> Sandbox:
    box = Sandbox(tmp_path, md)
    md.attrs(tpubuild_arch="mig", tpubuild_env="env1", tpubuild_mount_point="/mnt/common",
             tpubuild_nfs_ip="10.20.0.2", tpubuild_nfs_share="tpushare", tpubuild_shared_pd_device="",
             tpubuild_tpu_name="tpu-env1", tpubuild_tpu_endpoints="", tpubuild_workspace=WORKSPACE,
             tpubuild_setup_script="", tpubuild_accelerator_type="v6e-16", tpubuild_topology="4x4",
             tpubuild_vm_count=vm_count, tpubuild_host_bounds="2,2,1", tpubuild_chips_per_host_bounds="2,2,1")
    md.values["instance/attributes/created-by"] = "projects/123/zones/us-east5-b/instanceGroupManagers/tpu-env1"
    md.values["instance/name"] = name
    md.values["instance/zone"] = "projects/123/zones/us-east5-b"
    md.values["project/project-id"] = "proj"
    (box.state / "members").write_text("".join(f"{m}\tNONE\n" for m in members))
    dev = box.root / "dev" / "vfio"
    dev.mkdir(parents=True)
    box.gcs(f"{WORKSPACE}/models/roberta/train.sh", "echo train\n")
    return box


def env_of(box: Sandbox) -> dict[str, str]:
    return source_profile(box.profile_d / "tpubuild.sh")


@pytest.mark.parametrize("me,worker", [("tpu-env1-a2bc", "0"), ("tpu-env1-m0nz", "1"),
                                       ("tpu-env1-q7xd", "2"), ("tpu-env1-zz01", "3")])
def test_worker_id_and_peers_from_the_sorted_mig(tmp_path: Path, md: MetadataServer, me: str, worker: str) -> None:
    box = mig_box(tmp_path, md, name=me)
    result = box.run(STARTUP)
    assert result.returncode == 0, result.stderr
    assert (box.run_dir / "ready").exists()
    env = env_of(box)
    assert env["TPU_WORKER_ID"] == worker == env["TPUBUILD_WORKER_NUMBER"]
    assert env["TPU_WORKER_HOSTNAMES"] == "tpu-env1-a2bc,tpu-env1-m0nz,tpu-env1-q7xd,tpu-env1-zz01"
    assert (env["PJRT_DEVICE"], env["TPU_SKIP_MDS_QUERY"], env["TPU_ACCELERATOR_TYPE"]) == ("TPU", "true", "v6e-16")
    assert (env["TPU_TOPOLOGY"], env["TPU_HOST_BOUNDS"], env["TPU_CHIPS_PER_HOST_BOUNDS"]) == ("4x4", "2,2,1", "2,2,1")
    assert env["TPUBUILD_LEADER"] == ("1" if worker == "0" else "0") and env["TPUBUILD_ARCH"] == "mig"
    assert (box.root / "mnt/common/nfs_share/models/roberta/train.sh").exists() == (worker == "0")
    assert "XRT_TPU_CONFIG" not in env
    listing = [c for c in box.calls() if "list-instances" in c][-1]
    assert "tpu-env1 --zone us-east5-b --project proj" in listing


def test_waits_for_the_whole_slice_then_fails_clearly(tmp_path: Path, md: MetadataServer) -> None:
    # one VM is being deleted (a spot preemption), so only 3 of 4 are live: never ready
    members = ("tpu-env1-a2bc", "tpu-env1-m0nz", "tpu-env1-q7xd")
    box = mig_box(tmp_path, md, name="tpu-env1-a2bc", members=members)
    (box.state / "members").write_text("".join(f"{m}\tNONE\n" for m in members) + "tpu-env1-zz01\tDELETING\n")
    result = box.run(STARTUP, env=box.env(TPUBUILD_PEER_ATTEMPTS="3"))
    assert result.returncode == 1
    assert not (box.run_dir / "ready").exists()
    assert "MIG tpu-env1 lists 3 of 4 VMs" in box.console()
    assert "FATAL: MIG tpu-env1 does not list 4 live VMs including tpu-env1-a2bc" in box.console()
    assert len([c for c in box.calls() if "list-instances" in c]) == 3


@pytest.mark.parametrize("key,value,what", [
    ("tpubuild_vm_count", "0", "tpubuild-vm-count '0'"),
    ("tpubuild_topology", "4by4", "tpubuild-topology '4by4'"),
    ("tpubuild_accelerator_type", "v4-32", "not a v5p, v6e or tpu7x slice"),
])
def test_bad_slice_metadata_is_named(tmp_path: Path, md: MetadataServer, key: str, value: str, what: str) -> None:
    box = mig_box(tmp_path, md, name="tpu-env1-a2bc")
    md.attrs(**{key: value})
    assert box.run(STARTUP).returncode == 1
    assert what in box.console()
