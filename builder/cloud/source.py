"""The source tarball a pipeline runs from: deterministic, content-addressed.

Entries are files only, sorted by path, with mtime 0, uid/gid 0, no owner names, and mode 0644
(0755 when the file is executable), so the same inputs always give the same bytes. Its address is
the SHA-256 of the uncompressed tar stream: ``gs://<state_bucket>/source/<sha256>.tgz``
(``gunzip -c X.tgz | sha256sum`` checks it). The gzip header carries no name and mtime 0.

Layout (see docs/architecture.md): builder/, setup.cfg, pyproject.toml, README.md, values.env
(the user's file, byte for byte, whatever its local name), modules/, env_setup/, models/,
tfvars/<plan module>.tfvars.json, .tpubuild/scripts/ (the step scripts too long for an argument).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

from builder.cloud.errors import cloud_call
from builder.cloud.workspace import walk
from builder.facts.files import MAX_SOURCE_FILE, read_file
from builder.facts.records import record

FILES = ("setup.cfg", "pyproject.toml", "README.md")
TREES = ("builder", "modules", "env_setup", "models")


@record
class Source:
    sha256: str
    tgz: bytes
    names: tuple[str, ...]

    @property
    def object_name(self) -> str:
        return f"source/{self.sha256}.tgz"


def tfvars_json(values: dict) -> bytes:
    return (json.dumps(values, indent=2, sort_keys=True) + "\n").encode()


_FIX = "keep repository files under 64 MiB (data belongs in GCS_DATASET)"


def collect(repo: Path, values_env: bytes, tfvars: dict[str, dict],
            scripts: dict[str, bytes] | None = None) -> dict[str, tuple[bytes, bool]]:
    """arcname → (bytes, executable) for everything the tarball holds; ``scripts``: the step
    scripts that ship as files (builder/inputs/build_limits.py), by their path in the source."""
    files: dict[str, tuple[bytes, bool]] = {}
    for name in FILES:
        path = repo / name
        if path.is_file():
            files[name] = (read_file(path, MAX_SOURCE_FILE, what="a repository file", fix=_FIX), False)
    for top in TREES:
        for rel, path in walk(repo, top):
            files[rel] = (read_file(path, MAX_SOURCE_FILE, what="a repository file", fix=_FIX), os.access(path, os.X_OK))
    files["values.env"] = (values_env, False)
    for module, values in tfvars.items():
        files[f"tfvars/{module}.tfvars.json"] = (tfvars_json(values), False)
    for name, data in (scripts or {}).items():
        files[name] = (data, False)
    return files


def pack(files: dict[str, tuple[bytes, bool]]) -> Source:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            data, executable = files[name]
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o755 if executable else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(tar_bytes)
    return Source(hashlib.sha256(tar_bytes).hexdigest(), out.getvalue(), tuple(sorted(files)))


def upload(bucket: Any, src: Source) -> None:
    """Put ``src`` at its address in ``bucket`` (the state bucket) unless it is there: its name
    is its content, so one that exists is the same bytes."""
    from google.api_core import exceptions as gexc

    blob = bucket.blob(src.object_name)
    with cloud_call(f"uploading gs://{bucket.name}/{src.object_name}"):
        if not blob.exists():
            try:
                blob.upload_from_string(src.tgz, content_type="application/gzip", if_generation_match=0)
            except gexc.PreconditionFailed:
                pass  # the same content, uploaded by someone else meanwhile
