"""Bad input, everywhere: a corpus of broken values files, each of which must exit 2 with
exactly one line on stderr that names the key or the line and says how to fix it, and no traceback.

Every case runs with no cloud reachable and no credentials (the ``no_cloud`` fixture): bad input
is refused before any client is built. Most cases run in-process through ``builder.cli.main``
(the `cli` fixture); the ones marked ``sub=True`` (a representative subset of every category) run
the real console script in a subprocess. Categories: values.env syntax, values and wrong types,
impossible topologies, names that would be illegal downstream (buckets, TPU, VM, disk, share), and
provisioning, zones and the node legacy. Flags, commands and missing or unreadable files are
test_bad_input_flags.py; the machinery (``Case``, the checks) is tests/support/bad_input.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, NODE, SHIPPED
from tests.support.bad_input import (
    MINIMAL, Case, a_directory, big_file, check_table, overrides, run_console_script, run_in_process,
)

pytestmark = pytest.mark.usefixtures("no_cloud")

VM = EXAMPLES / "vm-v4-32.env"
V5E = EXAMPLES / "vm-v5litepod-16.env"
MIG = EXAMPLES / "mig-v6e-16-spot.env"


CASES: list[Case] = [
    # ---------------------------------------------------------------- values.env syntax
    Case("unterminated-quote", MINIMAL + 'ZONE="europe-west4-a\n', expect=("{values}:6: ZONE:", "is not closed", 'close it on this line: ZONE="..."'), sub=True),
    Case("garbage-line", MINIMAL + "this is not an assignment\n", expect=("{values}:6:", "cannot parse")),
    Case("lowercase-key", MINIMAL + "zone=europe-west4-a\n", expect=("{values}:6:", "not a valid key name", "UPPER_CASE")),
    Case("key-without-value", MINIMAL + "SHARED_FS\n", expect=("{values}:6: SHARED_FS:", "has no value")),
    Case("undefined-reference", MINIMAL + 'GCS_DATASET="gs://${BUCKET}/x"\n', expect=("{values}:6: GCS_DATASET:", "${BUCKET}", "define BUCKET earlier"), sub=True),
    Case("forward-reference", 'GCS_DATASET="gs://${PROJECT_ID}/x"\n' + MINIMAL, expect=("{values}:1: GCS_DATASET:", "not set above this line")),
    Case("unclosed-brace", MINIMAL + 'MOUNT_POINT="/mnt/${ENV_BUILD_NAME"\n', expect=("{values}:6: MOUNT_POINT:", "not closed")),
    Case("unbraced-dollar", MINIMAL + 'MOUNT_POINT="/mnt/$ENV_BUILD_NAME"\n', expect=("{values}:6: MOUNT_POINT:", "write ${ENV_BUILD_NAME}")),
    Case("command-substitution", MINIMAL + 'ENV_BUILD_NAME="$(whoami)"\n', expect=("{values}:6: ENV_BUILD_NAME:", "command substitution")),
    Case("backticks", MINIMAL + "PROJECT_ID=`gcloud config get project`\n", expect=("{values}:6: PROJECT_ID:", "command substitution")),
    Case("unquoted-space", MINIMAL + "MOUNT_POINT=/mnt/my data\n", expect=("{values}:6: MOUNT_POINT:", "space outside quotes", 'MOUNT_POINT="/mnt/my data"')),
    Case("junk-after-quote", MINIMAL + "ZONE='europe-west4-a'b\n", expect=("{values}:6:", "cannot parse")),
    Case("nul-byte", MINIMAL + 'NOTE="a\x00b"\n', expect=("{values}:6:", "NUL byte", "plain text")),
    Case("latin-1", MINIMAL.encode() + b'NOTE="caf\xe9"\n', expect=("{values}:6:", "not UTF-8", "save the file as UTF-8"), sub=True),
    Case("binary-file", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", expect=("{values}:", "not UTF-8")),
    Case("utf16-file", MINIMAL.encode("utf-16"), expect=("{values}:1:", "not UTF-8")),
    Case("empty-file", "", expect=("{values}: ENV_BUILD_NAME:", "is required", 'add ENV_BUILD_NAME="..."')),
    Case("only-comments", "# nothing here\n# at all\n", expect=("{values}: ENV_BUILD_NAME:", "is required")),
    # one root cause, one line: the keys made of a broken one through ${KEY} are not reported again
    Case("unterminated-quote-runs-on", SHIPPED.read_text().replace('ENV_BUILD_NAME="tpu-dev1"', 'ENV_BUILD_NAME="tpu-dev1'),
         expect=("{values}:6: ENV_BUILD_NAME:", "is not closed", "through line 9", 'ENV_BUILD_NAME="..."'), problems=1),
    Case("env-zero-width-space", overrides(ENV_BUILD_NAME="tpu\u200bdev1"), expect=("ENV_BUILD_NAME:", "'tpu\\u200bdev1'", "lowercase"),
         problems=1),
    Case("expansion-assign-default", MINIMAL + 'GCS_DATASET="gs://${BUCKET:=b}/x"\n',
         expect=("{values}:6: GCS_DATASET:", "${BUCKET:=b}", "does not support", "${NAME}"), sub=True),
    Case("expansion-length", MINIMAL + 'MOUNT_POINT="/mnt/${#ENV_BUILD_NAME}"\n', expect=("MOUNT_POINT:", "${#ENV_BUILD_NAME}", "does not support")),
    Case("backslash-t-in-double-quotes", MINIMAL + 'GCS_DATASET="gs://b/\\training/*"\n',
         expect=("{values}:6: GCS_DATASET:", "'gs://b/\\\\training/*'")),
    Case("value-200k-characters", overrides(GCS_DATASET="gs://" + "a" * 200_000), expect=("GCS_DATASET:", "…' (200005 chars)")),
    Case("huge-file", None, args=("validate", "--values", "{tmp}/big.env"), expect=("{tmp}/big.env:", "too large", "under 1 MiB"), setup=big_file),
    # ---------------------------------------------------------------- values and wrong types
    Case("capacity-word", overrides(SHARED_FS_CAPACITY="lots"), expect=("SHARED_FS_CAPACITY:", "not a whole number", "digits only"), sub=True),
    Case("capacity-exponent", overrides(SHARED_FS_CAPACITY="1e4"), expect=("SHARED_FS_CAPACITY:", "not a whole number")),
    Case("boot-disk-float", overrides(BOOT_DISK_SIZE_GB="10.5"), expect=("BOOT_DISK_SIZE_GB:", "whole number")),
    Case("pd-size-empty", overrides(SHARED_PD_DISK_SIZE=""), expect=("SHARED_PD_DISK_SIZE:", "whole number")),
    Case("bool-ja", overrides(SHARED_PD_DISK_ATTACH="ja"), expect=("SHARED_PD_DISK_ATTACH:", "not a boolean", "write true or false")),
    Case("bool-list", overrides(TPU_PREEMPTIBLE="[true]"), expect=("TPU_PREEMPTIBLE:", "not a boolean")),
    Case("cidr-33", overrides(TPU_CIDR_BLOCK="10.3.0.0/33"), expect=("TPU_CIDR_BLOCK:", "CIDR form", "10.3.0.0/29")),
    Case("mount-empty", overrides(MOUNT_POINT=""), expect=("MOUNT_POINT:", "not an absolute path")),
    Case("gcs-one-slash", overrides(GCS_DATASET="gs:/bucket/x"), expect=("GCS_DATASET:", "not a gs:// URI")),
    Case("zone-underscores", overrides(ZONE="europe_west4_a"), expect=("ZONE:", "not a zone", "europe-west4-a")),
    Case("project-space", overrides(PROJECT_ID="my project"), expect=("PROJECT_ID:", "project ID")),
    Case("region-mismatch", overrides(REGION="us-central1"), expect=("REGION:", "does not contain zone", 'REGION="europe-west4"'), sub=True),
    Case("tier-ssd", overrides(SHARED_FS_TIER="ssd"), expect=("SHARED_FS_TIER:", "use one of BASIC_HDD")),
    Case("pd-type-ssd", overrides(SHARED_PD_DISK_TYPE="ssd"), expect=("SHARED_PD_DISK_TYPE:", "pd-ssd")),
    Case("pd-ssd-on-tpu-vm", overrides(SHARED_PD_DISK_TYPE="pd-ssd", SHARED_PD_DISK_ATTACH="true"),
         expect=("SHARED_PD_DISK_TYPE:", "attach only Balanced Persistent Disk", 'SHARED_PD_DISK_TYPE="pd-balanced"')),
    Case("image-latest", overrides(GCE_IMAGE_VERSION="latest"), expect=("GCE_IMAGE_VERSION:", "YYYYMMDD")),
    Case("arch-typo", overrides(TPU_ARCH="nod"), expect=("TPU_ARCH:", "use one of node, vm")),
    # ---------------------------------------------------------------- impossible topologies
    Case("v3-33", overrides(TPU_ACCELERATOR_TYPE="v3-33"), expect=("TPU_ACCELERATOR_TYPE:", "valid sizes are"), sub=True),
    Case("v5litepod-3", overrides(TPU_ACCELERATOR_TYPE="v5litepod-3"), base=V5E, expect=("TPU_ACCELERATOR_TYPE:", "v5litepod-4")),
    Case("v2-1024", overrides(TPU_ACCELERATOR_TYPE="v2-1024"), expect=("TPU_ACCELERATOR_TYPE:", "v2-512")),
    Case("gpu-type", overrides(TPU_ACCELERATOR_TYPE="nvidia-tesla-v100"), expect=("TPU_ACCELERATOR_TYPE:", "unknown accelerator type")),
    Case("node-v4", overrides(TPU_ACCELERATOR_TYPE="v4-32"), base=NODE, expect=("TPU_ARCH:", "v2 and v3 only", 'TPU_ARCH="vm"')),
    Case("node-v5p-inferred", overrides(TPU_ARCH=None, TPU_ACCELERATOR_TYPE="v5p-32"), base=NODE, expect=("TPU_PYTORCH_VERSION:", "v2-alpha-tpuv5")),
    Case("v6e-ubuntu", overrides(TPU_ACCELERATOR_TYPE="v6e-16", ZONE="us-east1-d"), base=VM, expect=("TPU_RUNTIME_VERSION:", "use v2-alpha-tpuv6e")),
    Case("v3-on-v6e-runtime", overrides(TPU_ACCELERATOR_TYPE="v3-8", TPU_RUNTIME_VERSION="v2-alpha-tpuv6e", ZONE="europe-west4-a"), base=VM,
         expect=("TPU_RUNTIME_VERSION:", "does not run on v3")),
    Case("vm-with-xrt-runtime", overrides(TPU_ARCH="vm"), base=NODE, expect=("TPU_ARCH:", "contradicts")),
    Case("spot-node", overrides(TPU_SPOT="true"), base=NODE, expect=("TPU_SPOT:", "only as TPU VMs")),
    Case("reserved-node", overrides(TPU_RESERVED="true"), base=NODE, expect=("TPU_RESERVED:", "TPU VM option", "TPU_PREEMPTIBLE", 'TPU_ARCH="vm"')),
    # TPU_ARCH="mig": wrong generation, impossible topology, spot + reservation, a runtime
    Case("mig-v4", overrides(TPU_ACCELERATOR_TYPE="v4-32"), base=MIG,
         expect=("TPU_ACCELERATOR_TYPE:", "v5p, v6e, tpu7x only", 'TPU_ARCH="vm"'), sub=True),
    Case("mig-v5p-24", overrides(TPU_ACCELERATOR_TYPE="v5p-24"), base=MIG,
         expect=("TPU_ACCELERATOR_TYPE:", "not a size Cloud TPU offers", "v5p-384")),
    Case("mig-v6e-48", overrides(TPU_ACCELERATOR_TYPE="v6e-48"), base=MIG, expect=("TPU_ACCELERATOR_TYPE:", "v6e-64")),
    Case("mig-spot-and-reservation", overrides(TPU_RESERVED="true"), base=MIG,
         expect=("TPU_RESERVED:", 'means reservation, but TPU_PROVISIONING is "spot"', "remove TPU_RESERVED")),
    Case("mig-spot-named-reservation", overrides(TPU_RESERVATION="my-res"), base=MIG,
         expect=("TPU_RESERVATION:", "names a reservation but the TPU is spot")),
    Case("vm-v6e-shared-pd", overrides(SHARED_PD_DISK_ATTACH="true"), base=EXAMPLES / "vm-v6e-16.env",
         expect=("SHARED_PD_DISK_ATTACH:", "v6e TPU VMs attach only Hyperdisk", 'SHARED_PD_DISK_ATTACH="false"'), sub=True),
    Case("vm-v6e-shared-pd-balanced", overrides(SHARED_PD_DISK_ATTACH="true", SHARED_PD_DISK_TYPE="pd-balanced"),
         base=EXAMPLES / "vm-v6e-16.env", expect=("SHARED_PD_DISK_ATTACH:", "pd-balanced dataset disk", "GCS_DATASET")),
    Case("mig-v6e-shared-pd", overrides(SHARED_PD_DISK_ATTACH="true"), base=MIG,
         expect=("SHARED_PD_DISK_ATTACH:", "attach only Hyperdisk", 'SHARED_PD_DISK_ATTACH="false"')),
    Case("mig-tpu7x-wrong-zone", overrides(TPU_ACCELERATOR_TYPE="tpu7x-8"), base=MIG,
         expect=("ZONE:", "tpu7x-8 is not offered in us-east5-b", 'ZONE="us-central1-c"')),
    Case("vm-tpu7x", overrides(TPU_ACCELERATOR_TYPE="tpu7x-128", ZONE="us-central1-c", REGION=None),
         expect=("TPU_ARCH:", "tpu7x (tpu7x-128) has no TPU VM runtime", 'TPU_ARCH="mig"', "remove TPU_RUNTIME_VERSION")),
    Case("mig-runtime", overrides(TPU_RUNTIME_VERSION="v2-alpha-tpuv6e"), base=MIG,
         expect=("TPU_RUNTIME_VERSION:", "no TPU runtime", "remove TPU_RUNTIME_VERSION")),
    Case("ssd-too-small", overrides(SHARED_FS_TIER="BASIC_SSD"), expect=("SHARED_FS_CAPACITY:", "2560")),
    Case("high-scale-too-small", overrides(SHARED_FS_TIER="HIGH_SCALE_SSD"), expect=("SHARED_FS_CAPACITY:", "10240")),
    Case("restore-without-disk", overrides(SHARED_PD_RESTORE="latest", SHARED_PD_DISK_ATTACH="false"), expect=("SHARED_PD_RESTORE:", "needs the disk")),
    # ---------------------------------------------------------------- names illegal downstream
    Case("env-upper", overrides(ENV_BUILD_NAME="TPU-Dev"), expect=("ENV_BUILD_NAME:", "lowercase"), sub=True, problems=1),
    Case("env-g00gle", overrides(ENV_BUILD_NAME="g00gle"), expect=("{values}:6: ENV_BUILD_NAME:", "'g00gle'", "choose another ENV_BUILD_NAME"),
         problems=1),
    Case("env-too-long", overrides(ENV_BUILD_NAME="a" * 25), expect=("ENV_BUILD_NAME:", "at most 24")),
    Case("env-goog", overrides(ENV_BUILD_NAME="google-tpu"), expect=("ENV_BUILD_NAME:", "'goog'")),
    Case("bucket-64", overrides(PROJECT_ID="p" * 30, ENV_BUILD_NAME="e" * 22), expect=("ENV_BUILD_NAME:", "64 characters", "at most 21")),
    Case("env-underscore", overrides(ENV_BUILD_NAME="tpu_dev"), expect=("ENV_BUILD_NAME:", "lowercase"), problems=1),
    Case("env-dot", overrides(ENV_BUILD_NAME="tpu.dev"), expect=("ENV_BUILD_NAME:", "lowercase"), problems=1),
    Case("env-leading-dash", overrides(ENV_BUILD_NAME="-dev"), expect=("ENV_BUILD_NAME:",), problems=1),
    Case("project-goog", overrides(PROJECT_ID="goog-research"), expect=("PROJECT_ID:", "'goog'")),
    Case("share-dash", overrides(SHARED_FS="my-share"), expect=("SHARED_FS:", "Filestore share name")),
    Case("share-17", overrides(SHARED_FS="a" * 17), expect=("SHARED_FS:", "at most 16")),
    Case("network-upper", overrides(NETWORK="My_Net"), expect=("NETWORK:", "VPC network name")),
    Case("snapshot-name", overrides(SHARED_PD_RESTORE="Bad_Snap"), expect=("SHARED_PD_RESTORE:", "snapshot name")),
    # ---------------------------------------------------------------- provisioning, zones, node legacy, migrate
    Case("provisioning-unknown", overrides(TPU_PROVISIONING="cheap"), expect=("TPU_PROVISIONING:", "'cheap' is not allowed", "on-demand, spot")),
    Case("provisioning-vs-legacy", overrides(TPU_PROVISIONING="reservation", TPU_SPOT="true"),
         expect=("TPU_SPOT:", "means spot", 'TPU_PROVISIONING is "reservation"', "remove TPU_SPOT")),
    Case("provisioning-preemptible-v5e", overrides(TPU_PROVISIONING="preemptible"), base=V5E,
         expect=("TPU_PROVISIONING:", "not offered for v5e", "spot")),
    Case("provisioning-legacy-preemptible-v5e", overrides(TPU_PREEMPTIBLE="true", TPU_PROVISIONING=None), base=V5E,
         expect=("TPU_PREEMPTIBLE:", "preemptible is not offered for v5e")),
    Case("provisioning-spot-node", overrides(TPU_PROVISIONING="spot"), base=NODE, expect=("TPU_PROVISIONING:", "TPU Nodes", "tpubuild migrate")),
    Case("reservation-bad-name", overrides(TPU_PROVISIONING="reservation", TPU_RESERVATION="My Res"),
         expect=("TPU_RESERVATION:", "not a reservation", "projects/PROJECT/zones/ZONE/reservations/NAME")),
    Case("reservation-without-provisioning", overrides(TPU_RESERVATION="r1"), expect=("TPU_RESERVATION:", "names a reservation", 'TPU_PROVISIONING="reservation"')),
    Case("reservation-named-on-vm", overrides(TPU_PROVISIONING="reservation", TPU_RESERVATION="r1"),
         expect=("TPU_RESERVATION:", "google-beta 6.50", "leave TPU_RESERVATION empty")),
    Case("reservation-other-zone", overrides(TPU_PROVISIONING="reservation", TPU_RESERVATION="projects/my-tpu-project/zones/us-east1-d/reservations/r1"),
         expect=("TPU_RESERVATION:", "us-east1-d", "europe-west4-a")),
    Case("queued-not-bool", overrides(TPU_QUEUED="maybe"), expect=("TPU_QUEUED:", "not a boolean")),
    Case("queued-on-node", overrides(TPU_QUEUED="true"), base=NODE, expect=("TPU_QUEUED:", "not TPU Nodes")),
    Case("queued-preemptible", overrides(TPU_QUEUED="true", TPU_PROVISIONING="preemptible", TPU_SPOT=None), base=VM,
         expect=("TPU_QUEUED:", "not preemptible")),
    Case("queued-valid-for-words", overrides(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="6 hours"), expect=("TPU_QUEUED_VALID_FOR:", "not a duration", "6h")),
    Case("queued-valid-for-too-long", overrides(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="45d"), expect=("TPU_QUEUED_VALID_FOR:", "out of range", "30d")),
    Case("queued-valid-for-too-short", overrides(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="30s"), expect=("TPU_QUEUED_VALID_FOR:", "out of range")),
    Case("queued-valid-for-alone", overrides(TPU_QUEUED_VALID_FOR="6h"), expect=("TPU_QUEUED_VALID_FOR:", "TPU_QUEUED is false")),
    Case("zone-check-bad", overrides(TPU_ZONE_CHECK="off"), expect=("TPU_ZONE_CHECK:", "not allowed", "error, warn")),
    Case("queued-valid-for-zero", overrides(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="0h"), expect=("TPU_QUEUED_VALID_FOR:", "out of range")),
    Case("queued-valid-for-negative", overrides(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="-6h"), expect=("TPU_QUEUED_VALID_FOR:",)),
    Case("queued-valid-for-iso", overrides(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="PT6H"), expect=("TPU_QUEUED_VALID_FOR:",)),
    Case("zone-v3-32-us-central2-b", overrides(ZONE="us-central2-b", REGION=None), expect=("ZONE:", "v3-32 is not offered in us-central2-b", "europe-west4-a")),
    Case("zone-v4-32-europe-west4-a", overrides(ZONE="europe-west4-a"), base=VM, expect=("ZONE:", "v4-32 is not offered in europe-west4-a", "us-central2-b")),
    Case("node-plan-create", None, base=NODE, args=("plan", "--values", "{values}"),
         expect=("{values}:18: TPU_ARCH:", "2025-04-25", "tpubuild migrate"), sub=True),
    Case("node-render-update", overrides(TPU_ARCH=None), base=NODE, args=("render", "--values", "{values}", "--action", "update", "--tpu"),
         expect=("TPU_PYTORCH_VERSION:", "pytorch-1.13 is a TPU Node runtime", "2025-04-25", "tpubuild migrate")),
    Case("migrate-output-directory", None, base=NODE, args=("migrate", "--values", "{values}", "--output", "{tmp}/values.env.d"),
         expect=("{tmp}/values.env.d: is a directory", "--output"), setup=a_directory),
    Case("migrate-missing", args=("migrate", "--values", "{tmp}/nope.env"), expect=("{tmp}/nope.env: no such file",)),
]

check_table(CASES, at_least=40, console_at_least=5)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_in_process(cli, tmp_path: Path, case: Case) -> None:
    run_in_process(cli, tmp_path, case)


@pytest.mark.parametrize("case", [c for c in CASES if c.sub], ids=[c.id for c in CASES if c.sub])
def test_bad_input_console_script(tmp_path: Path, case: Case) -> None:
    run_console_script(tmp_path, case)
