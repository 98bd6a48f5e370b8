"""Bad input, everywhere: a corpus of broken inputs, each of which must exit 2 with
exactly one line on stderr that names the key or the line and says how to fix it, and no traceback.

Every case runs with no cloud reachable and no credentials (the ``no_cloud`` fixture): bad input
is refused before any client is built. Most cases run in-process through ``builder.cli.main``
(the `cli` fixture); the ones marked ``sub=True`` (a representative subset of every category) run
the real console script in a subprocess. Categories: values.env syntax, values and wrong types, impossible topologies, names
that would be illegal downstream (buckets, TPU, VM, disk, share), flag combinations, and missing
or unreadable files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, NODE, SHIPPED, rewrite_env, run_tpubuild

pytestmark = pytest.mark.usefixtures("no_cloud")

VM = EXAMPLES / "vm-v4-32.env"
V5E = EXAMPLES / "vm-v5litepod-16.env"
MIG = EXAMPLES / "mig-v6e-16-spot.env"
MINIMAL = (
    'ENV_BUILD_NAME="env1"\nPROJECT_ID="my-tpu-project"\nZONE="europe-west4-a"\n'
    'TPU_ACCELERATOR_TYPE="v3-8"\nTPU_PYTORCH_VERSION="pytorch-nightly"\n'
)


@dataclass(frozen=True)
class Case:
    id: str
    #: values.env: overrides of ``base`` (dict), raw text or bytes, or None for no file of ours
    env: dict[str, str | None] | str | bytes | None = None
    base: Path = SHIPPED
    #: the command line; "{values}" is the values file, "{tmp}" the test's folder
    args: tuple[str, ...] = ("validate", "--values", "{values}")
    #: fragments the one line must contain ("{values}" and "{tmp}" are substituted)
    expect: tuple[str, ...] = ()
    sub: bool = False
    setup: Callable[[Path], None] | None = field(default=None, compare=False)
    #: how many problems validate must report (None: any); 1 where a root cause has echoes
    problems: int | None = None


def _env(**kw: str | None) -> dict[str, str | None]:
    return kw


def _big(tmp: Path) -> None:
    (tmp / "big.env").write_text(MINIMAL + ("# padding\n" * 120_000))


def _loop(tmp: Path) -> None:
    (tmp / "loop.env").symlink_to(tmp / "loop.env")


def _dir(tmp: Path) -> None:
    (tmp / "values.env.d").mkdir()


def _other_env(tmp: Path) -> None:
    (tmp / "other.env").write_text(rewrite_env(SHIPPED.read_text(), ENV_BUILD_NAME="other-env"))


def _plans(tmp: Path) -> None:
    (tmp / "plans").mkdir()
    (tmp / "plan.tfplan").write_bytes(b"PK\x03\x04\x14\x00\x00\x00\x08\x00\x9c\xb1tfplan\xff\xfe")


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
    Case("env-zero-width-space", _env(ENV_BUILD_NAME="tpu\u200bdev1"), expect=("ENV_BUILD_NAME:", "'tpu\\u200bdev1'", "lowercase"),
         problems=1),
    Case("expansion-assign-default", MINIMAL + 'GCS_DATASET="gs://${BUCKET:=b}/x"\n',
         expect=("{values}:6: GCS_DATASET:", "${BUCKET:=b}", "does not support", "${NAME}"), sub=True),
    Case("expansion-length", MINIMAL + 'MOUNT_POINT="/mnt/${#ENV_BUILD_NAME}"\n', expect=("MOUNT_POINT:", "${#ENV_BUILD_NAME}", "does not support")),
    Case("backslash-t-in-double-quotes", MINIMAL + 'GCS_DATASET="gs://b/\\training/*"\n',
         expect=("{values}:6: GCS_DATASET:", "'gs://b/\\\\training/*'")),
    Case("value-200k-characters", _env(GCS_DATASET="gs://" + "a" * 200_000), expect=("GCS_DATASET:", "…' (200005 chars)")),
    Case("huge-file", None, args=("validate", "--values", "{tmp}/big.env"), expect=("{tmp}/big.env:", "too large", "under 1 MiB"), setup=_big),
    # ---------------------------------------------------------------- values and wrong types
    Case("capacity-word", _env(SHARED_FS_CAPACITY="lots"), expect=("SHARED_FS_CAPACITY:", "not a whole number", "digits only"), sub=True),
    Case("capacity-exponent", _env(SHARED_FS_CAPACITY="1e4"), expect=("SHARED_FS_CAPACITY:", "not a whole number")),
    Case("boot-disk-float", _env(BOOT_DISK_SIZE_GB="10.5"), expect=("BOOT_DISK_SIZE_GB:", "whole number")),
    Case("pd-size-empty", _env(SHARED_PD_DISK_SIZE=""), expect=("SHARED_PD_DISK_SIZE:", "whole number")),
    Case("bool-ja", _env(SHARED_PD_DISK_ATTACH="ja"), expect=("SHARED_PD_DISK_ATTACH:", "not a boolean", "write true or false")),
    Case("bool-list", _env(TPU_PREEMPTIBLE="[true]"), expect=("TPU_PREEMPTIBLE:", "not a boolean")),
    Case("cidr-33", _env(TPU_CIDR_BLOCK="10.3.0.0/33"), expect=("TPU_CIDR_BLOCK:", "CIDR form", "10.3.0.0/29")),
    Case("mount-empty", _env(MOUNT_POINT=""), expect=("MOUNT_POINT:", "not an absolute path")),
    Case("gcs-one-slash", _env(GCS_DATASET="gs:/bucket/x"), expect=("GCS_DATASET:", "not a gs:// URI")),
    Case("zone-underscores", _env(ZONE="europe_west4_a"), expect=("ZONE:", "not a zone", "europe-west4-a")),
    Case("project-space", _env(PROJECT_ID="my project"), expect=("PROJECT_ID:", "project ID")),
    Case("region-mismatch", _env(REGION="us-central1"), expect=("REGION:", "does not contain zone", 'REGION="europe-west4"'), sub=True),
    Case("tier-ssd", _env(SHARED_FS_TIER="ssd"), expect=("SHARED_FS_TIER:", "use one of BASIC_HDD")),
    Case("pd-type-ssd", _env(SHARED_PD_DISK_TYPE="ssd"), expect=("SHARED_PD_DISK_TYPE:", "pd-ssd")),
    Case("pd-ssd-on-tpu-vm", _env(SHARED_PD_DISK_TYPE="pd-ssd", SHARED_PD_DISK_ATTACH="true"),
         expect=("SHARED_PD_DISK_TYPE:", "attach only Balanced Persistent Disk", 'SHARED_PD_DISK_TYPE="pd-balanced"')),
    Case("image-latest", _env(GCE_IMAGE_VERSION="latest"), expect=("GCE_IMAGE_VERSION:", "YYYYMMDD")),
    Case("arch-typo", _env(TPU_ARCH="nod"), expect=("TPU_ARCH:", "use one of node, vm")),
    # ---------------------------------------------------------------- impossible topologies
    Case("v3-33", _env(TPU_ACCELERATOR_TYPE="v3-33"), expect=("TPU_ACCELERATOR_TYPE:", "valid sizes are"), sub=True),
    Case("v5litepod-3", _env(TPU_ACCELERATOR_TYPE="v5litepod-3"), base=V5E, expect=("TPU_ACCELERATOR_TYPE:", "v5litepod-4")),
    Case("v2-1024", _env(TPU_ACCELERATOR_TYPE="v2-1024"), expect=("TPU_ACCELERATOR_TYPE:", "v2-512")),
    Case("gpu-type", _env(TPU_ACCELERATOR_TYPE="nvidia-tesla-v100"), expect=("TPU_ACCELERATOR_TYPE:", "unknown accelerator type")),
    Case("node-v4", _env(TPU_ACCELERATOR_TYPE="v4-32"), base=NODE, expect=("TPU_ARCH:", "v2 and v3 only", 'TPU_ARCH="vm"')),
    Case("node-v5p-inferred", _env(TPU_ARCH=None, TPU_ACCELERATOR_TYPE="v5p-32"), base=NODE, expect=("TPU_PYTORCH_VERSION:", "v2-alpha-tpuv5")),
    Case("v6e-ubuntu", _env(TPU_ACCELERATOR_TYPE="v6e-16", ZONE="us-east1-d"), base=VM, expect=("TPU_RUNTIME_VERSION:", "use v2-alpha-tpuv6e")),
    Case("v3-on-v6e-runtime", _env(TPU_ACCELERATOR_TYPE="v3-8", TPU_RUNTIME_VERSION="v2-alpha-tpuv6e", ZONE="europe-west4-a"), base=VM,
         expect=("TPU_RUNTIME_VERSION:", "does not run on v3")),
    Case("vm-with-xrt-runtime", _env(TPU_ARCH="vm"), base=NODE, expect=("TPU_ARCH:", "contradicts")),
    Case("spot-node", _env(TPU_SPOT="true"), base=NODE, expect=("TPU_SPOT:", "only as TPU VMs")),
    Case("reserved-node", _env(TPU_RESERVED="true"), base=NODE, expect=("TPU_RESERVED:", "TPU VM option", "TPU_PREEMPTIBLE", 'TPU_ARCH="vm"')),
    # TPU_ARCH="mig": wrong generation, impossible topology, spot + reservation, a runtime
    Case("mig-v4", _env(TPU_ACCELERATOR_TYPE="v4-32"), base=MIG,
         expect=("TPU_ACCELERATOR_TYPE:", "v5p, v6e, tpu7x only", 'TPU_ARCH="vm"'), sub=True),
    Case("mig-v5p-24", _env(TPU_ACCELERATOR_TYPE="v5p-24"), base=MIG,
         expect=("TPU_ACCELERATOR_TYPE:", "not a size Cloud TPU offers", "v5p-384")),
    Case("mig-v6e-48", _env(TPU_ACCELERATOR_TYPE="v6e-48"), base=MIG, expect=("TPU_ACCELERATOR_TYPE:", "v6e-64")),
    Case("mig-spot-and-reservation", _env(TPU_RESERVED="true"), base=MIG,
         expect=("TPU_RESERVED:", 'means reservation, but TPU_PROVISIONING is "spot"', "remove TPU_RESERVED")),
    Case("mig-spot-named-reservation", _env(TPU_RESERVATION="my-res"), base=MIG,
         expect=("TPU_RESERVATION:", "names a reservation but the TPU is spot")),
    Case("vm-v6e-shared-pd", _env(SHARED_PD_DISK_ATTACH="true"), base=EXAMPLES / "vm-v6e-16.env",
         expect=("SHARED_PD_DISK_ATTACH:", "v6e TPU VMs attach only Hyperdisk", 'SHARED_PD_DISK_ATTACH="false"'), sub=True),
    Case("vm-v6e-shared-pd-balanced", _env(SHARED_PD_DISK_ATTACH="true", SHARED_PD_DISK_TYPE="pd-balanced"),
         base=EXAMPLES / "vm-v6e-16.env", expect=("SHARED_PD_DISK_ATTACH:", "pd-balanced dataset disk", "GCS_DATASET")),
    Case("mig-v6e-shared-pd", _env(SHARED_PD_DISK_ATTACH="true"), base=MIG,
         expect=("SHARED_PD_DISK_ATTACH:", "attach only Hyperdisk", 'SHARED_PD_DISK_ATTACH="false"')),
    Case("mig-tpu7x-wrong-zone", _env(TPU_ACCELERATOR_TYPE="tpu7x-8"), base=MIG,
         expect=("ZONE:", "tpu7x-8 is not offered in us-east5-b", 'ZONE="us-central1-c"')),
    Case("vm-tpu7x", _env(TPU_ACCELERATOR_TYPE="tpu7x-128", ZONE="us-central1-c", REGION=None),
         expect=("TPU_ARCH:", "tpu7x (tpu7x-128) has no TPU VM runtime", 'TPU_ARCH="mig"', "remove TPU_RUNTIME_VERSION")),
    Case("mig-runtime", _env(TPU_RUNTIME_VERSION="v2-alpha-tpuv6e"), base=MIG,
         expect=("TPU_RUNTIME_VERSION:", "no TPU runtime", "remove TPU_RUNTIME_VERSION")),
    Case("ssd-too-small", _env(SHARED_FS_TIER="BASIC_SSD"), expect=("SHARED_FS_CAPACITY:", "2560")),
    Case("high-scale-too-small", _env(SHARED_FS_TIER="HIGH_SCALE_SSD"), expect=("SHARED_FS_CAPACITY:", "10240")),
    Case("restore-without-disk", _env(SHARED_PD_RESTORE="latest", SHARED_PD_DISK_ATTACH="false"), expect=("SHARED_PD_RESTORE:", "needs the disk")),
    # ---------------------------------------------------------------- names illegal downstream
    Case("env-upper", _env(ENV_BUILD_NAME="TPU-Dev"), expect=("ENV_BUILD_NAME:", "lowercase"), sub=True, problems=1),
    Case("env-g00gle", _env(ENV_BUILD_NAME="g00gle"), expect=("{values}:6: ENV_BUILD_NAME:", "'g00gle'", "choose another ENV_BUILD_NAME"),
         problems=1),
    Case("env-too-long", _env(ENV_BUILD_NAME="a" * 25), expect=("ENV_BUILD_NAME:", "at most 24")),
    Case("env-goog", _env(ENV_BUILD_NAME="google-tpu"), expect=("ENV_BUILD_NAME:", "'goog'")),
    Case("bucket-64", _env(PROJECT_ID="p" * 30, ENV_BUILD_NAME="e" * 22), expect=("ENV_BUILD_NAME:", "64 characters", "at most 21")),
    Case("env-underscore", _env(ENV_BUILD_NAME="tpu_dev"), expect=("ENV_BUILD_NAME:", "lowercase"), problems=1),
    Case("env-dot", _env(ENV_BUILD_NAME="tpu.dev"), expect=("ENV_BUILD_NAME:", "lowercase"), problems=1),
    Case("env-leading-dash", _env(ENV_BUILD_NAME="-dev"), expect=("ENV_BUILD_NAME:",), problems=1),
    Case("project-goog", _env(PROJECT_ID="goog-research"), expect=("PROJECT_ID:", "'goog'")),
    Case("share-dash", _env(SHARED_FS="my-share"), expect=("SHARED_FS:", "Filestore share name")),
    Case("share-17", _env(SHARED_FS="a" * 17), expect=("SHARED_FS:", "at most 16")),
    Case("network-upper", _env(NETWORK="My_Net"), expect=("NETWORK:", "VPC network name")),
    Case("snapshot-name", _env(SHARED_PD_RESTORE="Bad_Snap"), expect=("SHARED_PD_RESTORE:", "snapshot name")),
    # ---------------------------------------------------------------- flag combinations
    Case("plan-initialize-tpu", args=("plan", "--values", "{values}", "--action", "initialize", "--tpu"),
         expect=("--tpu/--mig", "initialize takes no scope flags", "drop the flags"), sub=True),
    Case("render-initialize-mig", args=("render", "--values", "{values}", "--action", "initialize", "--mig"),
         expect=("--tpu/--mig", "initialize takes no scope flags")),
    Case("plan-bogus-action", args=("plan", "--values", "{values}", "--action", "bogus"), expect=("--action", "'bogus' is not an action", "use initialize, create, update, destroy or auto")),
    Case("render-mig-on-vm", base=VM, args=("render", "--values", "{values}", "--action", "update", "--mig"),
         expect=("--mig", "has no MIG", "use --tpu"), sub=True),
    Case("render-format-xml", args=("render", "--values", "{values}", "--format", "xml"), expect=("--format: 'xml' is not a format of 'tpubuild render'", "use yaml or json")),
    Case("plan-format-yaml", args=("plan", "--values", "{values}", "--format", "yaml"), expect=("--format: 'yaml' is not a format", "use text or json")),
    Case("only-on-create", args=("plan", "--values", "{values}", "--only", "tpu"), expect=("only:", "applies to update")),
    Case("only-unknown", args=("plan", "--values", "{values}", "--action", "update", "--only", "gpu"), expect=("only:", "gpu", "filestore, shared_pd, tpu")),
    Case("only-with-tpu", args=("render", "--values", "{values}", "--action", "update", "--only", "tpu", "--tpu"),
         expect=("only:", "cannot be combined", "--tpu/--mig")),
    Case("only-empty", args=("plan", "--values", "{values}", "--action", "update", "--only", ","), expect=("only:", "selection is empty")),
    Case("unknown-flag", args=("validate", "--values", "{values}", "--frobnicate"), expect=("--frobnicate: 'tpubuild validate' has no such option", "--help")),
    Case("no-command", args=(), expect=("no command given", "--help")),
    Case("unknown-command", args=("frobnicate",), expect=("unknown command 'frobnicate'", "'frobnicate'", "use one of"), sub=True),
    Case("guard-no-module", args=("guard", "--plan-json", "x.json", "--action", "update"), expect=("--module",)),
    Case("guard-initialize", args=("guard", "--plan-json", "x.json", "--module", "tpu", "--action", "initialize"),
         expect=("--action", "initialize runs no Terraform")),
    Case("guard-module-typo", args=("guard", "--plan-json", "x.json", "--module", "filestor", "--action", "update"),
         expect=("--module", "'filestor' is not a plan module", "filestore")),
    Case("dispatch-flag-maybe", args=("dispatch", "--values", "{values}", "--action", "create", "--tpu", "maybe"),
         expect=("_TPU", "'maybe'", "true, false, default"), sub=True),
    Case("dispatch-bogus-action", args=("dispatch", "--values", "{values}", "--action", "bogus"), expect=("_BUILD_ACTION", "'bogus'")),
    Case("submit-bogus-action", args=("submit", "--values", "{values}", "--action", "bogus"), expect=("--action", "'bogus'")),
    # dispatch/submit refuse a bad combination before building any client (no credentials here: no_cloud)
    Case("dispatch-initialize-tpu", args=("dispatch", "--values", "{values}", "--action", "initialize", "--tpu", "true"),
         expect=("_TPU/_MIG", "initialize takes no scope flags", "drop the flags"), sub=True),
    Case("dispatch-initialize-allow-wipe", args=("dispatch", "--values", "{values}", "--action", "initialize",
                                                 "--allow-wipe", "true"), expect=("_ALLOW_WIPE", "initialize applies no Terraform")),
    Case("dispatch-auto-mig", args=("dispatch", "--values", "{values}", "--action", "auto", "--mig", "true"),
         expect=("_MIG: auto decides the modules itself", "drop _MIG")),
    Case("dispatch-mig-on-vm", base=VM, args=("dispatch", "--values", "{values}", "--action", "destroy", "--mig", "true"),
         expect=("_MIG", "has no MIG")),
    Case("dispatch-wipe-without-seeder", args=("dispatch", "--values", "{values}", "--action", "update", "--tpu", "true",
                                               "--allow-wipe", "true"), expect=("_ALLOW_WIPE", "does not apply shared_pd")),
    Case("submit-auto-tpu", args=("submit", "--values", "{values}", "--action", "auto", "--tpu"),
         expect=("--tpu: auto decides the modules itself", "drop --tpu")),
    Case("submit-initialize-allow-data-loss", args=("submit", "--values", "{values}", "--action", "initialize",
                                                    "--allow-data-loss"), expect=("--allow-data-loss", "initialize applies no Terraform")),
    Case("finalize-bogus-action", args=("finalize", "--values", "{values}", "--build-id", "x", "--action", "bogus"),
         expect=("--action", "'bogus'")),
    Case("unlock-without-force", args=("unlock", "--values", "{values}"), expect=("--force",)),
    Case("train-unknown-model", args=("train", "--values", "{values}", "gpt5", "--dry-run"), expect=("'gpt5'", "roberta")),
    Case("logs-host-out-of-range", args=("logs", "--values", "{values}", "--host", "99", "--dry-run"), expect=("--host", "99", "0 to 3")),
    Case("logs-lines-not-int", args=("logs", "--values", "{values}", "--lines", "abc"), expect=("--lines: 'abc' is not a whole number",)),
    # ---------------------------------------------------------------- watch it
    Case("profile-bad-duration", VM.read_text(), args=("profile", "--values", "{values}", "--duration", "10x", "--dry-run"),
         expect=("--duration", "'10x'", "10s")),
    Case("profile-duration-too-long", VM.read_text(), args=("profile", "--values", "{values}", "--duration", "2h", "--dry-run"),
         expect=("--duration", "'2h'")),
    Case("profile-host-out-of-range", VM.read_text(), args=("profile", "--values", "{values}", "--host", "7", "--dry-run"),
         expect=("--host 7", "0 to 3")),
    Case("profile-node-legacy", base=NODE, args=("profile", "--values", "{values}", "--dry-run"), expect=("node architecture", "TPU_ARCH=vm")),
    Case("logs-metrics-follow", VM.read_text(), args=("logs", "--values", "{values}", "--metrics", "--follow", "--dry-run"),
         expect=("--metrics", "--follow")),
    Case("trigger-missing-flag", args=("trigger", "--values", "{values}", "--repo-owner", "a"), expect=("--repo-name",)),
    Case("trigger-node-file", base=NODE, args=("trigger", "--values", "{values}", "--repo-owner", "a", "--repo-name", "b"),
         expect=("TPU_ARCH:", "auto is refused", "tpubuild migrate")),
    Case("run-ship-missing", args=("run", "--values", "{values}", "--dry-run", "--ship", "nope.py", "--", "python3", "x.py"),
         expect=("--ship nope.py: does not exist", "under the folder you run tpubuild in")),
    Case("run-ship-outside", args=("run", "--values", "{values}", "--dry-run", "--ship", "/etc/passwd", "--", "true"),
         expect=("--ship /etc/passwd: is not under the current folder",)),
    Case("bootstrap-unwritable", args=("bootstrap", "--values", "{values}", "--output", "{tmp}/no/such/dir/cloudbuild.yaml"),
         expect=("{tmp}/no/such/dir/cloudbuild.yaml", "--output")),
    # ---------------------------------------------------------------- provisioning, zones, node legacy, migrate
    Case("provisioning-unknown", _env(TPU_PROVISIONING="cheap"), expect=("TPU_PROVISIONING:", "'cheap' is not allowed", "on-demand, spot")),
    Case("provisioning-vs-legacy", _env(TPU_PROVISIONING="reservation", TPU_SPOT="true"),
         expect=("TPU_SPOT:", "means spot", 'TPU_PROVISIONING is "reservation"', "remove TPU_SPOT")),
    Case("provisioning-preemptible-v5e", _env(TPU_PROVISIONING="preemptible"), base=V5E,
         expect=("TPU_PROVISIONING:", "not offered for v5e", "spot")),
    Case("provisioning-legacy-preemptible-v5e", _env(TPU_PREEMPTIBLE="true", TPU_PROVISIONING=None), base=V5E,
         expect=("TPU_PREEMPTIBLE:", "preemptible is not offered for v5e")),
    Case("provisioning-spot-node", _env(TPU_PROVISIONING="spot"), base=NODE, expect=("TPU_PROVISIONING:", "TPU Nodes", "tpubuild migrate")),
    Case("reservation-bad-name", _env(TPU_PROVISIONING="reservation", TPU_RESERVATION="My Res"),
         expect=("TPU_RESERVATION:", "not a reservation", "projects/PROJECT/zones/ZONE/reservations/NAME")),
    Case("reservation-without-provisioning", _env(TPU_RESERVATION="r1"), expect=("TPU_RESERVATION:", "names a reservation", 'TPU_PROVISIONING="reservation"')),
    Case("reservation-named-on-vm", _env(TPU_PROVISIONING="reservation", TPU_RESERVATION="r1"),
         expect=("TPU_RESERVATION:", "google-beta 6.50", "leave TPU_RESERVATION empty")),
    Case("reservation-other-zone", _env(TPU_PROVISIONING="reservation", TPU_RESERVATION="projects/my-tpu-project/zones/us-east1-d/reservations/r1"),
         expect=("TPU_RESERVATION:", "us-east1-d", "europe-west4-a")),
    Case("queued-not-bool", _env(TPU_QUEUED="maybe"), expect=("TPU_QUEUED:", "not a boolean")),
    Case("queued-on-node", _env(TPU_QUEUED="true"), base=NODE, expect=("TPU_QUEUED:", "not TPU Nodes")),
    Case("queued-preemptible", _env(TPU_QUEUED="true", TPU_PROVISIONING="preemptible", TPU_SPOT=None), base=VM,
         expect=("TPU_QUEUED:", "not preemptible")),
    Case("queued-valid-for-words", _env(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="6 hours"), expect=("TPU_QUEUED_VALID_FOR:", "not a duration", "6h")),
    Case("queued-valid-for-too-long", _env(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="45d"), expect=("TPU_QUEUED_VALID_FOR:", "out of range", "30d")),
    Case("queued-valid-for-too-short", _env(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="30s"), expect=("TPU_QUEUED_VALID_FOR:", "out of range")),
    Case("queued-valid-for-alone", _env(TPU_QUEUED_VALID_FOR="6h"), expect=("TPU_QUEUED_VALID_FOR:", "TPU_QUEUED is false")),
    Case("zone-check-bad", _env(TPU_ZONE_CHECK="off"), expect=("TPU_ZONE_CHECK:", "not allowed", "error, warn")),
    Case("queued-valid-for-zero", _env(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="0h"), expect=("TPU_QUEUED_VALID_FOR:", "out of range")),
    Case("queued-valid-for-negative", _env(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="-6h"), expect=("TPU_QUEUED_VALID_FOR:",)),
    Case("queued-valid-for-iso", _env(TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="PT6H"), expect=("TPU_QUEUED_VALID_FOR:",)),
    Case("zone-v3-32-us-central2-b", _env(ZONE="us-central2-b", REGION=None), expect=("ZONE:", "v3-32 is not offered in us-central2-b", "europe-west4-a")),
    Case("zone-v4-32-europe-west4-a", _env(ZONE="europe-west4-a"), base=VM, expect=("ZONE:", "v4-32 is not offered in europe-west4-a", "us-central2-b")),
    Case("node-plan-create", None, base=NODE, args=("plan", "--values", "{values}"),
         expect=("{values}:18: TPU_ARCH:", "2025-04-25", "tpubuild migrate"), sub=True),
    Case("node-render-update", _env(TPU_ARCH=None), base=NODE, args=("render", "--values", "{values}", "--action", "update", "--tpu"),
         expect=("TPU_PYTORCH_VERSION:", "pytorch-1.13 is a TPU Node runtime", "2025-04-25", "tpubuild migrate")),
    Case("migrate-output-directory", None, base=NODE, args=("migrate", "--values", "{values}", "--output", "{tmp}/values.env.d"),
         expect=("{tmp}/values.env.d: is a directory", "--output"), setup=_dir),
    Case("migrate-missing", args=("migrate", "--values", "{tmp}/nope.env"), expect=("{tmp}/nope.env: no such file",)),
    # ---------------------------------------------------------------- missing and unreadable files
    Case("plan-applied-missing", args=("plan", "--values", "{values}", "--applied", "{tmp}/nope.env"),
         expect=("--applied: {tmp}/nope.env: no such file", "values.env last applied", "--applied none"), sub=True),
    Case("plan-applied-other-env", args=("plan", "--values", "{values}", "--applied", "{tmp}/other.env"),
         expect=("--applied: {tmp}/other.env:", "another environment", "ENV_BUILD_NAME 'other-env'", "'tpu-dev1'",
                 "--applied none"), setup=_other_env),
    Case("render-auto-applied-other-env", args=("render", "--values", "{values}", "--action", "auto", "--applied",
                                                "{tmp}/other.env"), expect=("--applied: {tmp}/other.env:", "another environment"),
         setup=_other_env),
    Case("values-missing", args=("validate", "--values", "{tmp}/nope.env"), expect=("{tmp}/nope.env: no such file", "--values PATH"), sub=True),
    Case("values-missing-before-command", args=("--values", "{tmp}/nope.env", "plan"), expect=("{tmp}/nope.env: no such file",)),
    Case("values-directory", args=("validate", "--values", "{tmp}/values.env.d"), expect=("{tmp}/values.env.d: is a directory",), setup=_dir, sub=True),
    Case("values-symlink-loop", args=("validate", "--values", "{tmp}/loop.env"), expect=("{tmp}/loop.env: cannot read",), setup=_loop),
    Case("values-dev-null", args=("validate", "--values", "/dev/null"), expect=("/dev/null: ENV_BUILD_NAME:", "is required")),
    Case("plan-json-missing", args=("guard", "--plan-json", "{tmp}/plans/tpu.json", "--module", "tpu", "--action", "update"),
         expect=("{tmp}/plans/tpu.json: no such file", "terraform show -json"), setup=_plans),
    Case("plan-json-directory", args=("guard", "--plan-json", "{tmp}/plans", "--module", "tpu", "--action", "update"),
         expect=("{tmp}/plans: is a directory",), setup=_plans),
    Case("plan-json-is-binary-plan", args=("guard", "--plan-json", "{tmp}/plan.tfplan", "--module", "tpu", "--action", "create"),
         expect=("{tmp}/plan.tfplan:", "not UTF-8", "not the binary plan file"), setup=_plans, sub=True),
]


def _materialize(case: Case, tmp: Path) -> dict[str, str]:
    values = tmp / "values.env"
    if isinstance(case.env, dict):
        values.write_text(rewrite_env(case.base.read_text(), **case.env))
    elif isinstance(case.env, str):
        values.write_text(case.env)
    elif isinstance(case.env, bytes):
        values.write_bytes(case.env)
    else:
        values.write_text(case.base.read_text())
    if case.setup:
        case.setup(tmp)
    return {"values": str(values), "tmp": str(tmp)}


def _check(case: Case, code: int, out: str, err: str, subs: dict[str, str]) -> None:
    assert code == 2, f"{case.id}: exit {code}\n{err}"
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    if len(lines) > 1:  # validate reports every problem: one line each, then "N problems in FILE"
        assert re.fullmatch(rf"tpubuild: {len(lines) - 1} problems in .+", lines[-1]), f"{case.id}:\n{err}"
        lines = lines[:-1]
        assert all(ln.startswith("tpubuild: error: ") and "; " in ln for ln in lines), f"{case.id}:\n{err}"
    if case.problems is not None and case.args[0] == "validate":
        assert len(lines) == case.problems, f"{case.id}: the root cause once, not its echoes:\n{err}"
    # a value echoed in a message is cut (errors.ECHO_LIMIT): one line stays readable
    assert all(len(ln) < 1000 for ln in lines), f"{case.id}: a line of {max(map(len, lines))} characters"
    line = lines[0]
    assert line.startswith("tpubuild: error: "), line
    for fragment in case.expect:
        assert _sub(fragment, subs) in line, f"{case.id}: {fragment!r} not in {line!r}"
    # It says how to fix it: every message is "what is wrong; how to fix it".
    assert "; " in line.removeprefix("tpubuild: error: "), line


def _sub(text: str, subs: dict[str, str]) -> str:
    return text.replace("{values}", subs["values"]).replace("{tmp}", subs["tmp"])


def _names_key_or_line(fragment: str) -> bool:
    """A fragment that names where: a file (:line), a KEY, a --flag, a substitution, COMMAND, or
    (for a positional argument) the quoted bad value itself."""
    return bool(fragment.startswith(("{values}", "{tmp}", "/dev/null", "--", "_", "only:"))
                or re.fullmatch(r"'[^']+'", fragment)
                or re.search(r"\b[A-Z][A-Z0-9_]{2,}\b", fragment) or "is not a plan module" in fragment
                or "not an action" in fragment or "--" in fragment)


assert len(CASES) >= 60
assert all(any(_names_key_or_line(f) for f in c.expect) for c in CASES), \
    [c.id for c in CASES if not any(_names_key_or_line(f) for f in c.expect)]
assert len({c.id for c in CASES}) == len(CASES)
assert sum(c.sub for c in CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_in_process(cli, tmp_path: Path, case: Case) -> None:
    subs = _materialize(case, tmp_path)
    args = [_sub(a, subs) for a in case.args]
    code, out, err = cli(*args)
    _check(case, code, out, err, subs)


@pytest.mark.parametrize("case", [c for c in CASES if c.sub], ids=[c.id for c in CASES if c.sub])
def test_bad_input_console_script(tmp_path: Path, case: Case) -> None:
    subs = _materialize(case, tmp_path)
    proc = run_tpubuild(*[_sub(a, subs) for a in case.args], cwd=tmp_path)
    _check(case, proc.returncode, proc.stdout, proc.stderr, subs)


def test_unreadable_file(cli, tmp_path: Path) -> None:
    """chmod 000 blocks reads for ordinary users; root reads anyway, so there the test uses a file
    that no one can read: /proc/self/mem (reading offset 0 fails with EIO)."""
    values = tmp_path / "values.env"
    values.write_text(SHIPPED.read_text())
    values.chmod(0)
    try:
        if os.access(values, os.R_OK):  # root: chmod does not block reads
            target, fragment = Path("/proc/self/mem"), "cannot read"
            if not target.exists():
                pytest.skip("running as root without /proc: no file is unreadable to us")
        else:
            target, fragment = values, "permission denied; make the file readable"
        code, out, err = cli("validate", "--values", target)
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
        assert err.startswith(f"tpubuild: error: {target}: ") and fragment in err
    finally:
        values.chmod(0o644)


def test_script_missing_when_a_pipeline_uses_it(cli, make_env) -> None:
    """A seed-era MIG_SETUP_SCRIPT path is a warning when the file loads and an error when the
    pipeline would use it: render exits 2 with one error line (after the load's warning), and
    validate, which reports what render would refuse, gives that same line."""
    path = make_env(SHIPPED, MIG_SETUP_SCRIPT="env_setup/scripts/setup_mig.sh")
    code, out, err = cli("validate", "--values", path)
    assert code == 2
    validate_errors = [line for line in err.splitlines() if line.startswith("tpubuild: error: ")]
    code, out, err = cli("render", "--values", path, "--action", "create")
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("tpubuild: error: ")]
    others = [line for line in err.splitlines() if not line.startswith("tpubuild: error: ")]
    assert len(errors) == 1 and "MIG_SETUP_SCRIPT" in errors[0] and validate_errors == errors
    assert all(line.startswith("tpubuild: warning: ") and "MIG_SETUP_SCRIPT" in line for line in others)
