"""The workspace: what the machines read at boot, at ``gs://<state_bucket>/workspace/<ENV>/``.

It holds ``values.env`` (byte for byte the user's file, whatever it is called locally),
``env_setup/**`` and ``models/**``. ``sync`` uploads what changed (by MD5) and deletes objects
under ``env_setup/`` and ``models/`` that no longer exist locally, so the workspace is exactly the
repository's copy. The lock, the applied snapshot and the workspace record (``workspace.json``)
live beside it and are never touched by ``sync``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import builder
from builder.cloud.errors import cloud_call
from builder.config import Settings
from builder.config.loader import MAX_BYTES
from builder.facts.errors import BadInput
from builder.facts.files import MAX_SOURCE_FILE, read_file
from builder.facts.records import record

TREES = ("env_setup", "models")
SKIP_DIRS = frozenset({"__pycache__", ".git", ".terraform", ".pytest_cache", ".hypothesis"})
SKIP_SUFFIXES = (".pyc", ".pyo", ".tfstate", ".tfstate.backup")


def find_repo(settings: Settings) -> Path:
    """The repository root: next to values.env, else the current folder, else the package's parent.

    It is the folder holding ``modules/`` (and ``builder/``): ``--values examples/x.env`` still
    packs the repository the command runs in."""
    candidates = [settings.repo_root, Path.cwd(), Path(builder.__file__).resolve().parent.parent]
    for root in candidates:
        if (root / "modules").is_dir() and (root / "builder").is_dir():
            return root.resolve()
    raise BadInput(
        f"{settings.source}: cannot find the tpubuild repository (a folder with modules/ and builder/) "
        "next to values.env or in the current folder; run tpubuild from the repository root"
    )


def walk(root: Path, top: str) -> Iterator[tuple[str, Path]]:
    """(posix path relative to root, file) for every file under root/top, sorted, skipping caches.

    A symlink counts as the file it points to when that file is inside the same top-level tree
    (``modules/tpu_vm/versions.tf`` → ``modules/_shared/versions.tf``, modules/_shared/README.md):
    its bytes are packed and digested under the link's name. A link leaving the tree is skipped."""
    base = root / top
    tree = (root / Path(top).parts[0]).resolve()
    if base.is_file():
        yield top, base
        return
    if not base.is_dir():
        return
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(root)
        if any(part in SKIP_DIRS for part in rel.parts) or path.name.endswith(SKIP_SUFFIXES):
            continue
        if path.is_file() and (not path.is_symlink() or path.resolve().is_relative_to(tree)):
            yield rel.as_posix(), path


@record
class Entry:
    name: str  # relative to workspace/<ENV>/
    data: bytes


def values_bytes(settings: Settings) -> bytes:
    """values.env byte for byte, as the workspace, the source tarball and the applied snapshot keep it."""
    return read_file(settings.source, MAX_BYTES, what="a values file", fix="keep it under 1 MiB")


def entries(settings: Settings, repo: Path) -> list[Entry]:
    fix = "keep repository files under 64 MiB (data belongs in GCS_DATASET)"
    out = [Entry("values.env", values_bytes(settings))]
    for top in TREES:
        out.extend(Entry(rel, read_file(path, MAX_SOURCE_FILE, what="a repository file", fix=fix))
                   for rel, path in walk(repo, top))
    return out


def _md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()  # noqa: S324 - GCS's own checksum


def prefix(settings: Settings) -> str:
    return f"{settings.workspace_prefix}/"


def sync(bucket: Any, settings: Settings, repo: Path, *, source_sha256: str = "") -> tuple[int, int, int]:
    """Upload changed files, delete stale ones; return (uploaded, unchanged, deleted)."""
    top = prefix(settings)
    with cloud_call(f"listing gs://{bucket.name}/{top}"):
        existing = {b.name: b.md5_hash for b in bucket.list_blobs(prefix=top)}
    wanted = entries(settings, repo)
    uploaded = unchanged = deleted = 0
    for entry in wanted:
        name = top + entry.name
        if existing.get(name) == _md5(entry.data):
            unchanged += 1
            continue
        with cloud_call(f"uploading gs://{bucket.name}/{name}"):
            bucket.blob(name).upload_from_string(entry.data, content_type=_content_type(entry.name))
        uploaded += 1
    keep = {top + e.name for e in wanted}
    for name in sorted(existing):
        rel = name[len(top):]
        if rel.split("/", 1)[0] in TREES and name not in keep:
            with cloud_call(f"deleting gs://{bucket.name}/{name}"):
                bucket.blob(name).delete()
            deleted += 1
    record = {"source_sha256": source_sha256, "files": len(wanted)}
    with cloud_call(f"writing gs://{bucket.name}/{top}workspace.json"):
        bucket.blob(top + "workspace.json").upload_from_string(
            json.dumps(record, sort_keys=True, indent=2) + "\n", content_type="application/json")
    return uploaded, unchanged, deleted


def _content_type(name: str) -> str:
    if name.endswith(".json"):
        return "application/json"
    if name.endswith((".sh", ".env", ".py", ".txt", ".md", ".yaml", ".yml", ".cfg", ".toml")):
        return "text/plain"
    return "application/octet-stream"
