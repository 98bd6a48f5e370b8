"""The applied snapshot: what the last successful build applied.

``gs://<state_bucket>/workspace/<ENV>/applied/values.env`` is the values.env of that build, byte
for byte. Its object metadata (written in the same request, so never out of step with the file)
carries ``tpubuild-build-id``, ``tpubuild-action``, ``tpubuild-time``, ``tpubuild-outstanding``
(plan modules whose values changed outside a build's scope: auto applies them),
``tpubuild-granted`` (JSON ``{"zone": ..., "mode": ...}``: the candidate that granted the slice,
builder/config/candidates.py; absent on snapshots made before candidates),
``tpubuild-absent`` (plan modules destroyed by a scoped or full destroy: auto leaves them absent) and ``tpubuild-sources`` (JSON: plan module → digest of its Terraform and boot
sources). ``applied/build.json`` repeats the same record for people and scripts.

Writes carry a generation precondition (the generation read when finalize started, or 0 when
there was none), so two finishing builds can never interleave: the second gets a ``WorldError``.
Only ``tpubuild finalize`` writes it; a failed build never reaches finalize, so it has none.
"""

from __future__ import annotations

import json
from typing import Any

from builder.cloud import objects
from builder.cloud.errors import cloud_call
from builder.config.applied_objects import record_object, values_object
from builder.config.candidates import granted as place
from builder.facts.errors import WorldError
from builder.facts.records import field, record, replace


def values_path(env: str) -> str:
    return values_object(env)


def record_path(env: str) -> str:
    return record_object(env)


@record
class Applied:
    values: bytes
    build_id: str
    action: str
    time: str
    outstanding: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    sources: dict[str, str] = field(default_factory=dict)
    generation: int = 0
    #: the candidate that granted the slice ({"zone": ..., "mode": ...}); {} where none is recorded
    granted: dict[str, str] = field(default_factory=dict)

    def metadata(self) -> dict[str, str]:
        return {**({"tpubuild-granted": json.dumps(self.granted, sort_keys=True, separators=(",", ":"))}
                   if self.granted else {}),
            "tpubuild-build-id": self.build_id,
            "tpubuild-action": self.action,
            "tpubuild-time": self.time,
            "tpubuild-outstanding": ",".join(sorted(self.outstanding)),
            "tpubuild-absent": ",".join(sorted(self.absent)),
            "tpubuild-sources": json.dumps(self.sources, sort_keys=True, separators=(",", ":")),
        }

    def record(self) -> dict[str, Any]:
        return {"build_id": self.build_id, "action": self.action, "time": self.time,
                "outstanding": sorted(self.outstanding), "absent": sorted(self.absent), "sources": self.sources,
                **({"granted": self.granted} if self.granted else {})}


def read(bucket: Any, env: str) -> Applied | None:
    found = objects.read(bucket, values_path(env))
    if found is None:
        return None
    data, blob = found
    meta = dict(blob.metadata or {})
    try:
        sources = json.loads(meta.get("tpubuild-sources") or "{}")
    except ValueError:
        sources = {}
    outstanding = frozenset(m for m in meta.get("tpubuild-outstanding", "").split(",") if m)
    absent = frozenset(m for m in meta.get("tpubuild-absent", "").split(",") if m)
    found = place({"granted": meta.get("tpubuild-granted", "")})
    return Applied(values=data, build_id=meta.get("tpubuild-build-id", ""), action=meta.get("tpubuild-action", ""),
                   time=meta.get("tpubuild-time", ""), outstanding=outstanding,
                   absent=absent, sources=sources if isinstance(sources, dict) else {}, generation=int(blob.generation),
                   granted={"zone": found.zone, "mode": found.mode} if found is not None else {})


def generation(bucket: Any, env: str) -> int:
    """The snapshot's current generation, 0 when there is none."""
    from google.api_core import exceptions as gexc

    blob = bucket.blob(values_path(env))
    with cloud_call(f"reading gs://{bucket.name}/{values_path(env)}"):
        try:
            blob.reload()
        except gexc.NotFound:
            return 0
    return int(blob.generation)


def _conflict(env: str, build_id: str) -> WorldError:
    return WorldError(
        f"environment {env}: the applied snapshot changed while build {build_id} was finishing "
        "(another build finished at the same time); run `tpubuild status`, then dispatch again"
    )


def write(bucket: Any, env: str, applied: Applied, *, expected_generation: int) -> Applied:
    from google.api_core import exceptions as gexc

    blob = bucket.blob(values_path(env))
    blob.metadata = applied.metadata()
    with cloud_call(f"writing gs://{bucket.name}/{values_path(env)}"):
        try:
            blob.upload_from_string(applied.values, content_type="text/plain",
                                    if_generation_match=expected_generation)
        except gexc.PreconditionFailed:
            raise _conflict(env, applied.build_id) from None
    with cloud_call(f"writing gs://{bucket.name}/{record_path(env)}"):
        bucket.blob(record_path(env)).upload_from_string(
            json.dumps(applied.record(), indent=2, sort_keys=True) + "\n", content_type="application/json")
    return replace(applied, generation=int(blob.generation))


def delete(bucket: Any, env: str, *, expected_generation: int, build_id: str) -> bool:
    """Remove the snapshot (after a full destroy); False when there was none."""
    from google.api_core import exceptions as gexc

    if expected_generation == 0:
        return False
    with cloud_call(f"deleting gs://{bucket.name}/{values_path(env)}"):
        try:
            bucket.blob(values_path(env)).delete(if_generation_match=expected_generation)
        except gexc.NotFound:
            return False
        except gexc.PreconditionFailed:
            raise _conflict(env, build_id) from None
        try:
            bucket.blob(record_path(env)).delete()
        except gexc.NotFound:
            pass
    return True
