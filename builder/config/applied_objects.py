"""Where the applied snapshot's objects are in the environment's state bucket: its values.env and
its record (builder/cloud/snapshot.py writes and reads both; the health check's
build, builder/inputs/recovery.py, reads the granted place from the record). Names only, no I/O, so every
layer that needs a path reads it from here.
"""

from __future__ import annotations


def values_object(env: str) -> str:
    """Where in the state bucket the snapshot's values.env is (builder/cloud/snapshot.py writes it)."""
    return f"workspace/{env}/applied/values.env"


def record_object(env: str) -> str:
    """Where the snapshot's record is (``applied/build.json``): the same facts as JSON, for people
    and scripts (the health check reads the granted place from it: builder/inputs/recovery.py)."""
    return f"workspace/{env}/applied/build.json"
