"""env_setup/scripts/startup.sh, run by real bash in a sandbox (see test_startup_sandbox.py)."""

from __future__ import annotations

import itertools
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_startup_sandbox import (
    STARTUP,
    MetadataServer,
    Sandbox,
    closed_port,
    listening_port,
    make_device,
    source_profile,
)

WORKSPACE = "gs://proj-env1-tf-backend/workspace/env1"
MOUNT_POINT = "/mnt/common"


@pytest.fixture
def tpu() -> Iterator[socket.socket]:
    sock = listening_port()
    yield sock
    sock.close()


def endpoint(sock: socket.socket) -> str:
    return f"127.0.0.1:{sock.getsockname()[1]}"


def node_box(tmp_path: Path, md: MetadataServer, endpoints: str, *, name: str = "worker-env1-abcd",
             members: tuple[str, ...] = ("worker-env1-abcd", "worker-env1-zzzz"),
             pd: bool = True) -> Sandbox:
    box = Sandbox(tmp_path, md)
    md.attrs(tpubuild_arch="node", tpubuild_env="env1", tpubuild_mount_point=MOUNT_POINT,
             tpubuild_nfs_ip="10.20.0.2", tpubuild_nfs_share="tpushare",
             tpubuild_shared_pd_device="shared-pd" if pd else "", tpubuild_tpu_name="tpu-env1",
             tpubuild_tpu_endpoints=endpoints, tpubuild_workspace=WORKSPACE,
             tpubuild_setup_script="")
    md.values["instance/attributes/created-by"] = (
        "projects/123/zones/europe-west4-a/instanceGroupManagers/worker-env1")
    md.values["instance/name"] = name
    md.values["instance/zone"] = "projects/123/zones/europe-west4-a"
    md.values["project/project-id"] = "proj"
    (box.state / "members").write_text("".join(f"{m}\tNONE\n" for m in members))
    if pd:
        make_device(box.root, "shared-pd")
        (box.state / "blkid").mkdir(exist_ok=True)
        (box.state / "blkid" / "google-shared-pd").write_text("TYPE=ext4\n")
    box.gcs(f"{WORKSPACE}/models/roberta/train.sh", "echo train\n")
    return box


def vm_box(tmp_path: Path, md: MetadataServer, *, worker: str = "0", device: str | None = "accel0"
           ) -> Sandbox:
    box = Sandbox(tmp_path, md)
    md.attrs(tpubuild_arch="vm", tpubuild_env="env1", tpubuild_mount_point=MOUNT_POINT,
             tpubuild_nfs_ip="10.20.0.2", tpubuild_nfs_share="tpushare",
             tpubuild_shared_pd_device="", tpubuild_tpu_name="tpu-env1",
             tpubuild_workspace=WORKSPACE, agent_worker_number=worker)
    md.values["instance/name"] = f"t1v-n-1234-w-{worker}"
    md.values["project/project-id"] = "proj"
    if device:
        dev = box.root / "dev" / device
        dev.parent.mkdir(parents=True, exist_ok=True)
        dev.mkdir() if device == "vfio" else dev.touch()
    box.gcs(f"{WORKSPACE}/models/roberta/train.sh", "echo train\n")
    return box


def ok(box: Sandbox) -> None:
    result = box.run(STARTUP)
    assert result.returncode == 0, result.stderr
    assert (box.run_dir / "ready").exists()


def fstab_entries(box: Sandbox) -> list[list[str]]:
    return [line.split() for line in box.fstab.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def profile(box: Sandbox) -> Path:
    return box.profile_d / "tpubuild.sh"


# ---------------------------------------------------------------------------------------------
# fstab and mounts
# ---------------------------------------------------------------------------------------------
def test_two_runs_and_a_reboot_leave_one_fstab_line_per_mount(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    nfs_dir, pd_dir = f"{box.root}/mnt/common/nfs_share", f"{box.root}/mnt/common/shared_pd"
    # What the seed-era scripts left behind: the same NFS line appended on every boot.
    box.fstab.write_text("UUID=abc / ext4 defaults 0 1\n"
                         f"10.9.9.9:/old {nfs_dir} nfs defaults 0 0\n"
                         f"10.9.9.9:/old {nfs_dir} nfs defaults 0 0\n")
    ok(box)
    ok(box)
    box.reboot()
    ok(box)

    entries = fstab_entries(box)
    by_dir = {d: [e for e in entries if e[1] == d] for d in (nfs_dir, pd_dir, "/")}
    assert [len(v) for v in by_dir.values()] == [1, 1, 1], box.fstab.read_text()
    assert by_dir[nfs_dir][0][:3] == ["10.20.0.2:/tpushare", nfs_dir, "nfs"]
    assert "_netdev" in by_dir[nfs_dir][0][3]
    pd = by_dir[pd_dir][0]
    assert pd[0] == f"{box.root}/dev/disk/by-id/google-shared-pd" and pd[2] == "ext4"
    assert pd[3].split(",")[0] == "ro"
    # Mounted at the first run and after the reboot, never twice while mounted.
    mounts = [c for c in box.calls() if c.startswith("mount ")]
    assert sum(nfs_dir in c for c in mounts) == 2
    assert sum(pd_dir in c for c in mounts) == 2
    assert all(re.search(r"-o ro\b", c) for c in mounts if pd_dir in c)


def test_nfs_client_installed_only_when_missing(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    ok(box)
    installs = [c for c in box.calls() if c.startswith("apt-get") and "install" in c]
    assert len(installs) == 1 and "nfs-common" in installs[0]
    ok(box)  # mount.nfs now exists: no apt-get at all
    assert len([c for c in box.calls() if c.startswith("apt-get")]) == 2  # update + install, once


def test_nfs_mount_retried_with_backoff(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    (box.state / "mount_fail_nfs").write_text("2")
    ok(box)
    assert sum(c.startswith("mount -t nfs") for c in box.calls()) == 3
    waits = re.findall(r"NFS mount of \S+: attempt (\d)/5 failed; retrying in ([0-9.]+)s", box.console())
    assert waits == [("1", "0.01"), ("2", "0.02")]


def test_nfs_that_never_answers_fails_the_boot(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    (box.state / "mount_fail_nfs").write_text("99")
    result = box.run(STARTUP)
    assert result.returncode != 0
    assert sum(c.startswith("mount -t nfs") for c in box.calls()) == 5
    assert "FATAL: cannot mount Filestore share 10.20.0.2:/tpushare" in box.console()
    assert not (box.run_dir / "ready").exists()
    assert (box.run_dir / "failed").exists()
    assert md.guest["tpubuild/startup"].startswith("error:cannot mount Filestore")


def test_blank_shared_pd_is_not_mounted_and_detached_pd_drops_its_line(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    (box.state / "blkid" / "google-shared-pd").unlink()  # attached, never seeded
    ok(box)
    pd_dir = f"{box.root}/mnt/common/shared_pd"
    assert not [e for e in fstab_entries(box) if e[1] == pd_dir]
    assert not [c for c in box.calls() if c.startswith("mount ") and pd_dir in c]
    assert "has no filesystem" in box.console()
    assert source_profile(profile(box))["TPUBUILD_SHARED_PD_DIR"] == ""


def test_attached_pd_without_device_is_a_failure(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    (box.root / "dev" / "disk" / "by-id" / "google-shared-pd").unlink()
    result = box.run(STARTUP)
    assert result.returncode != 0
    assert "FATAL: shared PD device" in box.console() and "google-shared-pd" in box.console()


def test_a_host_made_before_filestore_reads_the_export_from_the_workspace(tmp_path, md):
    """The slice is asked for before Filestore (docs/pipeline.md, "The slice first"): its metadata
    has no NFS export, so the host reads the one filestore-publish wrote to the workspace, at the
    path the pipeline writes (builder.catalogue.step_kinds.NFS_EXPORT_OBJECT), and mounts it."""
    from builder.catalogue.step_kinds import NFS_EXPORT_OBJECT

    box = vm_box(tmp_path, md)
    md.attrs(tpubuild_nfs_ip="", tpubuild_nfs_share="")
    box.gcs(f"{WORKSPACE}/{NFS_EXPORT_OBJECT}", "nfs_ip=10.20.0.9\nnfs_share=laterShare\n")
    ok(box)
    assert any(c.startswith("mount -t nfs") and "10.20.0.9:/laterShare" in c for c in box.calls())
    assert f"NFS export 10.20.0.9:/laterShare read from {WORKSPACE}/{NFS_EXPORT_OBJECT}" in box.console()


def test_a_host_whose_export_never_comes_waits_says_so_and_fails(tmp_path, md):
    from builder.catalogue.step_kinds import NFS_EXPORT_OBJECT

    box = vm_box(tmp_path, md)
    md.attrs(tpubuild_nfs_ip="", tpubuild_nfs_share="")
    result = box.run(STARTUP)
    assert result.returncode == 1
    console = box.console()
    assert f"waiting for the Filestore export at {WORKSPACE}/{NFS_EXPORT_OBJECT}" in console
    assert f"FATAL: no NFS export at {WORKSPACE}/{NFS_EXPORT_OBJECT} 1s after boot" in console
    assert not [c for c in box.calls() if c.startswith("mount -t nfs")]
    assert not (box.run_dir / "ready").exists()


def test_missing_metadata_key_is_named(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    del md.values["instance/attributes/tpubuild-nfs-ip"]
    result = box.run(STARTUP)
    assert result.returncode == 1
    assert "FATAL: instance metadata key 'tpubuild-nfs-ip' is missing" in box.console()
    assert md.refused == 0  # every request carried Metadata-Flavor: Google


# ---------------------------------------------------------------------------------------------
# XLA runtime environment and the on-the-spot check
# ---------------------------------------------------------------------------------------------
def test_node_gets_xrt_tpu_config_from_the_endpoints(tmp_path, md):
    socks = [listening_port(), listening_port()]
    endpoints = [endpoint(s) for s in socks]
    try:
        box = node_box(tmp_path, md, ",".join(endpoints))
        ok(box)
    finally:
        for s in socks:
            s.close()
    expected = "|".join(f"tpu_worker;{i};{ep}" for i, ep in enumerate(endpoints))
    for shell in ("sh", "bash"):
        env = source_profile(profile(box), shell)
        assert env["XRT_TPU_CONFIG"] == expected
        assert env["TPUBUILD_ARCH"] == "node" and "PJRT_DEVICE" not in env
        assert env["TPUBUILD_NFS_DIR"] == f"{box.root}/mnt/common/nfs_share"
    # Under xla_dist (XRT_LOCAL_WORKER set), its own XRT_TPU_CONFIG wins.
    env = source_profile(profile(box), XRT_LOCAL_WORKER="c_tpu_worker:1", XRT_TPU_CONFIG="x")
    assert env["XRT_TPU_CONFIG"] == "x" and env["TPUBUILD_XRT_TPU_CONFIG"] == expected


def test_single_host_node_uses_the_documented_form(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu), members=("worker-env1-abcd",))
    ok(box)
    assert source_profile(profile(box))["XRT_TPU_CONFIG"] == f"tpu_worker;0;{endpoint(tpu)}"


@pytest.mark.parametrize("device", ["accel0", "vfio"])
def test_vm_gets_pjrt(tmp_path, md, device):
    box = vm_box(tmp_path, md, device=device)
    ok(box)
    env = source_profile(profile(box))
    assert env["PJRT_DEVICE"] == "TPU" and "XRT_TPU_CONFIG" not in env
    assert env["TPUBUILD_ARCH"] == "vm" and env["TPUBUILD_WORKER_NUMBER"] == "0"
    assert not [c for c in box.calls() if c.startswith("gcloud compute")]


def test_bad_endpoint_is_reported_and_machine_not_ready(tmp_path, md):
    port = closed_port()
    box = node_box(tmp_path, md, f"127.0.0.1:{port}")
    result = box.run(STARTUP)
    assert result.returncode == 1
    fatal = [line for line in box.console().splitlines() if "FATAL" in line]
    assert len(fatal) == 1
    assert f"TPU tpu-env1 endpoint 127.0.0.1:{port} does not answer" in fatal[0]
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ tpubuild-startup: FATAL", fatal[0])
    assert not (box.run_dir / "ready").exists()
    assert f"127.0.0.1:{port}" in (box.run_dir / "failed").read_text()
    assert md.guest["tpubuild/startup"].startswith("error:TPU tpu-env1 endpoint")


def test_typo_in_endpoint_is_reported(tmp_path, md):
    box = node_box(tmp_path, md, "10.3.0.2;8470")
    result = box.run(STARTUP)
    assert result.returncode == 1
    assert "tpubuild-tpu-endpoints has '10.3.0.2;8470', not an ip:port" in box.console()
    assert not (box.run_dir / "ready").exists()


def test_vm_without_tpu_device_is_reported(tmp_path, md):
    box = vm_box(tmp_path, md, device=None)
    result = box.run(STARTUP)
    assert result.returncode == 1
    assert "FATAL: no TPU device on this host" in box.console()
    assert not (box.run_dir / "ready").exists()


def test_ready_marker_cleared_by_a_failing_boot(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    ok(box)
    md.attrs(tpubuild_tpu_endpoints=f"127.0.0.1:{closed_port()}")  # the TPU went away
    assert box.run(STARTUP).returncode == 1
    assert not (box.run_dir / "ready").exists()


# ---------------------------------------------------------------------------------------------
# user customisation
# ---------------------------------------------------------------------------------------------
USER_SCRIPT = """set -euo pipefail
test -d "$TPUBUILD_NFS_DIR"
printf 'user-script leader=%s cwd=%s\\n' "$TPUBUILD_LEADER" "$PWD" >>"$STUB_STATE/calls.log"
"""


def test_user_script_runs_after_the_mounts(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    box.gcs(f"{WORKSPACE}/scripts/setup.sh", USER_SCRIPT)
    md.attrs(tpubuild_setup_script="scripts/setup.sh")
    ok(box)
    calls = box.calls()
    order = [i for i, c in enumerate(calls) if c.startswith("mount ")]
    user = [i for i, c in enumerate(calls) if c.startswith("user-script")]
    assert len(order) == 2 and len(user) == 1 and max(order) < user[0]
    assert calls[user[0]] == f"user-script leader=1 cwd={box.root}/mnt/common"


def test_failing_user_script_fails_the_boot(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    box.gcs(f"{WORKSPACE}/scripts/setup.sh", "exit 7\n")
    md.attrs(tpubuild_setup_script="scripts/setup.sh")
    assert box.run(STARTUP).returncode == 1
    assert "FATAL: MIG_SETUP_SCRIPT scripts/setup.sh failed with exit 7" in box.console()
    assert not (box.run_dir / "ready").exists()


# ---------------------------------------------------------------------------------------------
# leader election
# ---------------------------------------------------------------------------------------------
MEMBERS = ("worker-env1-q7xd", "worker-env1-a2bc", "worker-env1-m0nz")


def leader_flag(box: Sandbox) -> str:
    return source_profile(profile(box))["TPUBUILD_LEADER"]


def test_node_leader_is_the_lexically_first_member_whatever_the_order(tmp_path, md, tpu):
    seen: dict[str, set[str]] = {m: set() for m in MEMBERS}
    for i, (order, me) in enumerate(itertools.product(
            [MEMBERS, tuple(reversed(MEMBERS))], MEMBERS)):
        box = node_box(tmp_path / str(i), md, endpoint(tpu), name=me, members=order, pd=False)
        ok(box)
        seen[me].add(leader_flag(box))
        models = box.root / "mnt/common/nfs_share/models/roberta/train.sh"
        assert models.exists() == (me == "worker-env1-a2bc")
    assert seen == {"worker-env1-q7xd": {"0"}, "worker-env1-a2bc": {"1"}, "worker-env1-m0nz": {"0"}}


def test_node_leader_reevaluated_at_each_boot(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu), name="worker-env1-m0nz", members=MEMBERS, pd=False)
    ok(box)
    assert leader_flag(box) == "0"
    # worker-env1-a2bc was replaced, the new instance sorts after us, one is being deleted.
    (box.state / "members").write_text("worker-env1-q7xd\tNONE\nworker-env1-m0nz\tNONE\n"
                                       "worker-env1-a2bc\tDELETING\nworker-env1-zz01\tCREATING\n")
    ok(box)
    assert leader_flag(box) == "1"
    listing = [c for c in box.calls() if "list-instances" in c][-1]
    assert "worker-env1 --zone europe-west4-a --project proj" in listing


def test_node_leader_listing_failure_is_fatal(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    (box.state / "members_fail").touch()
    assert box.run(STARTUP).returncode == 1
    assert "FATAL: cannot list the instances of MIG worker-env1" in box.console()


@pytest.mark.parametrize("worker,leader", [("0", "1"), ("1", "0"), ("3", "0")])
def test_vm_leader_is_worker_zero(tmp_path, md, worker, leader):
    box = vm_box(tmp_path, md, worker=worker)
    ok(box)
    assert leader_flag(box) == leader
    copied = [c for c in box.calls() if c.startswith("gcloud storage cp -r")]
    assert len(copied) == (1 if leader == "1" else 0)
    assert (box.root / "mnt/common/nfs_share/models/roberta/train.sh").exists() == (leader == "1")


def test_every_step_is_logged_with_a_timestamp(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    ok(box)
    lines = box.console().splitlines()
    assert lines and all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ tpubuild-startup: ", x) for x in lines)
    steps = [x.split("step: ", 1)[1] for x in lines if "step: " in x]
    assert steps == ["read metadata", "NFS client", "mount Filestore", "ship the training log", "mount shared PD",
                     "elect leader", "XLA runtime environment", "check TPU", "seed models", "ready"]


def test_unreachable_metadata_server_fails_once_and_clearly(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    result = box.run(STARTUP, box.env(TPUBUILD_METADATA_HOST=f"127.0.0.1:{closed_port()}"))
    assert result.returncode == 1
    fatal = [x for x in box.console().splitlines() if "FATAL" in x]
    assert len(fatal) == 1 and "does not answer for instance/attributes/tpubuild-arch" in fatal[0]
    assert not box.calls()  # nothing was touched


def test_detached_pd_loses_its_fstab_line(tmp_path, md, tpu):
    box = node_box(tmp_path, md, endpoint(tpu))
    ok(box)
    pd_dir = f"{box.root}/mnt/common/shared_pd"
    assert [e for e in fstab_entries(box) if e[1] == pd_dir]
    md.attrs(tpubuild_shared_pd_device="")  # SHARED_PD_DISK_ATTACH turned off
    box.reboot()
    ok(box)
    assert not [e for e in fstab_entries(box) if e[1] == pd_dir]
    assert len([e for e in fstab_entries(box) if e[1].endswith("/nfs_share")]) == 1
