"""Every values.env validation rule, good and bad, through `tpubuild validate`.

A bad case must exit 2 with exactly one stderr line of the form
``<file>:<line>: <KEY>: <what is wrong>; <how to fix it>`` where <line> is the line of the key
the message blames, and no traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import load
from builder.config.gate import for_validate
from tests.conftest import EXAMPLES, NODE, SHIPPED

VM = EXAMPLES / "vm-v4-32.env"
V5E = EXAMPLES / "vm-v5litepod-16.env"


def line_of(path: Path, key: str) -> int | None:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if line.split("=", 1)[0].strip().removeprefix("export ").strip() == key:
            return i
    return None


def assert_bad(cli, path: Path, key: str, fragment: str) -> str:
    code, out, err = cli("validate", "--values", path)
    lines = err.splitlines()
    assert code == 2, (code, out, err)
    # one line; or, where the bad value is used by another key (${PROJECT_ID} in GCS_DATASET), every
    # problem one line each, this key's first, then the count (validate reports all in one run)
    assert out == "" and (len(lines) == 1 or lines[-1].endswith(f"problems in {path}")), err
    msg = lines[0]
    line = line_of(path, key)
    where = f"{path}:{line}: " if line else f"{path}: "
    assert msg.startswith(f"tpubuild: error: {where}{key}: "), msg
    assert fragment in msg, msg
    what, sep, fix = msg.partition("; ")
    assert sep and fix.strip(), f"no fix in: {msg}"
    assert "Traceback" not in err
    return msg


# (base file, overrides, key blamed, fragment of the message)
BAD: list[tuple[str, Path, dict[str, str | None], str, str]] = [
    # --- project ID (GCP rules: 6-30, lowercase, letter first, no trailing '-')
    ("project-upper", NODE, {"PROJECT_ID": "My-Project"}, "PROJECT_ID", "not a Google Cloud project ID"),
    ("project-short", NODE, {"PROJECT_ID": "abc"}, "PROJECT_ID", "not a Google Cloud project ID"),
    ("project-digit-first", NODE, {"PROJECT_ID": "1project"}, "PROJECT_ID", "project ID"),
    ("project-trailing-dash", NODE, {"PROJECT_ID": "my-project-"}, "PROJECT_ID", "project ID"),
    ("project-31-chars", NODE, {"PROJECT_ID": "p" * 31}, "PROJECT_ID", "project ID"),
    ("project-underscore", NODE, {"PROJECT_ID": "my_project"}, "PROJECT_ID", "project ID"),
    ("project-domain-scoped", NODE, {"PROJECT_ID": "example.com:proj"}, "PROJECT_ID", "project ID"),
    ("project-goog", NODE, {"PROJECT_ID": "googly-project"}, "PROJECT_ID", "'goog'"),
    ("project-missing", NODE, {"PROJECT_ID": None, "GCS_DATASET": "gs://data/x"}, "PROJECT_ID", "is required"),
    ("project-missing-but-used", NODE, {"PROJECT_ID": None}, "GCS_DATASET", "refers to ${PROJECT_ID}"),
    ("project-empty", NODE, {"PROJECT_ID": ""}, "PROJECT_ID", "is required"),
    # --- ENV_BUILD_NAME (ends up in bucket, TPU and VM names)
    ("env-upper", NODE, {"ENV_BUILD_NAME": "Tpu-Dev"}, "ENV_BUILD_NAME", "lowercase"),
    ("env-underscore", NODE, {"ENV_BUILD_NAME": "tpu_dev"}, "ENV_BUILD_NAME", "lowercase"),
    ("env-leading-dash", NODE, {"ENV_BUILD_NAME": "-tpu"}, "ENV_BUILD_NAME", "lowercase"),
    ("env-trailing-dash", NODE, {"ENV_BUILD_NAME": "tpu-"}, "ENV_BUILD_NAME", "lowercase"),
    ("env-dot", NODE, {"ENV_BUILD_NAME": "tpu.dev"}, "ENV_BUILD_NAME", "lowercase"),
    ("env-25-chars", NODE, {"ENV_BUILD_NAME": "e" * 25}, "ENV_BUILD_NAME", "at most 24"),
    ("env-bucket-too-long", NODE, {"PROJECT_ID": "p" * 30, "ENV_BUILD_NAME": "e" * 22},
     "ENV_BUILD_NAME", "would be 64 characters"),
    ("env-goog", NODE, {"ENV_BUILD_NAME": "goog1"}, "ENV_BUILD_NAME", "'goog'"),
    ("env-empty", NODE, {"ENV_BUILD_NAME": ""}, "ENV_BUILD_NAME", "is required"),
    # --- zone and region
    ("zone-is-region", NODE, {"ZONE": "europe-west4"}, "ZONE", "not a zone"),
    ("zone-upper", NODE, {"ZONE": "EUROPE-WEST4-A"}, "ZONE", "not a zone"),
    ("zone-trailing-dash", NODE, {"ZONE": "europe-west4-"}, "ZONE", "not a zone"),
    ("zone-missing", NODE, {"ZONE": None}, "ZONE", "is required"),
    ("region-disagrees", NODE, {"REGION": "us-central1"}, "REGION", "does not contain zone"),
    ("region-form", NODE, {"REGION": "europe"}, "REGION", "not a region"),
    # --- accelerator type and topology
    ("accel-size", NODE, {"TPU_ACCELERATOR_TYPE": "v3-33"}, "TPU_ACCELERATOR_TYPE", "valid sizes are v3-8, v3-32"),
    ("accel-family", NODE, {"TPU_ACCELERATOR_TYPE": "v7-8"}, "TPU_ACCELERATOR_TYPE", "unknown accelerator type"),
    ("accel-prefix", NODE, {"TPU_ACCELERATOR_TYPE": "tpu-v3-32"}, "TPU_ACCELERATOR_TYPE", "unknown accelerator type"),
    ("accel-v2-too-big", NODE, {"TPU_ACCELERATOR_TYPE": "v2-2048"}, "TPU_ACCELERATOR_TYPE", "v2-512"),
    ("accel-missing", NODE, {"TPU_ACCELERATOR_TYPE": None}, "TPU_ACCELERATOR_TYPE", "is required"),
    # --- architecture vs generation: node is v2/v3 only
    ("node-v4-declared", NODE, {"TPU_ACCELERATOR_TYPE": "v4-32"}, "TPU_ARCH", "v2 and v3 only"),
    ("node-v5e-inferred", NODE, {"TPU_ARCH": None, "TPU_ACCELERATOR_TYPE": "v5litepod-16"},
     "TPU_PYTORCH_VERSION", "v2-alpha-tpuv5-lite"),
    ("arch-bogus", NODE, {"TPU_ARCH": "gpu"}, "TPU_ARCH", "use one of node, vm"),
    ("arch-vm-with-node-runtime", NODE, {"TPU_ARCH": "vm"}, "TPU_ARCH", "contradicts"),
    ("arch-node-with-vm-runtime", VM, {"TPU_ARCH": "node"}, "TPU_ARCH", "contradicts"),
    # --- runtime vs architecture and generation
    ("node-runtime-2.5", NODE, {"TPU_PYTORCH_VERSION": "pytorch-2.5"}, "TPU_PYTORCH_VERSION", "not a TPU Node runtime"),
    ("vm-runtime-bogus", VM, {"TPU_RUNTIME_VERSION": "tf-2.1"}, "TPU_RUNTIME_VERSION", "not a TPU VM runtime"),
    ("vm-runtime-wrong-gen", VM, {"TPU_RUNTIME_VERSION": "v2-alpha-tpuv5-lite"}, "TPU_RUNTIME_VERSION",
     "does not run on v4"),
    ("v5e-ubuntu", V5E, {"TPU_RUNTIME_VERSION": "tpu-ubuntu2204-base"}, "TPU_RUNTIME_VERSION", "use v2-alpha-tpuv5-lite"),
    ("runtime-both-names", VM, {"TPU_PYTORCH_VERSION": "v2-alpha-tpuv5"}, "TPU_RUNTIME_VERSION", "set only one"),
    ("runtime-missing", VM, {"TPU_RUNTIME_VERSION": None}, "TPU_PYTORCH_VERSION", "is required"),
    # --- Filestore tier, capacity and share name
    ("fs-tier-bogus", NODE, {"SHARED_FS_TIER": "GOLD"}, "SHARED_FS_TIER", "use one of BASIC_HDD, BASIC_SSD"),
    ("fs-ssd-1024", NODE, {"SHARED_FS_TIER": "BASIC_SSD"}, "SHARED_FS_CAPACITY", "below the BASIC_SSD minimum of 2560"),
    ("fs-premium-1024", NODE, {"SHARED_FS_TIER": "PREMIUM"}, "SHARED_FS_CAPACITY", "BASIC_SSD minimum"),
    ("fs-ssd-default-capacity", V5E, {"SHARED_FS_TIER": "BASIC_SSD", "SHARED_FS_CAPACITY": None},
     "SHARED_FS_TIER", "(the default)"),
    ("fs-highscale-2560", NODE, {"SHARED_FS_TIER": "HIGH_SCALE_SSD", "SHARED_FS_CAPACITY": "2560"},
     "SHARED_FS_CAPACITY", "minimum of 10240"),
    ("fs-capacity-unit", NODE, {"SHARED_FS_CAPACITY": "1TB"}, "SHARED_FS_CAPACITY", "not a whole number"),
    ("fs-capacity-small", NODE, {"SHARED_FS_CAPACITY": "500"}, "SHARED_FS_CAPACITY", "out of range"),
    ("fs-capacity-negative", NODE, {"SHARED_FS_CAPACITY": "-1024"}, "SHARED_FS_CAPACITY", "not a whole number"),
    ("fs-share-upper", NODE, {"SHARED_FS": "Share"}, "SHARED_FS", "Filestore share name"),
    ("fs-share-digit-first", NODE, {"SHARED_FS": "1share"}, "SHARED_FS", "Filestore share name"),
    ("fs-share-dash", NODE, {"SHARED_FS": "my-share"}, "SHARED_FS", "Filestore share name"),
    ("fs-share-17-basic", NODE, {"SHARED_FS": "s" * 17}, "SHARED_FS", "at most 16"),
    ("fs-share-33-zonal", NODE, {"SHARED_FS": "s" * 33, "SHARED_FS_TIER": "ZONAL"}, "SHARED_FS", "at most 32"),
    # --- shared PD
    ("pd-type", NODE, {"SHARED_PD_DISK_TYPE": "pd-extreme"}, "SHARED_PD_DISK_TYPE", "pd-standard, pd-balanced, pd-ssd"),
    ("pd-size-small", NODE, {"SHARED_PD_DISK_SIZE": "9"}, "SHARED_PD_DISK_SIZE", "out of range"),
    ("pd-size-huge", NODE, {"SHARED_PD_DISK_SIZE": "70000"}, "SHARED_PD_DISK_SIZE", "out of range"),
    ("pd-size-float", NODE, {"SHARED_PD_DISK_SIZE": "500.5"}, "SHARED_PD_DISK_SIZE", "whole number"),
    ("pd-restore-name", NODE, {"SHARED_PD_RESTORE": "Snap_1"}, "SHARED_PD_RESTORE", "not a snapshot name"),
    ("pd-restore-no-disk", NODE, {"SHARED_PD_RESTORE": "latest", "SHARED_PD_DISK_ATTACH": "false"},
     "SHARED_PD_RESTORE", "needs the disk"),
    # --- booleans
    ("bool-maybe", NODE, {"SHARED_PD_DISK_ATTACH": "maybe"}, "SHARED_PD_DISK_ATTACH", "not a boolean"),
    ("bool-two", NODE, {"TPU_PREEMPTIBLE": "2"}, "TPU_PREEMPTIBLE", "not a boolean"),
    # --- scheduling options and architecture-only keys
    ("sched-two", NODE, {"TPU_PREEMPTIBLE": "true", "TPU_RESERVED": "true"}, "TPU_RESERVED", "both true"),
    ("spot-on-node", NODE, {"TPU_SPOT": "true", "TPU_PREEMPTIBLE": "false"}, "TPU_SPOT", "only as TPU VMs"),
    ("reserved-on-node", NODE, {"TPU_RESERVED": "true"}, "TPU_RESERVED", "TPU VM option"),
    ("reserved-and-spot-vm", VM, {"TPU_SPOT": "true", "TPU_RESERVED": "true"}, "TPU_RESERVED", "both true"),
    ("spot-and-preemptible-vm", VM, {"TPU_SPOT": "true", "TPU_PREEMPTIBLE": "true"}, "TPU_SPOT", "both true"),
    ("tpu-external-ips-node", NODE, {"TPU_EXTERNAL_IPS": "true"}, "TPU_EXTERNAL_IPS", "TPU VM option"),
    ("mig-external-ip-vm", VM, {"MIG_EXTERNAL_IP": "true"}, "MIG_EXTERNAL_IP", "no MIG"),
    # --- paths and URIs
    ("mount-relative", NODE, {"MOUNT_POINT": "mnt/common"}, "MOUNT_POINT", "not an absolute path"),
    ("mount-dotdot", NODE, {"MOUNT_POINT": "/mnt/../etc"}, "MOUNT_POINT", "not an absolute path"),
    ("mount-double-slash", NODE, {"MOUNT_POINT": "/mnt//x"}, "MOUNT_POINT", "not an absolute path"),
    ("mount-space", NODE, {"MOUNT_POINT": "/mnt/my data"}, "MOUNT_POINT", "characters a mount point can't use"),
    ("gcs-s3", NODE, {"GCS_DATASET": "s3://bucket/x"}, "GCS_DATASET", "not a gs:// URI"),
    ("gcs-empty-bucket", NODE, {"GCS_DATASET": "gs://"}, "GCS_DATASET", "not a gs:// URI"),
    ("gcs-upper-bucket", NODE, {"GCS_DATASET": "gs://Bucket/x"}, "GCS_DATASET", "not a gs:// URI"),
    ("gcs-local-path", NODE, {"GCS_DATASET": "/data/wikitext"}, "GCS_DATASET", "not a gs:// URI"),
    ("script-absolute", NODE, {"MIG_SETUP_SCRIPT": "/root/setup.sh"}, "MIG_SETUP_SCRIPT", "inside this repository"),
    ("script-dotdot", NODE, {"MIG_SEED_DATA_PREP_SCRIPT": "../prep.sh"}, "MIG_SEED_DATA_PREP_SCRIPT", "inside this repository"),
    # --- CIDR: a private /29 (node)
    ("cidr-28", NODE, {"TPU_CIDR_BLOCK": "10.3.0.0/28"}, "TPU_CIDR_BLOCK", "exactly a /29"),
    ("cidr-host-bits", NODE, {"TPU_CIDR_BLOCK": "10.3.0.1/29"}, "TPU_CIDR_BLOCK", "CIDR form"),
    ("cidr-public", NODE, {"TPU_CIDR_BLOCK": "8.8.8.0/29"}, "TPU_CIDR_BLOCK", "not a private range"),
    ("cidr-no-prefix", NODE, {"TPU_CIDR_BLOCK": "10.3.0.0"}, "TPU_CIDR_BLOCK", "exactly a /29"),
    ("cidr-garbage", NODE, {"TPU_CIDR_BLOCK": "banana"}, "TPU_CIDR_BLOCK", "CIDR form"),
    # --- worker image and machine
    ("image-date-dashes", NODE, {"GCE_IMAGE_VERSION": "2020-05-27"}, "GCE_IMAGE_VERSION", "YYYYMMDD"),
    ("image-date-impossible", NODE, {"GCE_IMAGE_VERSION": "20201399"}, "GCE_IMAGE_VERSION", "YYYYMMDD"),
    ("boot-disk-small", NODE, {"BOOT_DISK_SIZE_GB": "5"}, "BOOT_DISK_SIZE_GB", "out of range"),
    ("machine-type", NODE, {"MACHINE_TYPE": "n1standard"}, "MACHINE_TYPE", "not a machine type"),
    ("network-upper", NODE, {"NETWORK": "Default"}, "NETWORK", "not a VPC network name"),
    ("subnetwork-underscore", VM, {"SUBNETWORK": "my_subnet"}, "SUBNETWORK", "not a subnetwork name"),
    ("image-family", NODE, {"SOURCE_IMAGE_FAMILY": "Torch XLA"}, "SOURCE_IMAGE_FAMILY", "not an image family"),
    ("model-upper", NODE, {"MODEL": "RoBERTa"}, "MODEL", "not a model folder name"),
]


@pytest.mark.parametrize("base, overrides, key, fragment", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_value(cli, make_env, base: Path, overrides: dict[str, str | None], key: str, fragment: str) -> None:
    assert_bad(cli, make_env(base, **overrides), key, fragment)


# (base, overrides, checks on Settings)
GOOD: list[tuple[str, Path, dict[str, str | None], dict[str, object]]] = [
    ("project-6", NODE, {"PROJECT_ID": "abcdef"}, {"project_id": "abcdef"}),
    ("project-30", NODE, {"PROJECT_ID": "p" + "0" * 28 + "x", "ENV_BUILD_NAME": "a"}, {"state_bucket": "p" + "0" * 28 + "x-a-tf-backend"}),
    ("env-digits", NODE, {"ENV_BUILD_NAME": "20200430"}, {"tpu_name": "tpu-20200430"}),
    ("env-24", NODE, {"ENV_BUILD_NAME": "e" * 24}, {"mig_name": "worker-" + "e" * 24}),
    ("env-1", NODE, {"ENV_BUILD_NAME": "a"}, {"filestore_name": "nfs-a", "shared_pd_name": "pd-a"}),
    ("region-derived", NODE, {"REGION": None, "ZONE": "us-central1-f"}, {"region": "us-central1"}),
    ("region-empty", NODE, {"REGION": ""}, {"region": "europe-west4"}),
    ("accel-v2-8", NODE, {"TPU_ACCELERATOR_TYPE": "v2-8"}, {"hosts": 1}),
    ("accel-v3-2048", NODE, {"TPU_ACCELERATOR_TYPE": "v3-2048", "MODEL": ""}, {"hosts": 256}),  # roberta: batch too small
    ("node-runtime-1.8", NODE, {"TPU_PYTORCH_VERSION": "pytorch-1.8"}, {"runtime_version": "pytorch-1.8"}),
    ("node-runtime-2.1", NODE, {"TPU_PYTORCH_VERSION": "pytorch-2.1"}, {"arch": "node"}),
    ("vm-v3-ubuntu", VM, {"TPU_ACCELERATOR_TYPE": "v3-32", "ZONE": "europe-west4-a"}, {"arch": "vm", "hosts": 4}),
    ("vm-v5p", VM, {"TPU_ACCELERATOR_TYPE": "v5p-32", "TPU_RUNTIME_VERSION": "v2-alpha-tpuv5", "ZONE": "us-east5-a"},
     {"hosts": 4}),
    ("vm-v6e", VM, {"TPU_ACCELERATOR_TYPE": "v6e-16", "TPU_RUNTIME_VERSION": "v2-alpha-tpuv6e", "ZONE": "us-east5-b",
                 "SHARED_PD_DISK_ATTACH": "false"},
     {"hosts": 4}),
    ("arch-upper", VM, {"TPU_ARCH": "VM"}, {"arch": "vm"}),
    ("fs-standard", NODE, {"SHARED_FS_TIER": "STANDARD"}, {"shared_fs_tier": "BASIC_HDD"}),
    ("fs-premium", NODE, {"SHARED_FS_TIER": "PREMIUM", "SHARED_FS_CAPACITY": "2560"}, {"shared_fs_tier": "BASIC_SSD"}),
    ("fs-lowercase", NODE, {"SHARED_FS_TIER": "basic_ssd", "SHARED_FS_CAPACITY": "4096"},
     {"shared_fs_tier": "BASIC_SSD", "shared_fs_capacity_gb": 4096}),
    ("fs-share-16", NODE, {"SHARED_FS": "a" * 15 + "_"}, {"shared_fs_name": "a" * 15 + "_"}),
    ("fs-share-32-zonal", NODE, {"SHARED_FS": "s" * 32, "SHARED_FS_TIER": "ZONAL"}, {"shared_fs_name": "s" * 32}),
    ("fs-highscale", NODE, {"SHARED_FS_TIER": "HIGH_SCALE_SSD", "SHARED_FS_CAPACITY": "10240"}, {"shared_fs_tier": "HIGH_SCALE_SSD"}),
    ("pd-balanced-10", NODE, {"SHARED_PD_DISK_TYPE": "pd-balanced", "SHARED_PD_DISK_SIZE": "10"},
     {"shared_pd_type": "pd-balanced", "shared_pd_size_gb": 10}),
    ("pd-restore-latest", NODE, {"SHARED_PD_RESTORE": "latest"}, {"shared_pd_restore": "latest"}),
    ("pd-restore-name", NODE, {"SHARED_PD_RESTORE": "pd-tpu-dev1-20260101"}, {"shared_pd_restore": "pd-tpu-dev1-20260101"}),
    ("bool-upper", NODE, {"SHARED_PD_DISK_ATTACH": "TRUE"}, {"shared_pd_attach": True}),
    ("bool-yes-no", NODE, {"TPU_PREEMPTIBLE": "yes", "SHARED_PD_DISK_ATTACH": "no"},
     {"tpu_preemptible": True, "shared_pd_attach": False}),
    ("bool-empty", NODE, {"TPU_PREEMPTIBLE": ""}, {"tpu_preemptible": False}),
    ("spot-vm", VM, {"TPU_SPOT": "true"}, {"tpu_spot": True}),
    ("reserved-vm", VM, {"TPU_RESERVED": "true", "TPU_SPOT": "false"}, {"tpu_reserved": True}),
    ("mig-external-node", NODE, {"MIG_EXTERNAL_IP": "true"}, {"mig_external_ip": True}),
    ("tpu-external-vm", VM, {"TPU_EXTERNAL_IPS": "true"}, {"tpu_external_ips": True}),
    ("mount-trailing-slash", NODE, {"MOUNT_POINT": "/data/"}, {"mount_point": "/data"}),
    ("gcs-wildcards", NODE, {"GCS_DATASET": "gs://b.c-d_e/x/**"}, {"gcs_dataset": "gs://b.c-d_e/x/**"}),
    ("gcs-empty", NODE, {"GCS_DATASET": ""}, {"gcs_dataset": ""}),
    ("cidr-192", NODE, {"TPU_CIDR_BLOCK": "192.168.5.8/29"}, {"tpu_cidr_block": "192.168.5.8/29"}),
    ("cidr-default", NODE, {"TPU_CIDR_BLOCK": None}, {"tpu_cidr_block": "10.3.0.0/29"}),
    ("image-date", NODE, {"GCE_IMAGE_VERSION": "20200527"}, {"gce_image_version": "20200527"}),
    ("image-leap-day", NODE, {"GCE_IMAGE_VERSION": "20240229"}, {"gce_image_version": "20240229"}),
    ("script-relative", NODE, {"MIG_SETUP_SCRIPT": "env_setup/scripts/x.sh"}, {"mig_setup_script": "env_setup/scripts/x.sh"}),
]


@pytest.mark.parametrize("base, overrides, expect", [g[1:] for g in GOOD], ids=[g[0] for g in GOOD])
def test_good_value(cli, make_env, base: Path, overrides: dict[str, str | None], expect: dict[str, object]) -> None:
    path = make_env(base, **overrides)
    code, out, err = cli("validate", "--values", path)
    s = load(path)
    # the value is good: validate refuses only what a later command would (a legacy TPU Node file,
    # a script that is not in the temporary folder): the gate's rows, builder/config/gate.py
    later = sorted(for_validate(s)[0], key=lambda e: e.line or 0)
    errors = [ln for ln in err.splitlines() if ln.startswith("tpubuild: error")]
    assert code == (2 if later else 0) and errors == [f"tpubuild: error: {e}" for e in later], err
    for field, value in expect.items():
        assert getattr(s, field) == value, field


def test_missing_script_path_is_a_load_warning_and_a_validate_error(cli, make_env) -> None:
    """Loading warns (destroy and status must keep working on a seed-era file); validate refuses
    it, as the pipeline that would run it does, with the same one line (exit 2)."""
    path = make_env(SHIPPED, MIG_SETUP_SCRIPT="scripts/not_here.sh")
    assert load(path).warnings == (f"{path}:{line_of(path, 'MIG_SETUP_SCRIPT')}: "
                                   "MIG_SETUP_SCRIPT='scripts/not_here.sh' does not exist in this repository "
                                   "(a seed-era path?); it is an error only when a pipeline uses it",)
    code, out, err = cli("validate", "--values", path)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"tpubuild: error: {path}:{line_of(path, 'MIG_SETUP_SCRIPT')}: MIG_SETUP_SCRIPT: "
                          "'scripts/not_here.sh' does not exist"), err
    seed = make_env(SHIPPED, MIG_SETUP_SCRIPT="env_setup/scripts/setup_mig.sh")  # the seed's own: migrate clears it
    assert load(seed).warnings == (f"{seed}:{line_of(seed, 'MIG_SETUP_SCRIPT')}: "
                                   "MIG_SETUP_SCRIPT='env_setup/scripts/setup_mig.sh' is the seed repository's "
                                   "own script, which tpubuild replaces; run tpubuild migrate to clear it",)
    code, out, err = cli("validate", "--values", seed)
    assert code == 2 and err.count("\n") == 1 and "MIG_SETUP_SCRIPT: " in err and "run tpubuild migrate" in err, err
