"""Reading one GCS object consistently: its bytes and the metadata of that same generation."""

from __future__ import annotations

from typing import Any

from builder.cloud.errors import cloud_call


def read(bucket: Any, name: str) -> tuple[bytes, Any] | None:
    """``(data, blob)`` of ``gs://bucket/name``, or None when it does not exist.

    The download is pinned to the generation the metadata came from, so bytes and metadata
    always belong together; an object replaced in between reads as absent (the caller's next
    precondition then decides)."""
    from google.api_core import exceptions as gexc

    blob = bucket.blob(name)
    with cloud_call(f"reading gs://{bucket.name}/{name}"):
        try:
            blob.reload()
            data = blob.download_as_bytes(if_generation_match=blob.generation)
        except (gexc.NotFound, gexc.PreconditionFailed):
            return None
    return data, blob
