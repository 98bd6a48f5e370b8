"""The shared PD seeder's pipeline side: env_setup/seeder/run_seeder.sh, run by real bash against
the sandbox of test_startup_sandbox.py with a gcloud stub that plays the seeder VM (its guest
attribute answers are scripted); test_seeder.py runs the VM side and both together."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_startup_sandbox import (
    RUN_SEEDER, SEED_DISK, SEED_WORKSPACE, SEEDER_PIPELINE_ENV, MetadataServer, Sandbox, calls_of,
)

# gcloud as the pipeline sees it. state/vm: the seeder VM exists. state/guest: one answer of
# get-guest-attributes per line, the last one repeated ("-" = attribute not set yet).
GCLOUD_PIPELINE = r"""printf '%s\n' "gcloud $*" >>"$STUB_STATE/calls.log"
case "$1 $2 $3" in
  "compute instances describe") [[ -f "$STUB_STATE/vm" ]]; exit ;;
  "compute instances create")
    [[ -f "$STUB_STATE/create_fail" ]] && { echo "ERROR: (gcloud.compute.instances.create) quota" >&2; exit 1; }
    touch "$STUB_STATE/vm"; mkdir -p "$STUB_STATE/md"
    prev=""
    for a in "$@"; do
      if [[ $prev == --metadata-from-file ]]; then
        IFS=, read -r -a pairs <<<"$a"
        for p in "${pairs[@]}"; do cp "${p#*=}" "$STUB_STATE/md/${p%%=*}"; done
      fi
      prev=$a
    done
    exit 0 ;;
  "compute instances delete")
    [[ -f "$STUB_STATE/delete_fail" ]] && { echo "ERROR: (gcloud) delete failed" >&2; exit 1; }
    rm -f "$STUB_STATE/vm"; exit 0 ;;
  "compute disks describe")
    [[ -f "$STUB_STATE/no_disk" ]] && { echo "ERROR: not found" >&2; exit 1; }
    if [[ "$*" == *"value(accessMode)"* ]]; then
      [[ -f "$STUB_STATE/vm" ]] && echo "unexpected: the access mode is read while the seeder VM holds the disk" >&2
      cat "$STUB_STATE/access_mode" 2>/dev/null || echo READ_WRITE_SINGLE; exit 0
    fi
    if [[ -f "$STUB_STATE/disk_users" ]]; then cat "$STUB_STATE/disk_users"; fi; exit 0 ;;
  "compute disks update")
    [[ -f "$STUB_STATE/vm" ]] && { echo "ERROR: (gcloud.compute.disks.update) the disk is in use by seed-env1" >&2; exit 1; }
    [[ -f "$STUB_STATE/update_fail" ]] && { echo "ERROR: (gcloud.compute.disks.update) denied" >&2; exit 1; }
    [[ "$*" == *"--access-mode=READ_ONLY_MANY"* ]] && echo READ_ONLY_MANY >"$STUB_STATE/access_mode"; exit 0 ;;
  "compute instances get-guest-attributes")
    [[ -f "$STUB_STATE/vm" ]] || exit 1
    line=$(head -n 1 "$STUB_STATE/guest")
    if (( $(wc -l <"$STUB_STATE/guest") > 1 )); then sed -i 1d "$STUB_STATE/guest"; fi
    [[ $line == - ]] && { echo "ERROR: guest attribute not found" >&2; exit 1; }
    printf '%s\n' "$line"; exit 0 ;;
  "compute instances get-serial-port-output")
    echo "Nov 1 startup-script: tpubuild-seed: FATAL: something broke"; exit 0 ;;
esac
echo "unexpected gcloud call: $*" >&2
exit 64
"""

@pytest.fixture
def pipeline(tmp_path: Path, md: MetadataServer) -> Sandbox:
    box = Sandbox(tmp_path, md)
    box.write_stub("gcloud", GCLOUD_PIPELINE)
    return box


def run_pipeline(box: Sandbox, guest: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """Runs run_seeder.sh from a directory outside the repository (it must find its files)."""
    (box.state / "guest").write_text("\n".join(guest) + "\n")
    full = {"PATH": f"{box.bin}:/usr/bin:/bin", "HOME": str(box.base), "STUB_STATE": str(box.state),
            **SEEDER_PIPELINE_ENV, **env}
    return subprocess.run(["bash", str(RUN_SEEDER)], env=full, cwd=box.base, capture_output=True,
                          text=True, timeout=60)


def deleted(box: Sandbox) -> bool:
    return not (box.state / "vm").exists() and bool(calls_of(box, "gcloud compute instances delete seed-env1"))


def test_run_seeder_success(pipeline):
    box = pipeline
    result = run_pipeline(box, ["-", "running:copy dataset", "done:copied 4 objects from x"])
    assert result.returncode == 0, result.stderr
    assert "seeded: copied 4 objects from x" in result.stderr
    assert "seeder: running:copy dataset" in result.stderr
    create = calls_of(box, "gcloud compute instances create seed-env1")
    assert len(create) == 1
    args = create[0]
    for flag in ("--no-address", "--shielded-secure-boot", "--shielded-vtpm",
                 "--project proj", "--zone europe-west4-a",
                 "--disk name=pd-env1,device-name=tpubuild-seed,mode=rw,boot=no,auto-delete=no",
                 "enable-guest-attributes=TRUE", "tpubuild-seed-mode=seed"):
        assert flag in args
    md_files = box.state / "md"
    assert (md_files / "startup-script").read_text() == SEED_DISK.read_text()
    assert (md_files / "tpubuild-gcs-dataset").read_text() == "gs://proj-env1-dataset/a,b/*"
    assert (md_files / "tpubuild-allow-wipe").read_text() == "false"
    assert (md_files / "tpubuild-workspace").read_text() == SEED_WORKSPACE
    assert not (md_files / "tpubuild-prep-script").exists()
    assert deleted(box)
    assert "--keep-disks=data" in calls_of(box, "gcloud compute instances delete")[0]


def test_run_seeder_error_names_the_error(pipeline):
    box = pipeline
    result = run_pipeline(box, ["running:prepare disk",
                                "error:disk tpubuild-seed holds the dataset gs://old/*; refusing"])
    assert result.returncode == 1
    assert "ERROR: the seeder VM reported: disk tpubuild-seed holds the dataset gs://old/*; refusing" in result.stderr
    assert "FATAL: something broke" in result.stderr  # the serial console's tail
    assert deleted(box)


def test_run_seeder_timeout(pipeline):
    box = pipeline
    result = run_pipeline(box, ["running:copy dataset"], SEED_TIMEOUT_S="1", SEED_POLL_S="0.05")
    assert result.returncode == 1
    assert "timed out after 1s waiting for the seeder VM seed-env1 (last state: running:copy dataset)" in result.stderr
    assert deleted(box)


def test_run_seeder_replaces_a_leftover_vm(pipeline):
    box = pipeline
    (box.state / "vm").touch()
    result = run_pipeline(box, ["done"])
    assert result.returncode == 0, result.stderr
    calls = [c.split()[3] for c in box.calls() if c.startswith("gcloud compute instances ")
             and c.split()[3] in ("create", "delete")]
    assert calls == ["delete", "create", "delete"]
    assert "left from an earlier run" in result.stderr
    assert deleted(box)


def test_run_seeder_checks_read_only_when_the_disk_is_in_use(pipeline):
    box = pipeline
    (box.state / "disk_users").write_text(
        "https://www.googleapis.com/compute/v1/projects/proj/zones/z/instances/worker-env1-abcd;"
        "https://www.googleapis.com/compute/v1/projects/proj/zones/z/instances/worker-env1-q1w2\n")
    result = run_pipeline(box, ["done:already seeded with 4 objects from x"], ALLOW_WIPE="true",
                          SEED_PREP_SCRIPT="prep.sh")
    assert result.returncode == 0, result.stderr
    args = calls_of(box, "gcloud compute instances create")[0]
    assert "mode=ro" in args and "tpubuild-seed-mode=check" in args
    assert "attached to worker-env1-abcd worker-env1-q1w2" in result.stderr
    assert (box.state / "md" / "tpubuild-prep-script").read_text() == "prep.sh"
    assert deleted(box)


def failed_run(box: Sandbox, stub_fault: str) -> subprocess.CompletedProcess[str]:
    """run_seeder.sh with GCLOUD_PIPELINE's ``stub_fault`` switched on (create_fail, delete_fail,
    no_disk): the step must fail with exit 1."""
    (box.state / stub_fault).touch()
    result = run_pipeline(box, ["done"])
    assert result.returncode == 1
    return result


def test_run_seeder_create_failure_still_cleans_up(pipeline):
    result = failed_run(pipeline, "create_fail")
    assert "could not create seeder VM seed-env1" in result.stderr
    assert not (pipeline.state / "vm").exists()


def test_run_seeder_undeletable_vm_fails_the_step(pipeline):
    result = failed_run(pipeline, "delete_fail")
    assert "could not delete seeder VM seed-env1" in result.stderr


def test_run_seeder_missing_disk(pipeline):
    result = failed_run(pipeline, "no_disk")
    assert "disk pd-env1 not found in europe-west4-a" in result.stderr
    assert not calls_of(pipeline, "gcloud compute instances create")


@pytest.mark.parametrize("env,message", [
    ({"DISK_NAME": ""}, "DISK_NAME is not set"),
    ({"ALLOW_WIPE": "maybe"}, "ALLOW_WIPE 'maybe' must be true or false"),
    ({"SEED_TIMEOUT_S": "soon"}, "SEED_TIMEOUT_S 'soon' must be a positive number"),
    ({"GCS_DATASET": "/local/data"}, "GCS_DATASET '/local/data' is not a gs:// URI"),
])
def test_run_seeder_bad_settings(pipeline, env, message):
    box = pipeline
    result = run_pipeline(box, ["done"], **env)
    assert result.returncode == 2
    assert message in result.stderr
    assert not [c for c in box.calls() if c.startswith("gcloud")]


# ---- Hyperdisk ML: written READ_WRITE_SINGLE, then READ_ONLY_MANY for every host ----

def test_run_seeder_hyperdisk_ml_is_written_then_read_only_many(pipeline):
    box = pipeline
    result = run_pipeline(box, ["running:copy dataset", "done:copied 4 objects from x"], DISK_TYPE="hyperdisk-ml")
    assert result.returncode == 0, result.stderr
    args = calls_of(box, "gcloud compute instances create")[0]
    # E2 cannot attach Hyperdisk: the seeder VM is a C3 there, and writes the disk (rw)
    assert "--machine-type c3-standard-8" in args and "mode=rw" in args and "tpubuild-seed-mode=seed" in args
    update = calls_of(box, "gcloud compute disks update pd-env1")
    assert len(update) == 1 and "--access-mode=READ_ONLY_MANY" in update[0] and "--zone europe-west4-a" in update[0]
    # the VM is gone before the switch (the stub refuses a switch while it holds the disk)
    assert (box.state / "access_mode").read_text().strip() == "READ_ONLY_MANY" and deleted(box)
    assert "pd-env1 is READ_ONLY_MANY: every host attaches it read-only" in result.stderr


def test_run_seeder_hyperdisk_ml_read_only_many_is_only_checked(pipeline):
    """A Hyperdisk ML disk already READ_ONLY_MANY (seeded before, or restored from a snapshot) is
    attached read-only and checked; its access mode is left alone."""
    box = pipeline
    (box.state / "access_mode").write_text("READ_ONLY_MANY\n")
    result = run_pipeline(box, ["done:already seeded with 4 objects from x"], DISK_TYPE="hyperdisk-ml")
    assert result.returncode == 0, result.stderr
    args = calls_of(box, "gcloud compute instances create")[0]
    assert "mode=ro" in args and "tpubuild-seed-mode=check" in args
    assert not calls_of(box, "gcloud compute disks update")
    assert "is READ_ONLY_MANY (written already)" in result.stderr


def test_run_seeder_pd_balanced_keeps_its_access_mode(pipeline):
    box = pipeline
    result = run_pipeline(box, ["done"], DISK_TYPE="pd-balanced")
    assert result.returncode == 0, result.stderr
    assert "--machine-type e2-standard-8" in calls_of(box, "gcloud compute instances create")[0]
    assert not calls_of(box, "gcloud compute disks update") and not [c for c in box.calls() if "accessMode" in c]


def test_run_seeder_hyperdisk_ml_switch_failure_fails_the_step(pipeline):
    box = pipeline
    (box.state / "update_fail").touch()
    result = run_pipeline(box, ["done"], DISK_TYPE="hyperdisk-ml")
    assert result.returncode == 1
    assert "pd-env1 is written but still READ_WRITE_SINGLE; set it: gcloud compute disks update pd-env1" in result.stderr
    assert deleted(box)
