"""The recoveries of the health check (TPU_RECOVERY; builder/inputs/recovery.py), read from the state
bucket for ``tpubuild status``: the records under ``workspace/<env>/recoveries/`` (one JSON object
per try, written by the health build) and the mark of a recovery under way."""

from __future__ import annotations

import json
from typing import Any

from builder.cloud import clients, objects
from builder.cloud.buckets import exists
from builder.cloud.errors import cloud_call
from builder.config import Settings
from builder.inputs import recovery

#: How many records status lists (the newest); the totals count them all.
SHOWN = 5


def read(settings: Settings) -> dict[str, Any]:
    from google.api_core import exceptions as gexc

    bucket = clients.storage(settings.project_id).bucket(settings.state_bucket)
    prefix = recovery.objects(settings)["records"]
    with cloud_call(f"listing gs://{settings.state_bucket}/{prefix}"):
        try:
            names = sorted(b.name for b in bucket.list_blobs(prefix=prefix) if b.name.endswith(".json"))
        except gexc.NotFound:  # no state bucket yet: the state row says so; nothing was recovered
            names = []
    records = []
    for name in names:
        found = objects.read(bucket, name)
        if found is None:
            continue
        try:
            records.append(json.loads(found[0]))
        except ValueError:
            records.append({"outcome": "unreadable", "message": f"gs://{settings.state_bucket}/{name} is not JSON"})
    mark = objects.read(bucket, recovery.objects(settings)["mark"]) if names or _bucket_exists(settings) else None
    return {"state": "AUTO", **recovery.summary(records, SHOWN),
            "mark": recovery.parse_mark(mark[0].decode("utf-8", "replace")) if mark else None,
            "max_tries": settings.recovery_max_tries, "interval_min": recovery.INTERVAL_MIN}


def _bucket_exists(settings: Settings) -> bool:
    return exists(clients.storage(settings.project_id), settings.state_bucket)
