"""The shared PD seeder's VM side: env_setup/seeder/seed_disk.sh, run by real bash against the
sandbox of test_startup_sandbox.py, alone and started by run_seeder.sh (the pipeline side, whose
own tests are test_run_seeder.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_startup_sandbox import (
    RUN_SEEDER, SEED_DISK, SEED_WORKSPACE, SEEDER_PIPELINE_ENV, MetadataServer, Sandbox, calls_of, make_device,
)

DATASET = "gs://proj-env1-dataset/dataset/*"
MARKER = ".tpubuild-seed.json"


class Disk:
    """The seeder VM's view: the attached device, what blkid sees, and the mounted contents."""

    def __init__(self, box: Sandbox) -> None:
        self.box = box
        self.dev = make_device(box.root, "tpubuild-seed")
        self.blkid = box.state / "blkid" / "google-tpubuild-seed"
        self.blkid.parent.mkdir(exist_ok=True)
        self.files = box.root / "mnt" / "tpubuild-seed"
        self.files.mkdir(parents=True)
        box.extra_env["STUB_DISK_DIR"] = str(self.files)

    def holds(self, fstype: str | None, files: dict[str, str] | None = None) -> None:
        if fstype:
            self.blkid.write_text(f"DEVNAME={self.dev}\nTYPE={fstype}\n")
        for name, content in (files or {}).items():
            (self.files / name).parent.mkdir(parents=True, exist_ok=True)
            (self.files / name).write_text(content)

    def marker(self) -> dict:
        return json.loads((self.files / MARKER).read_text())


def marker_text(source: str, objects: int = 2, complete: bool = True) -> str:
    return json.dumps({"source": source, "objects": objects, "prep_script": "",
                       "seeded_at": "2024-01-01T00:00:00Z", "complete": complete}, indent=2) + "\n"


@pytest.fixture
def seed(tmp_path: Path, md: MetadataServer) -> tuple[Sandbox, Disk]:
    box = Sandbox(tmp_path, md)
    md.attrs(tpubuild_gcs_dataset=DATASET, tpubuild_workspace=SEED_WORKSPACE, tpubuild_prep_script="",
             tpubuild_allow_wipe="false", tpubuild_seed_device="tpubuild-seed")
    for i in range(3):
        box.gcs(f"gs://proj-env1-dataset/dataset/shard{i}.bin", f"data {i}\n")
    box.gcs("gs://proj-env1-dataset/dataset/dict/dict.txt", "a 1\n")
    return box, Disk(box)


def run_seed(box: Sandbox) -> subprocess.CompletedProcess[str]:
    return box.run(SEED_DISK)


# ---------------------------------------------------------------------------------------------
# seed_disk.sh
# ---------------------------------------------------------------------------------------------
def test_blank_disk_is_formatted_copied_and_marked(seed, md):
    box, disk = seed
    result = run_seed(box)
    assert result.returncode == 0, result.stderr
    calls = box.calls()
    mkfs = [i for i, c in enumerate(calls) if c.startswith("mkfs.ext4")]
    copy = [i for i, c in enumerate(calls) if c.startswith("gcloud storage cp -r")]
    assert len(mkfs) == 1 and len(copy) == 1 and mkfs[0] < copy[0]
    assert calls[mkfs[0]].endswith(str(disk.dev))
    assert calls[copy[0]] == f"gcloud storage cp -r {DATASET} {disk.files}/"
    assert sorted(p.name for p in disk.files.iterdir()) == sorted(
        [MARKER, "dict", "shard0.bin", "shard1.bin", "shard2.bin"])
    marker = disk.marker()
    assert marker["source"] == DATASET and marker["objects"] == 4 and marker["complete"] is True
    assert md.guest["tpubuild/seed"] == f"done:copied 4 objects from {DATASET}"
    assert calls_of(box, "umount")  # left unmounted for the next owner


def test_same_marker_is_not_copied_again(seed, md):
    box, disk = seed
    disk.holds("ext4", {MARKER: marker_text(DATASET, objects=4), "shard0.bin": "x"})
    result = run_seed(box)
    assert result.returncode == 0, result.stderr
    assert not calls_of(box, "mkfs") and not calls_of(box, "gcloud")
    assert md.guest["tpubuild/seed"] == f"done:already seeded with 4 objects from {DATASET}"
    assert (disk.files / "shard0.bin").read_text() == "x"


def test_second_run_after_seeding_skips_everything(seed, md):
    box, disk = seed
    assert run_seed(box).returncode == 0
    before = len(box.calls())
    assert run_seed(box).returncode == 0
    after = box.calls()[before:]
    assert not [c for c in after if c.startswith(("mkfs", "gcloud"))]
    assert md.guest["tpubuild/seed"].startswith("done:already seeded with 4 objects")


@pytest.mark.parametrize("fstype", ["xfs", "ntfs"])
def test_foreign_filesystem_is_refused(seed, md, fstype):
    box, disk = seed
    disk.holds(fstype, {"important.db": "keep me"})
    result = run_seed(box)
    assert result.returncode == 1
    assert not calls_of(box, "mkfs") and not calls_of(box, "gcloud")
    assert (disk.files / "important.db").read_text() == "keep me"
    fatal = [x for x in box.console().splitlines() if "FATAL" in x]
    assert len(fatal) == 1 and f"filesystem '{fstype}'" in fatal[0] and "_ALLOW_WIPE=true" in fatal[0]
    assert md.guest["tpubuild/seed"].startswith("error:disk tpubuild-seed holds a foreign")


def test_partition_table_without_filesystem_is_refused(seed, md):
    box, disk = seed
    disk.blkid.write_text(f"DEVNAME={disk.dev}\nPTTYPE=gpt\n")
    assert run_seed(box).returncode == 1
    assert not calls_of(box, "mkfs")
    assert "partition table 'gpt'" in md.guest["tpubuild/seed"]


def test_foreign_filesystem_wiped_only_with_allow_wipe(seed, md):
    box, disk = seed
    disk.holds("xfs", {"important.db": "old"})
    md.attrs(tpubuild_allow_wipe="true")
    result = run_seed(box)
    assert result.returncode == 0, result.stderr
    assert len(calls_of(box, "mkfs.ext4")) == 1
    assert not (disk.files / "important.db").exists()
    assert disk.marker()["source"] == DATASET
    assert "WARNING: wiping foreign disk contents" in box.console()


def test_other_dataset_refused_then_wiped_with_allow_wipe(seed, md):
    box, disk = seed
    other = "gs://elsewhere/corpus/*"
    disk.holds("ext4", {MARKER: marker_text(other), "old.bin": "old"})
    assert run_seed(box).returncode == 1
    assert f"holds the dataset {other}, not {DATASET}" in md.guest["tpubuild/seed"]
    assert (disk.files / "old.bin").exists() and not calls_of(box, "mkfs")

    md.attrs(tpubuild_allow_wipe="TRUE")
    assert run_seed(box).returncode == 0
    assert not (disk.files / "old.bin").exists()
    assert disk.marker()["source"] == DATASET and disk.marker()["objects"] == 4


def test_unmarked_files_are_refused_but_empty_filesystem_is_used(seed, md):
    box, disk = seed
    disk.holds("ext4", {"notes.txt": "mine"})
    assert run_seed(box).returncode == 1
    assert "holds files without a tpubuild marker" in md.guest["tpubuild/seed"]

    (disk.files / "notes.txt").unlink()
    (disk.files / "lost+found").mkdir()
    assert run_seed(box).returncode == 0
    assert not calls_of(box, "mkfs") and disk.marker()["complete"] is True


def test_interrupted_copy_of_the_same_dataset_is_resumed(seed, md):
    box, disk = seed
    disk.holds("ext4", {MARKER: marker_text(DATASET, objects=0, complete=False), "shard0.bin": "x"})
    assert run_seed(box).returncode == 0
    assert not calls_of(box, "mkfs") and len(calls_of(box, "gcloud storage cp -r")) == 1
    assert disk.marker()["complete"] is True and disk.marker()["objects"] == 4


PREP = """set -euo pipefail
test "$PWD" = "$TPUBUILD_DATA_DIR"
test ! -e "$TPUBUILD_DATA_DIR/.tpubuild-seed.json" || grep -q '"complete": false' "$TPUBUILD_DATA_DIR/.tpubuild-seed.json"
ls shard0.bin >/dev/null
echo prepared >prepared.txt
printf 'prep-script\\n' >>"$STUB_STATE/calls.log"
"""


def test_prep_script_runs_after_the_copy_before_the_marker_completes(seed, md):
    box, disk = seed
    box.gcs(f"{SEED_WORKSPACE}/models/roberta/prep.sh", PREP)
    md.attrs(tpubuild_prep_script="models/roberta/prep.sh")
    result = run_seed(box)
    assert result.returncode == 0, result.stderr
    calls = box.calls()
    assert calls.index("prep-script") > max(i for i, c in enumerate(calls) if "cp -r" in c)
    assert (disk.files / "prepared.txt").read_text() == "prepared\n"
    assert disk.marker()["prep_script"] == "models/roberta/prep.sh"


def test_failing_prep_script_leaves_the_marker_incomplete(seed, md):
    box, disk = seed
    box.gcs(f"{SEED_WORKSPACE}/prep.sh", "exit 3\n")
    md.attrs(tpubuild_prep_script="prep.sh")
    assert run_seed(box).returncode == 1
    assert md.guest["tpubuild/seed"] == "error:SEED_PREP_SCRIPT prep.sh failed with exit 3"
    assert disk.marker()["complete"] is False


def test_dataset_matching_nothing_is_an_error(seed, md):
    box, disk = seed
    md.attrs(tpubuild_gcs_dataset="gs://proj-env1-dataset/nothing/*")
    assert run_seed(box).returncode == 1
    assert md.guest["tpubuild/seed"].startswith("error:gcloud storage cp -r gs://proj-env1-dataset/nothing/*")


@pytest.mark.parametrize("source,ok", [(DATASET, True), ("gs://elsewhere/x", False)])
def test_check_mode_only_reads(seed, md, source, ok):
    box, disk = seed
    disk.holds("ext4", {MARKER: marker_text(source, objects=4)})
    md.attrs(tpubuild_seed_mode="check", tpubuild_allow_wipe="true")
    result = run_seed(box)
    assert result.returncode == (0 if ok else 1)
    assert not calls_of(box, "mkfs") and not calls_of(box, "gcloud")
    assert [c for c in calls_of(box, "mount ")] == [f"mount -t ext4 -o ro,noload {disk.dev} {disk.files}"]
    assert md.guest["tpubuild/seed"].startswith("done:already seeded" if ok else "error:disk tpubuild-seed is attached read-only")


# ---------------------------------------------------------------------------------------------
# run_seeder.sh and seed_disk.sh together: `gcloud compute instances create` publishes the
# --metadata / --metadata-from-file values on the fake metadata server and boots the VM, that is,
# runs its startup-script (seed_disk.sh); the pipeline side then reads the guest attribute the
# VM wrote. This pins the contract between the two scripts (keys, device name, values).
# ---------------------------------------------------------------------------------------------
GCLOUD_E2E = r"""printf '%s\n' "gcloud $*" >>"$STUB_STATE/calls.log"
md_url="http://$TPUBUILD_METADATA_HOST/computeMetadata/v1/instance"
put_attr() { curl -sf -X PUT -H 'Metadata-Flavor: Google' --data-binary "$2" "$md_url/attributes/$1" >/dev/null; }
case "$1 $2 $3" in
  "storage cp "*) exec "$(dirname "$0")/gcs-cp" "$@" ;;
  "compute instances describe") [[ -f "$STUB_STATE/vm" ]]; exit ;;
  "compute disks describe") exit 0 ;;
  "compute instances create")
    prev=""; script=""
    for a in "$@"; do
      case $prev in
        --metadata)
          IFS=, read -r -a pairs <<<"$a"
          for p in "${pairs[@]}"; do put_attr "${p%%=*}" "${p#*=}"; done ;;
        --metadata-from-file)
          IFS=, read -r -a pairs <<<"$a"
          for p in "${pairs[@]}"; do
            if [[ ${p%%=*} == startup-script ]]; then script=${p#*=}; else put_attr "${p%%=*}" "$(cat "${p#*=}")"; fi
          done ;;
        --disk) [[ $a == *"device-name=tpubuild-seed"* ]] || { echo "unexpected device: $a" >&2; exit 1; } ;;
      esac
      prev=$a
    done
    touch "$STUB_STATE/vm"
    bash "$script" >"$STUB_STATE/serial.log" 2>&1 || true   # the VM boots
    exit 0 ;;
  "compute instances get-guest-attributes")
    curl -sf -H 'Metadata-Flavor: Google' "$md_url/guest-attributes/tpubuild/seed"; exit ;;
  "compute instances get-serial-port-output") cat "$STUB_STATE/serial.log"; exit 0 ;;
  "compute instances delete") rm -f "$STUB_STATE/vm"; exit 0 ;;
esac
echo "unexpected gcloud call: $*" >&2
exit 64
"""


@pytest.fixture
def e2e(seed, md) -> tuple[Sandbox, Disk]:
    box, disk = seed
    md.values.clear()
    md.writable_attributes = True
    box.write_stub("gcloud", GCLOUD_E2E)
    return box, disk


def run_e2e(box: Sandbox, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**box.env(), **SEEDER_PIPELINE_ENV, "GCS_DATASET": DATASET, **env}
    return subprocess.run(["bash", str(RUN_SEEDER)], env=full, cwd=box.base, capture_output=True,
                          text=True, timeout=60)


def test_seeder_end_to_end_blank_then_already_seeded(e2e, md):
    box, disk = e2e
    result = run_e2e(box)
    assert result.returncode == 0, result.stderr + (box.state / "serial.log").read_text()
    assert f"seeded: copied 4 objects from {DATASET}" in result.stderr
    assert disk.marker()["source"] == DATASET and disk.marker()["objects"] == 4
    assert md.values["instance/attributes/tpubuild-seed-mode"] == "seed"
    assert not (box.state / "vm").exists()

    result = run_e2e(box)
    assert result.returncode == 0
    assert f"seeded: already seeded with 4 objects from {DATASET}" in result.stderr
    assert len(calls_of(box, "mkfs.ext4")) == 1 and len(calls_of(box, "gcloud storage cp")) == 1


def test_seeder_end_to_end_foreign_disk_needs_allow_wipe(e2e, md):
    box, disk = e2e
    disk.holds("ext4", {MARKER: marker_text("gs://old/data/*"), "old.bin": "x"})
    result = run_e2e(box)
    assert result.returncode == 1
    assert ("ERROR: the seeder VM reported: disk tpubuild-seed holds the dataset gs://old/data/*, "
            f"not {DATASET}; refusing to overwrite it") in result.stderr
    assert (disk.files / "old.bin").exists() and not (box.state / "vm").exists()

    result = run_e2e(box, ALLOW_WIPE="true")
    assert result.returncode == 0, result.stderr
    assert not (disk.files / "old.bin").exists() and disk.marker()["source"] == DATASET
