"""env_setup/scripts/startup.sh and the shared PD, run by real bash in the sandbox of
test_startup_sandbox.py: a disk attached after the boot (vm: tpu-attach, once shared_pd-seed is
done) is waited for, and the boot says what the seed left on the disk."""

from __future__ import annotations

import threading

import pytest
from test_startup import endpoint, node_box, ok, tpu  # noqa: F401  (tpu: the fixture)
from test_startup_sandbox import STARTUP


def _boot_while_the_disk_is_attached(box, dev) -> None:
    """Boot ``box`` while an attach (tpu-attach, mig-attach) creates the device ``dev`` once the
    boot says it waits for it; the boot mounts it read-only and says it waited for the seed."""
    done = threading.Event()

    def attach_when_waited_for() -> None:  # what the attach step does, once the boot waits for it
        while not done.wait(0.05):
            if "waiting for the dataset disk" in box.console():
                dev.touch()
                return

    attach = threading.Thread(target=attach_when_waited_for)
    attach.start()
    try:
        result = box.run(STARTUP, box.env(TPUBUILD_PD_WAIT_S="30"))
    finally:
        done.set()
        attach.join()
    assert result.returncode == 0, result.stderr
    assert "waiting for the dataset disk" in box.console() and "shared_pd-seed" in box.console()
    pd_dir = f"{box.root}/mnt/common/shared_pd"
    assert [c for c in box.calls() if c.startswith("mount ") and pd_dir in c and "ro" in c]


def test_a_disk_attached_after_the_boot_is_waited_for_then_mounted(tmp_path, md, tpu):
    """vm: tpu-attach attaches the shared PD once shared_pd-seed is done, after the hosts booted:
    the boot waits for the device, says so, then mounts it read-only."""
    box = node_box(tmp_path, md, endpoint(tpu))
    dev = box.root / "dev" / "disk" / "by-id" / "google-shared-pd"
    dev.unlink()
    _boot_while_the_disk_is_attached(box, dev)


@pytest.mark.parametrize("marker, said", [
    (None, "WARNING: shared PD at {dir} holds no seeded dataset (no .tpubuild-seed.json)"),
    ('{\n  "source": "gs://b/data/*",\n  "objects": 0,\n  "complete": false\n}\n', "holds an unfinished seed"),
    ('{\n  "source": "gs://b/data/*",\n  "objects": 3,\n  "complete": true\n}\n',
     "shared PD at {dir} holds the dataset seeded from gs://b/data/*"),
], ids=["no-marker", "unfinished", "complete"])
def test_the_boot_says_what_the_seed_left_on_the_shared_pd(tmp_path, md, tpu, marker, said):
    box = node_box(tmp_path, md, endpoint(tpu))
    pd_dir = box.root / "mnt" / "common" / "shared_pd"
    if marker is not None:
        pd_dir.mkdir(parents=True, exist_ok=True)
        (pd_dir / ".tpubuild-seed.json").write_text(marker)
    ok(box)  # said, never waited for or refused: the hosts are applied after the seed
    assert said.format(dir=pd_dir) in box.console()


def test_a_mig_host_waits_for_the_disk_mig_attach_gives_it_and_says_so(tmp_path, md):
    """mig: the instance template does not carry the shared PD (mig-attach gives it once seeded, the
    health check to a VM the MIG recreated): a mig host takes the same path as a vm host: it waits
    for the device, says so in its log, then mounts it read-only. startup.sh itself is unchanged for
    this: it is the template's metadata, and a change to it would recreate every running VM."""
    from test_startup_mig import mig_box

    box = mig_box(tmp_path, md, name="tpu-env1-a2bc")
    md.attrs(tpubuild_shared_pd_device="shared-pd")
    dev = box.root / "dev" / "disk" / "by-id" / "google-shared-pd"
    dev.parent.mkdir(parents=True, exist_ok=True)
    (box.state / "blkid").mkdir(exist_ok=True)
    (box.state / "blkid" / "google-shared-pd").write_text("TYPE=ext4\n")  # seeded: an ext4 filesystem
    _boot_while_the_disk_is_attached(box, dev)
    assert (box.run_dir / "ready").exists()
