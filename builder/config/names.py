"""Google's naming rules, checked for every name tpubuild derives and every one a user supplies.

Each rule cites the page it comes from. ``check(settings, fail)`` runs after the keys parsed:
the derived names come from :class:`builder.config.settings.Settings` (the one place they are
made), so a new derived name is checked by adding it to :func:`derived`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any

from builder.config import model_registry

Fail = Callable[[str, str, str], None]

#: Compute Engine resource names (instances, disks, snapshots, templates, instance groups) and
#: Cloud TPU node IDs: RFC 1035 labels, 1-63 characters, a lowercase letter first, then lowercase
#: letters, digits or hyphens, not ending with a hyphen.
#: https://cloud.google.com/compute/docs/naming-resources#resource-name-format
#: https://cloud.google.com/tpu/docs/reference/rest/v2/projects.locations.nodes/create (nodeId)
GCE_NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", re.ASCII)

#: Filestore instance IDs: 1-63 characters, a lowercase letter first, lowercase letters, digits
#: and hyphens, not ending with a hyphen.
#: https://cloud.google.com/filestore/docs/reference/rest/v1/projects.locations.instances/create (instanceId)
FILESTORE_ID = GCE_NAME

#: Service account IDs: 6-30 characters matching ``[a-z]([-a-z0-9]*[a-z0-9])``.
#: https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts/create (accountId)
SERVICE_ACCOUNT_ID = re.compile(r"[a-z]([-a-z0-9]{4,28}[a-z0-9])", re.ASCII)

#: Cloud Storage bucket names (https://cloud.google.com/storage/docs/buckets#naming): lowercase
#: letters, digits, ``-``, ``_`` and ``.``; start and end with a letter or digit; 3-63 characters
#: (with dots up to 222, each dot-separated part at most 63); not an IP address in dotted-decimal
#: notation; not beginning with "goog"; not containing "google" or close misspellings such as
#: "g00gle".
_BUCKET_CHARS = re.compile(r"[a-z0-9][a-z0-9._-]*[a-z0-9]", re.ASCII)
_GOOGLE_LIKE = re.compile(r"g[o0][o0]g[l1][e3]")


def bucket_problem(name: str) -> str | None:
    """Why ``name`` is not a legal bucket name, or None."""
    if not _BUCKET_CHARS.fullmatch(name):
        return ("may only hold lowercase letters, digits, '-', '_' and '.', and must start and end with a letter "
                "or digit")
    if "." in name:
        if len(name) > 222:
            return f"is {len(name)} characters; a bucket name with dots allows at most 222"
        if ".." in name or "-." in name or ".-" in name:
            return "has '..', '-.' or '.-'"
        if any(len(part) > 63 for part in name.split(".")):
            return "has a dot-separated part longer than 63 characters"
    elif not 3 <= len(name) <= 63:
        return f"is {len(name)} characters; a bucket name has 3 to 63"
    try:
        ipaddress.IPv4Address(name)
        return "is an IP address"
    except ValueError:
        pass
    if name.startswith("goog"):
        return "begins with 'goog', which Cloud Storage reserves"
    if _GOOGLE_LIKE.search(name):
        return "contains 'google' or a close misspelling of it, which Cloud Storage forbids"
    return None


def reserved_part(name: str) -> str | None:
    """The part of a bucket name that Cloud Storage reserves ('goog' first, 'google' or a close
    misspelling anywhere), so the problem can be blamed on the key whose value holds it."""
    found = _GOOGLE_LIKE.search(name)
    if found:
        return found.group()
    return "goog" if name.startswith("goog") else None


def gce_problem(name: str) -> str | None:
    if len(name) > 63:
        return f"is {len(name)} characters; Compute Engine and Cloud TPU names allow at most 63"
    if not GCE_NAME.fullmatch(name):
        return "must be a lowercase letter, then lowercase letters, digits or '-', not ending in '-'"
    return None


def service_account_problem(name: str) -> str | None:
    if not SERVICE_ACCOUNT_ID.fullmatch(name):
        return "must be 6 to 30 characters: a lowercase letter, then lowercase letters, digits or '-', not ending in '-'"
    return None


RULES: dict[str, Callable[[str], str | None]] = {
    "bucket": bucket_problem, "gce": gce_problem, "filestore": gce_problem, "service account": service_account_problem,
}
#: What Google calls each kind, for messages.
KIND_NAMES = {"bucket": "Cloud Storage bucket", "gce": "Compute Engine / Cloud TPU resource",
              "filestore": "Filestore instance", "service account": "service account ID"}


def derived(settings: Any) -> list[tuple[str, str, str]]:
    """(kind, name, the key whose value it is made of) for every name tpubuild derives."""
    project_or_env = "PROJECT_ID" if settings.project_id.startswith("goog") else "ENV_BUILD_NAME"
    names = [
        ("bucket", settings.state_bucket, project_or_env),
        ("bucket", settings.dataset_bucket, project_or_env),
        ("gce", settings.tpu_name, "ENV_BUILD_NAME"),
        ("gce", settings.shared_pd_name, "ENV_BUILD_NAME"),
        ("gce", settings.mig_name + "-abcd", "ENV_BUILD_NAME"),  # a MIG names its VMs <base>-xxxx
        ("filestore", settings.filestore_name, "ENV_BUILD_NAME"),
        ("service account", settings.worker_service_account_id, "ENV_BUILD_NAME"),
        ("service account", settings.seeder_service_account_id, "ENV_BUILD_NAME"),
        ("service account", settings.plan_service_account_id, "ENV_BUILD_NAME"),
    ]
    builder_sa = getattr(settings, "builder_service_account_id", None)
    if builder_sa:
        names.append(("service account", builder_sa, "ENV_BUILD_NAME"))
    return names


def supplied(settings: Any) -> list[tuple[str, str, str]]:
    """(kind, name, key) for the names a user writes in values.env: networks, subnetworks, image
    families and snapshots (Compute Engine resource names; their keys' patterns agree) and the
    buckets inside gs:// URIs."""
    out = [("gce", settings.network, "NETWORK"), ("gce", settings.source_image_family, "SOURCE_IMAGE_FAMILY")]
    if settings.subnetwork:
        out.append(("gce", settings.subnetwork, "SUBNETWORK"))
    if settings.shared_pd_restore and settings.shared_pd_restore != "latest":
        out.append(("gce", settings.shared_pd_restore, "SHARED_PD_RESTORE"))
    for key, uri in (("GCS_DATASET", settings.gcs_dataset), *data_uris(settings)):
        if isinstance(uri, str) and uri.startswith("gs://"):
            out.append(("bucket", uri[5:].split("/", 1)[0], key))
    return out


def data_uris(settings: Any) -> list[tuple[str, Any]]:
    """``(key, value)`` of every key a registered model declares as data (its ``DATA_KEYS``:
    builder/config/model_registry.py), as the values set them."""
    fields = {k.name: k.field for k in model_registry.model_keys(settings.repo_root)}
    keys = [k for ks in model_registry.declared_by_all(settings.repo_root, "DATA_KEYS").values() for k in ks]
    return [(key, settings.model_options.get(fields[key], "")) for key in keys if key in fields]


def check(settings: Any, fail: Fail) -> None:
    """Every derived name, then every supplied one. A name that is illegal because of a value it
    took from another key (``${ENV_BUILD_NAME}`` in GCS_DATASET, or the environment's own names)
    is blamed on that key, on its line: that is where the fix goes."""
    for derived_name, (kind, name, key) in [*((True, n) for n in derived(settings)),
                                            *((False, n) for n in supplied(settings))]:
        problem = RULES[kind](name)
        if not problem:
            continue
        sources = ("PROJECT_ID", "ENV_BUILD_NAME") if derived_name else tuple(sorted(settings.refs.get(key, ())))
        culprit = _culprit(kind, name, sources, settings.raw)
        if culprit is not None:
            of = "" if derived_name else f" (of {key})"
            value = settings.raw[culprit].strip()
            part = reserved_part(name)
            rule = ("reserves bucket names that begin with 'goog'" if part == "goog" else
                    "forbids 'google' and close misspellings of it in bucket names")
            fail(culprit, f"{value!r} puts {part!r} into the {KIND_NAMES[kind]} name {name!r}{of}, and Cloud "
                 f"Storage {rule}", f"choose another {culprit}, without {part!r}")
        origin = " (made from ENV_BUILD_NAME and PROJECT_ID)" if derived_name else ""
        fail(key, f"{KIND_NAMES[kind]} name {name!r}{origin} {problem}",
             f"change {key} so that the name follows Google's rules")


def _culprit(kind: str, name: str, sources: tuple[str, ...], raw: dict[str, str]) -> str | None:
    """Which of ``sources`` holds the reserved part of bucket ``name``, if one does."""
    part = reserved_part(name) if kind == "bucket" else None
    if part is None:
        return None
    for key in sources:
        value = raw.get(key, "").strip()
        if part in value and (part != "goog" or name.startswith(value)):
            return key
    return None
