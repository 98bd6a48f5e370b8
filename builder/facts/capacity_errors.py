"""What counts as "no capacity" when the slice is asked for: the error texts of the Cloud TPU API
and Compute Engine that say the zone has no room for it (a stockout), or the project's quota none
(a quota refusal). The failover (docs/capacity.md, "The failover loop") tries the next candidate
on these, and on nothing else: any other failure (a permission error, a bad value) stops the build
at the first candidate with one line, as trying elsewhere would fail the same way.

One record: :data:`NO_CAPACITY` is what :func:`classify` reads and what the pipeline's acquisition
step greps (:func:`ere`, rendered into builder/templates/tf_apply.sh.j2). The texts are kept as
fixtures with their sources in tests/data/capacity_errors/. Pure: standard library only.
"""

from __future__ import annotations

import re

#: (kind, extended regular expression) per text that means "no capacity here": ``stockout`` (the
#: zone has no room for the slice now) or ``quota`` (the project may not have more). Each pattern
#: is a POSIX ERE that BusyBox ``grep -E`` reads as Python's ``re`` does.
NO_CAPACITY: tuple[tuple[str, str], ...] = (
    # Cloud TPU API, google_tpu_v2_vm's create: "Error code 8, message: There is no more capacity
    # in the zone "us-central1-c"; you can try in another zone ..."
    ("stockout", r"There is no more capacity in the zone"),
    # Cloud TPU API, code 8 for a reservation without room for the slice
    ("stockout", r"Insufficient reserved capacity"),
    # Compute Engine: ZONE_RESOURCE_POOL_EXHAUSTED and ..._WITH_DETAILS, and their message
    ("stockout", r"ZONE_RESOURCE_POOL_EXHAUSTED"),
    ("stockout", r"does not have enough resources available to fulfill the request"),
    # quotas: Compute Engine's "Quota 'X' exceeded", "insufficient regional quota", and the
    # RESOURCE_EXHAUSTED (429) of Google APIs' quota checks
    ("quota", r"Quota '[A-Za-z0-9_-]+' exceeded"),
    ("quota", r"QUOTA_EXCEEDED"),
    ("quota", r"insufficient regional quota"),
    ("quota", r"exceed quota limits"),
    ("quota", r"RESOURCE_EXHAUSTED"),
)


def classify(text: str) -> str:
    """``stockout``, ``quota`` (the failover tries the next candidate) or ``other`` (it stops)."""
    return next((kind for kind, pattern in NO_CAPACITY if re.search(pattern, text)), "other")


def ere() -> str:
    """Every pattern of :data:`NO_CAPACITY` as one ERE (alternatives), for ``grep -E``."""
    return "|".join(f"({pattern})" for _kind, pattern in NO_CAPACITY)
