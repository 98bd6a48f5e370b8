"""The health check (TPU_RECOVERY) on the Compute Engine path (TPU_ARCH="mig") in the sandbox of
tests/shell/test_recovery_sandbox.py (the same fake gcloud, the real CLI, the build as Cloud Build
plays it): the dataset disk given to VMs the MIG recreated before training is relaunched, and the
two groups make-before-break alternates (``tpu-<env>`` and ``tpu-<env>-b``): the live one is
watched, both or neither leave everything as it is."""

from __future__ import annotations

from pathlib import Path

from tests.shell.test_recovery_sandbox import MIG, _launched, _nothing_happened, _sandbox


def _attached(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("gcloud compute instances attach-disk")]


def test_a_vm_the_mig_recreated_gets_the_dataset_disk_before_the_relaunch(tmp_path: Path) -> None:
    """The instance template does not carry the disk (mig-attach gave it): two VMs preempted and
    recreated come back without it, and the check gives it to them, read-only as the device
    startup.sh waits for, before training is relaunched; the others are left as they are."""
    box = _sandbox(tmp_path, MIG)
    s = box.settings
    assert s.shared_pd_attach and s.shared_pd_type == "hyperdisk-ml"
    box.mig("RUNNING NONE\nRUNNING NONE\n")
    assert box.run_build()[0] == 0 and not _attached(box.calls())  # not whole: nothing to attach to yet
    box.put("disk_users", f"{s.tpu_name}-0000\n{s.tpu_name}-0001\n")  # 0002 and 0003 were recreated
    box.mig("RUNNING NONE\n" * 4)
    code, out = box.run_build("hb-2")
    assert code == 0, out
    calls = box.calls()
    attached = _attached(calls)
    assert sorted(c.split()[4] for c in attached) == [f"{s.tpu_name}-0002", f"{s.tpu_name}-0003"], calls
    for call in attached:
        assert f"--disk={s.shared_pd_name}" in call and "--mode=ro" in call and "--device-name=shared-pd" in call
        assert f"--zone={s.zone}" in call and f"--project={s.project_id}" in call
    launched = _launched(calls)
    assert len(launched) == 4 and max(map(calls.index, attached)) < min(map(calls.index, launched))
    assert f"{s.shared_pd_name} attached read-only to" in out
    assert [r["outcome"] for r in box.records()] == ["recovered"]


def test_a_recreation_no_check_saw_is_relaunched_once_the_disk_is_given(tmp_path: Path) -> None:
    """A VM recreated between two checks: the slice looks whole, but the VM lacks the disk, so the
    run lost a host: the check gives it the disk, marks the loss and training is relaunched."""
    box = _sandbox(tmp_path, MIG)
    s = box.settings
    box.mig("RUNNING NONE\n" * 4)
    code, out = box.run_build()
    assert code == 0 and "nothing to do" in out and not _attached(box.calls()), out
    box.put("disk_users", "".join(f"{s.tpu_name}-{i:04d}\n" for i in (0, 1, 3)))
    code, out = box.run_build("hb-2")
    assert code == 0, out
    assert [c.split()[4] for c in _attached(box.calls())] == [f"{s.tpu_name}-0002"]
    [record] = box.records()
    assert (record["outcome"], record["reason"]) == ("recovered", f"VMs recreated: {s.tpu_name}-0002")
    assert len(_launched(box.calls())) == 4 and box.mark() == {}


def test_a_hyperdisk_ml_not_yet_read_only_many_fails_the_check_and_says_why(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, MIG)
    box.mig("RUNNING NONE\n" * 4)
    box.put("disk_mode", "READ_WRITE_SINGLE")
    code, out = box.run_build()
    assert code != 0 and "is READ_WRITE_SINGLE, not READ_ONLY_MANY" in out and "--access-mode=READ_ONLY_MANY" in out
    assert not _attached(box.calls()) and not _launched(box.calls())


def test_after_a_swap_the_live_mig_slot_b_is_watched_given_the_disk_and_relaunched(tmp_path: Path) -> None:
    """mig after a make-before-break update: the slice is the group tpu-<env>-b (tpu-<env> is
    gone). A VM of b missing: not whole, marked (the MIG recreates it); whole again with the
    recreated VM lacking the disk: b's VM is given the disk, the launch reaches b's VMs."""
    box = _sandbox(tmp_path, MIG)
    s = box.settings
    live = f"{s.tpu_name}-b"
    box.put("disk_users", "".join(f"{live}-{i:04d}\n" for i in range(4)))  # mig-attach gave b's VMs the disk
    box.mig("RUNNING NONE\n" * 3, live)  # one VM of b lost; the MIG is recreating it
    code, out = box.run_build()
    assert code == 0, out
    assert f"{live}: 3 of 4 VMs running; the MIG recreates its VMs" in out
    assert box.mark()["reason"] == "3 of 4 VMs running" and not _launched(box.calls())
    listed = [c for c in box.calls() if "list-instances" in c]
    assert listed and all(c.split()[5] == live for c in listed), listed
    box.put("disk_users", "".join(f"{live}-{i:04d}\n" for i in (0, 1, 2)))  # 0003 came back without it
    box.mig("RUNNING NONE\n" * 4, live)
    code, out = box.run_build("hb-2")
    assert code == 0, out
    calls = box.calls()
    assert [c.split()[4] for c in _attached(calls)] == [f"{live}-0003"], calls
    launched = _launched(calls)
    assert sorted(c.split()[3] for c in launched) == [f"{live}-{i:04d}" for i in range(4)], launched
    assert f"tpubuild: the slice is {live}" in out
    assert not any(f" {s.tpu_name} " in c or f" {s.tpu_name}-0" in c for c in calls if "list-instances" in c or "ssh" in c)
    [record] = box.records()
    assert (record["outcome"], record["slice"], record["reason"]) == ("recovered", live, "3 of 4 VMs running")


def test_both_mig_slots_without_a_build_is_left_to_tpubuild_update(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, MIG)
    s = box.settings
    box.mig("RUNNING NONE\n" * 4)
    box.mig("RUNNING NONE\n", f"{s.tpu_name}-b")
    box.mig("RUNNING NONE\n", f"{s.tpu_name}-bx")  # not a slot: the filter and the case leave it out
    code, out = box.run_build()
    assert code == 0, out
    assert f"both {s.tpu_name} and {s.tpu_name}-b exist" in out and "tpubuild update" in out
    assert not any("list-instances" in c or "attach-disk" in c for c in box.calls())
    _nothing_happened(box)


def test_no_mig_slot_is_nothing_to_watch(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, MIG)
    s = box.settings
    box.mig("RUNNING NONE\n" * 4, f"x{s.tpu_name}")
    code, out = box.run_build()
    assert code == 0 and f"no MIG {s.tpu_name} or {s.tpu_name}-b exists" in out, out
    _nothing_happened(box)


def test_a_spot_slice_stopped_on_preemption_is_restarted_through_zero(tmp_path: Path) -> None:
    """A multi-host Spot slice is a bulk group whose VMs stop on preemption (Google's TPU Spot page:
    restart = delete and recreate): the check takes the group to 0, then grows it back to every VM
    at once (bulk mode grows only from 0); once whole, training is relaunched."""
    box = _sandbox(tmp_path, MIG)
    s = box.settings
    box.mig("RUNNING NONE\nTERMINATED NONE\nTERMINATED NONE\nRUNNING NONE\n")
    code, out = box.run_build()
    assert code == 0, out
    assert f"{s.tpu_name}: 2 of 4 VMs running, VMs stopped on preemption (Spot); the slice is restarted" in out
    resizes = [c for c in box.calls() if c.startswith("gcloud compute instance-groups managed resize")]
    assert [c.split("--size=")[1] for c in resizes] == ["0", "4"], resizes
    assert not _launched(box.calls())
    code, out = box.run_build("hb-2")  # the group grew back whole: training is relaunched
    assert code == 0 and "whole again" in out and len(_launched(box.calls())) == 4, out
