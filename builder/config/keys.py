"""The table of every values.env key tpubuild knows, with its field, default and value parser.

A parser takes the raw string and returns the typed value, or raises ``ValueError`` whose text
is ``"<what is wrong>; <how to fix it>"``. The loader adds file, line and key.
Cross-key rules (zone vs region, tier vs capacity, runtime vs generation) live in
``builder.config.validate``.
"""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Callable
from typing import Any

from builder.config.candidates import listed
from builder.config.filestore import NAMES as FILESTORE_TIERS
from builder.facts import generations
from builder.facts.records import record
from builder.facts.source_models import DEFAULT_MODEL

Parser = Callable[[str], Any]


@record
class KeySpec:
    name: str
    field: str
    default: Any
    parse: Parser
    doc: str
    required: bool = False


def named(name: str, default: Any, parse: Parser, doc: str, required: bool = False) -> KeySpec:
    """The KeySpec of a key whose settings field is its name in lower case (``ROBERTA_LR`` ->
    ``roberta_lr``); a key whose field is named otherwise spells its ``KeySpec`` out."""
    return KeySpec(name, name.lower(), default, parse, doc, required)


def text(value: str) -> str:
    return value.strip()


def boolean(value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "yes", "1", "on"):
        return True
    if v in ("false", "no", "0", "off", ""):
        return False
    raise ValueError(f"{value!r} is not a boolean; write true or false")


#: Longest integer any key accepts, in digits (the largest maximum has 9).
MAX_INT_DIGITS = 18


def unset_or(parse: Parser, unset: Any) -> Parser:
    """``parse``, but an empty value means the key is not set (``unset``), as TPU_MAX_RUN_HOURS=""
    reads: the longest run Compute Engine allows, not a one-hour run the fix would have suggested."""
    return lambda value: unset if value.strip() == "" else parse(value)


def integer(minimum: int, maximum: int, unit: str, example: int | None = None) -> Parser:
    """A whole number in ``minimum..maximum``. The fix of a value that is not one shows the digits
    the user wrote when they are in range (``"8h"`` → ``8``), else ``example`` (default: the
    minimum). A key whose minimum turns a safety net off (ENV_TTL_HOURS: 0 is no TTL) passes an
    ``example`` that keeps it on: a fix-hint never suggests disabling one."""
    def parse(value: str) -> int:
        v = value.strip()
        if not re.fullmatch(r"[0-9]+", v):  # ASCII digits only: int() would also take '３２'
            digits = "".join(re.findall(r"[0-9]", v))[:MAX_INT_DIGITS]
            days = re.fullmatch(r"([0-9]{1,6}) *d(ays?)?", v.lower()) if unit == "hours" else None
            digits = str(int(days.group(1)) * 24) if days else digits  # "2d" is 48 hours
            shown = int(digits) if digits and minimum <= int(digits) <= maximum else example
            shown = minimum if shown is None else shown
            if example is not None and shown < example and shown == minimum:
                shown = example
            raise ValueError(f"{value!r} is not a whole number of {unit}; write digits only, e.g. {shown}")
        if len(v) > MAX_INT_DIGITS:  # never hand int() thousands of digits (its own limit's message leaks)
            raise ValueError(f"{v[:12]}... ({len(v)} digits) is out of range; use {minimum} to {maximum}")
        n = int(v)
        if not minimum <= n <= maximum:
            raise ValueError(f"{n} {unit} is out of range; use {minimum} to {maximum}")
        return n

    return parse


def pattern(regex: str, what: str, example: str, *, allow_empty: bool = False) -> Parser:
    compiled = re.compile(regex)

    def parse(value: str) -> str:
        v = value.strip()
        if allow_empty and v == "":
            return v
        if not compiled.fullmatch(v):
            raise ValueError(f"{value!r} is not {what}; write it like {example!r}")
        return v

    return parse


def choice(options: tuple[str, ...], aliases: dict[str, str] | None = None) -> Parser:
    aliases = aliases or {}

    def parse(value: str) -> str:
        v = value.strip()
        up = v.upper() if options[0].isupper() else v.lower()
        up = aliases.get(up, up)
        if up not in options:
            shown = ", ".join(o for o in options if o) + (" (or leave it empty)" if "" in options else "")
            raise ValueError(f"{value!r} is not allowed; use one of {shown}")
        return up

    return parse


def absolute_path(value: str) -> str:
    v = value.strip()
    if not v.startswith("/") or "//" in v or any(part == ".." for part in v.split("/")):
        raise ValueError(f"{value!r} is not an absolute path; write it like '/mnt/common'")
    if not re.fullmatch(r"[A-Za-z0-9_./-]+", v):
        raise ValueError(f"{value!r} has characters a mount point can't use; use letters, digits, '_', '-', '.', '/'")
    return v.rstrip("/") or "/"


def gcs_uri(value: str) -> str:
    v = value.strip()
    if v == "":
        return v
    m = re.fullmatch(r"gs://([a-z0-9][a-z0-9._-]{1,221}[a-z0-9])(/.*)?", v)
    if not m:
        raise ValueError(f"{value!r} is not a gs:// URI; write it like 'gs://my-bucket/dataset/*'")
    return v


def cidr29(value: str) -> str:
    v = value.strip()
    try:
        net = ipaddress.IPv4Network(v, strict=True)
    except ValueError:
        raise ValueError(f"{value!r} is not a network in CIDR form; write it like '10.3.0.0/29'") from None
    if net.prefixlen != 29:
        raise ValueError(f"{value!r} is a /{net.prefixlen}; a TPU Node needs exactly a /29, e.g. '10.3.0.0/29'")
    if not net.is_private:
        raise ValueError(f"{value!r} is not a private range; use an RFC 1918 /29 such as '10.3.0.0/29'")
    return str(net)


def relpath(value: str) -> str:
    v = value.strip()
    if v.startswith("/") or ".." in v.split("/"):
        raise ValueError(f"{value!r} must be a path inside this repository; write it like 'env_setup/scripts/my_setup.sh'")
    return v


def restore(value: str) -> str:
    v = value.strip()
    if v in ("", "latest"):
        return v
    if not re.fullmatch(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", v):
        raise ValueError(f"{value!r} is not a snapshot name; write 'latest' or a snapshot name like 'pd-myenv-20260101'")
    return v


def image_date(value: str) -> str:
    v = value.strip()
    if v == "":
        return v
    try:
        if not re.fullmatch(r"[0-9]{8}", v):
            raise ValueError
        datetime.date(int(v[:4]), int(v[4:6]), int(v[6:]))
    except ValueError:
        raise ValueError(f"{value!r} is not a YYYYMMDD image date; write it like '20200527', or leave it empty") from None
    return v


def timestamp(value: str) -> str:
    """A UTC time in RFC 3339, ``2027-01-15T08:00:00Z`` (a date alone means its midnight UTC), or
    ``+Nd``: N days from today, at midnight UTC (a preview form the shipped calendar examples use;
    builder.config.offers resolves it and refuses it on submit). Empty stays empty. Whether it lies
    in Google's advance window is checked by builder.config.offers."""
    v = value.strip()
    if v == "":
        return v
    relative = re.fullmatch(r"\+([0-9]{1,4})d", v)
    if relative:
        if not 1 <= int(relative.group(1)) <= 120:
            raise ValueError(f"{value!r} is out of Google's advance window; use +1d to +120d, or a UTC time")
        return v
    if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", v):
        v += "T00:00:00Z"
    try:
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", v):
            raise ValueError
        datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise ValueError(f"{value!r} is not a UTC time; write it like '2027-01-15T08:00:00Z' (RFC 3339, UTC)") from None
    return v


def service_account_email(value: str) -> str:
    """A user-managed service account's email (``<id>@<project>.iam.gserviceaccount.com``; account
    IDs per https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts/create).
    Google-managed defaults (Compute Engine, legacy Cloud Build) are refused: builds must run as a
    least-privilege account of their own."""
    v = value.strip()
    if v == "":
        return v
    if v.endswith(("@developer.gserviceaccount.com", "@cloudbuild.gserviceaccount.com")):
        raise ValueError(f"{value!r} is a default Google-managed account (broad roles); name a dedicated account, "
                         "or leave it empty and `tpubuild initialize` creates one")
    if not re.fullmatch(r"[a-z]([-a-z0-9]{4,28}[a-z0-9])@[a-z][-a-z0-9]{4,28}[a-z0-9]\.iam\.gserviceaccount\.com",
                        v, re.ASCII):
        raise ValueError(f"{value!r} is not a service account email; write it like "
                         "'builder@my-tpu-project.iam.gserviceaccount.com', or leave it empty")
    return v


_DURATION_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
#: Longest TPU_QUEUED_VALID_FOR accepted (a queued request older than this is not worth keeping).
MAX_QUEUED_SECONDS = 30 * 86400


def duration(value: str) -> str:
    """``6h``, ``90m``, ``1h30m``, ``2d``, ``3600s`` → the same text, normalised to lowercase;
    empty stays empty. ``duration_seconds`` turns it into seconds."""
    v = value.strip().lower()
    if v == "":
        return v
    if not re.fullmatch(r"([0-9]{1,9}[dhms])+", v):  # ASCII, and never thousands of digits for int()
        shown = repr(v) if len(v) <= 40 else repr(v[:37] + "...")
        raise ValueError(f"{shown} is not a duration; write it like '6h', '90m', '1h30m' or '2d'")
    seconds = duration_seconds(v)
    if not 60 <= seconds <= MAX_QUEUED_SECONDS:
        raise ValueError(f"{value!r} is out of range; use at least 1m and at most 30d")
    return v


def duration_seconds(value: str) -> int:
    return sum(int(n) * _DURATION_UNITS[u] for n, u in re.findall(r"([0-9]+)([dhms])", value))


def reservation_name(value: str) -> str:
    """A reservation name (``my-res``) or its full path
    (``projects/P/zones/Z/reservations/NAME``); empty stays empty."""
    v = value.strip()
    if v == "":
        return v
    name = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
    full = rf"projects/[a-z][a-z0-9-]{{4,28}}[a-z0-9]/(zones|locations)/[a-z]+-[a-z]+[0-9]+-[a-z]/reservations/{name}"
    if not (re.fullmatch(name, v) or re.fullmatch(full, v)):
        raise ValueError(f"{value!r} is not a reservation; write its name like 'my-tpu-reservation' or its path "
                         "'projects/PROJECT/zones/ZONE/reservations/NAME'")
    return v


_NAME_RE = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"

KEYS: tuple[KeySpec, ...] = (
    KeySpec("ENV_BUILD_NAME", "env_name", None,
            pattern(_NAME_RE, "a lowercase name of letters, digits and '-'", "tpu-dev1"),
            "Names this environment; part of every bucket, TPU and VM name.", required=True),
    KeySpec("PROJECT_ID", "project_id", None,
            pattern(r"[a-z][a-z0-9-]{4,28}[a-z0-9]", "a Google Cloud project ID (6-30 chars, lowercase, starts with a letter)", "my-tpu-project"),
            "Google Cloud project ID.", required=True),
    KeySpec("ZONE", "zone", None,
            listed(pattern(r"[a-z]+-[a-z]+[0-9]+-[a-z]", "a zone", "europe-west4-a"), "zone"),
            "Zone of the TPU, Filestore, disk and MIG; or an ordered, comma-separated list of zones to try "
            "(us-east5-b,us-east5-a): the candidates are tried zone by zone, mode by mode, and everything "
            "zonal is built in the zone that grants the slice (docs/capacity.md).", required=True),
    KeySpec("REGION", "region", "",
            pattern(r"[a-z]+-[a-z]+[0-9]+", "a region", "europe-west4", allow_empty=True),
            "Region; derived from ZONE when empty (each zone's own), and must agree with it: every zone of "
            "a ZONE list must be in it."),
    KeySpec("TPU_ARCH", "arch", "", choice(("node", "vm", "mig", "")),
            "node (TPU Node + MIG, XRT), vm (TPU VM pod, PJRT) or mig ("
            f"{'/'.join(g.name for g in generations.on_path('mig'))} slice as a Compute Engine "
            "MIG of TPU VMs with a workload policy, PJRT); inferred from the runtime when empty."),
    KeySpec("TPU_ACCELERATOR_TYPE", "accelerator_type", None, text,
            "TPU slice type, e.g. v3-32, v4-32, v5litepod-16.", required=True),
    KeySpec("TPU_PYTORCH_VERSION", "runtime_version", "", text,
            "TPU runtime: pytorch-1.x / pytorch-nightly (node), "
            f"{', '.join(dict.fromkeys(r for g in generations.records() for r in g.runtimes))} (vm)."),
    KeySpec("TPU_RUNTIME_VERSION", "runtime_version_alias", "", text,
            "Alias of TPU_PYTORCH_VERSION that reads better for vm runtimes."),
    KeySpec("TPU_CIDR_BLOCK", "tpu_cidr_block", "10.3.0.0/29", cidr29,
            "node only: the /29 the TPU Node's workers use."),
    KeySpec("TPU_PREEMPTIBLE", "tpu_preemptible", False, boolean, "Preemptible TPU."),
    KeySpec("TPU_SPOT", "tpu_spot", False, boolean, "Spot TPU (vm only)."),
    KeySpec("TPU_RESERVED", "tpu_reserved", False, boolean, "Use reserved capacity (vm only: google_tpu_v2_vm's scheduling_config.reserved)."),
    KeySpec("TPU_PROVISIONING", "provisioning", "",
            listed(choice(("on-demand", "spot", "preemptible", "reservation", "flex-start", "calendar", ""),
                          {"ondemand": "on-demand", "on_demand": "on-demand", "standard": "on-demand",
                           "reserved": "reservation", "flex": "flex-start", "dws": "flex-start",
                           "calendar-mode": "calendar", "future-reservation": "calendar"}), "mode"),
            "How the TPU gets capacity, or an ordered, comma-separated list of modes to try in each zone "
            "(spot,flex-start,on-demand; zone by zone, mode by mode; calendar stands alone): on-demand (default), spot, preemptible ("
            f"{'/'.join(g.name for g in generations.records() if 'preemptible' in g.provisioning)}), reservation, "
            "flex-start or calendar (mig: Dynamic Workload Scheduler; docs/capacity.md); "
            "the legacy TPU_SPOT/TPU_PREEMPTIBLE/TPU_RESERVED booleans map onto it."),
    KeySpec("TPU_RESERVATION", "reservation", "", reservation_name,
            "With TPU_PROVISIONING=reservation: the reservation's name or full path; empty = any matching reservation."),
    KeySpec("TPU_MAX_RUN_HOURS", "max_run_hours", 0, unset_or(integer(1, 168, "hours", example=168), 0),
            "With TPU_PROVISIONING=flex-start: hours the slice may run before Compute Engine deletes it "
            "(1-168, i.e. at most 7 days; empty or not set = 168)."),
    KeySpec("TPU_CALENDAR_START", "calendar_start", "", timestamp,
            "With TPU_PROVISIONING=calendar: when the reserved slice starts, a UTC time 1 to 120 days ahead "
            "(2027-01-15T08:00:00Z; a date alone is its midnight UTC); +14d (14 days from today, midnight UTC) "
            "previews in validate, plan and render, and submit asks for the date written out."),
    KeySpec("TPU_CALENDAR_DAYS", "calendar_days", 0, integer(1, 90, "days"),
            "With TPU_PROVISIONING=calendar: how many days the reservation lasts (1-90); Compute Engine "
            "deletes the slice's VMs at its end."),
    KeySpec("TPU_QUEUED", "queued", False, boolean,
            "vm/mig: request the TPU as a queued resource (google_tpu_v2_queued_resource) that waits for capacity."),
    KeySpec("TPU_QUEUED_VALID_FOR", "queued_valid_for", "", duration,
            "With TPU_QUEUED: how long the request waits before it expires, e.g. 6h, 90m, 2d (empty: no limit)."),
    KeySpec("TPU_REPLACE", "replace", "", choice(("make-before-break", "break-before-make", "")),
            "How an update that replaces the TPU VM goes: make-before-break (default on TPU_ARCH=vm: the new "
            "slice is created and READY before the old one is deleted; both are billed meanwhile) or "
            "break-before-make (one slice billed at a time; nothing runs if the new shape has no capacity)."),
    KeySpec("TPU_ZONE_CHECK", "zone_check", "error", choice(("error", "warn")),
            "error (default): a ZONE that builder/data/tpu_offers.json does not list for the generation is refused; "
            "warn: only warned about (for a zone Google added after the table's date)."),
    KeySpec("TPU_EXTERNAL_IPS", "tpu_external_ips", False, boolean, "vm only: give TPU VM hosts external IPs (off by default)."),
    KeySpec("TPU_MOVE", "move", True, boolean, "true (default): an update that places the environment in another zone "
            "moves it make-before-break, data copied first (docs/capacity.md); false: a zone change is destroy + create."),
    KeySpec("NETWORK", "network", "default",
            pattern(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", "a VPC network name", "default"), "VPC network."),
    KeySpec("SUBNETWORK", "subnetwork", "",
            pattern(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", "a subnetwork name", "default", allow_empty=True),
            "Subnetwork (vm); empty means the network's subnet in the region."),
    KeySpec("MOUNT_POINT", "mount_point", "/mnt/common", absolute_path,
            "Where nfs_share/ and shared_pd/ are mounted on every host."),
    KeySpec("GCS_DATASET", "gcs_dataset", "", gcs_uri,
            "gs:// URI of the dataset copied onto the shared PD (wildcards allowed)."),
    KeySpec("MACHINE_TYPE", "machine_type", "n1-standard-16",
            pattern(r"[a-z][a-z0-9]*-[a-z0-9-]+", "a machine type", "n1-standard-16"),
            "node only: machine type of the MIG workers."),
    KeySpec("GCE_IMAGE_VERSION", "gce_image_version", "",
            image_date,
            "node only: pin the worker image to this date; empty means the family's latest."),
    KeySpec("SOURCE_IMAGE_FAMILY", "source_image_family", "torch-xla",
            pattern(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", "an image family", "torch-xla"), "Worker image family."),
    KeySpec("SOURCE_IMAGE_PROJECT", "source_image_project", "ml-images",
            pattern(r"[a-z][a-z0-9.:-]{4,61}[a-z0-9]", "a project ID", "ml-images"), "Project holding the image."),
    KeySpec("BOOT_DISK_SIZE_GB", "boot_disk_size_gb", 200, integer(10, 65536, "GB"), "Worker boot disk size."),
    KeySpec("MIG_SETUP_SCRIPT", "mig_setup_script", "", relpath,
            "Optional user script run on every host after the mounts."),
    KeySpec("MIG_SEED_DATA_PREP_SCRIPT", "mig_seed_data_prep_script", "", relpath,
            "Optional script run by the seeder on the shared PD after the copy."),
    KeySpec("MIG_EXTERNAL_IP", "mig_external_ip", False, boolean,
            "node only: give MIG workers external IPs (off by default)."),
    KeySpec("SHARED_FS", "shared_fs_name", "tpushare",
            pattern(r"[a-z][a-z0-9_]{0,62}", "a Filestore share name (letter first, then lowercase letters, digits or '_'; at most 16 on BASIC tiers)", "tpushare"),
            "Filestore file-share name."),
    KeySpec("SHARED_FS_CAPACITY", "shared_fs_capacity_gb", 1024, integer(1024, 102400, "GiB"),
            "Filestore capacity in GiB (BASIC_HDD ≥ 1024, BASIC_SSD ≥ 2560)."),
    KeySpec("SHARED_FS_TIER", "shared_fs_tier", "BASIC_HDD",
            choice(FILESTORE_TIERS,
                   {"STANDARD": "BASIC_HDD", "PREMIUM": "BASIC_SSD"}),
            "Filestore tier; seed names STANDARD and PREMIUM mean BASIC_HDD and BASIC_SSD."),
    KeySpec("SHARED_PD_DISK_ATTACH", "shared_pd_attach", False, boolean,
            "Create the shared dataset disk and attach it read-only to every host."),
    KeySpec("SHARED_PD_DISK_SIZE", "shared_pd_size_gb", 200, integer(10, 65536, "GB"), "Shared PD size in GB."),
    KeySpec("SHARED_PD_DISK_TYPE", "shared_pd_type", "",
            choice(("", "pd-standard", "pd-balanced", "pd-ssd", "hyperdisk-ml")),
            "Shared dataset disk type; empty: the one the generation's hosts attach (its record's "
            "shared_pd_types: pd-balanced, or hyperdisk-ml where they attach only Hyperdisk)."),
    KeySpec("SHARED_PD_RESTORE", "shared_pd_restore", "", restore,
            "Create the shared PD from a snapshot: 'latest' or a snapshot name."),
    KeySpec("BUILD_SERVICE_ACCOUNT", "build_service_account", "", service_account_email,
            "Service account the Cloud Builds run as; empty: tpubuild-created tb-<ENV>-cb (see README)."),
    KeySpec("ENV_PROTECTED", "protected", False, boolean,
            "GitOps: true makes this environment's apply trigger wait for an approval "
            "(approvalConfig.approvalRequired; `gcloud beta builds approve`) before auto runs (docs/cloud.md)."),
    KeySpec("ENV_TTL_HOURS", "env_ttl_hours", 0, integer(0, 8760, "hours", example=8),
            "Destroy the TPU (only the TPU) this many hours after it is created; 0 or unset: no TTL."),
    KeySpec("TPU_RECOVERY", "recovery_mode", "", choice(("auto", "off", "")),
            "auto: a preempted or lost slice is recreated and training relaunched from its last checkpoint without a "
            "person (docs/recovery.md); off: nothing is. Empty: auto for spot and preemptible slices (vm, mig), else off."),
    KeySpec("TPU_RECOVERY_MAX_TRIES", "recovery_max_tries", 3, integer(1, 20, "tries"),
            "With TPU_RECOVERY: consecutive failed recoveries after which the health check stops "
            "retrying and says so (1-20, default 3)."),
    KeySpec("TPU_RECOVERY_MOVE", "recovery_move_mode", "", choice(("true", "false", "")),
            "With TPU_RECOVERY=auto and a ZONE list: a recovery whose zone grants the slice in no mode moves the "
            "environment to the next zone (docs/recovery.md). Empty: true; false: it stays in its zone."),
    KeySpec("MODEL", "model", DEFAULT_MODEL,
            pattern(r"[a-z][a-z0-9_]*", "a model folder name", DEFAULT_MODEL, allow_empty=True),
            "The model package under models/ the hosts are prepared for."),
)

#: Keys seed-era files carry that never meant anything; accepted silently.
IGNORED_KEYS: frozenset[str] = frozenset({
    "DOCKER_CONTAINER", "DOCKER_IMAGE_VERSION", "GCS_RAW_DATASET", "SOURCE_IMAGE_BASE",
    "USERNAME", "RED", "GREEN", "YELLOW", "BLUE", "NC",
})
