"""Which price table the plan reads: the freshest of the catalogue cache and the bundled snapshot.

``tpubuild prices update`` (builder/commands/prices.py) reads the Cloud Billing Catalog and writes
``prices-<YYYY-MM-DD>.json`` in the cache folder: ``$TPUBUILD_PRICES_CACHE`` (tests, mirrors), else
``$TPUBUILD_CACHE/prices``, else ``~/.cache/tpubuild/prices``. It holds the SKUs' matched records
(builder/catalogue/skus.py, ``match``), the time they were read and where from. :func:`table` is the
bundled ``builder/data/prices.json`` with the newest cache file's records laid over it by the same
:func:`builder.catalogue.skus.overlay` that made the bundled file from its recorded catalogue, unless the
bundled file is the newer; its ``source`` says which (``kind``: "catalogue" or "bundled"), the file and
the date. Reads files only (once per cache file).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from builder.catalogue import skus

BUNDLED = Path(__file__).resolve().parents[1] / "data" / "prices.json"
#: How a cache file is named: its date sorts it.
PATTERN = "prices-*.json"


def cache_dir() -> Path:
    explicit = os.environ.get("TPUBUILD_PRICES_CACHE", "").strip()
    if explicit:
        return Path(explicit)
    base = os.environ.get("TPUBUILD_CACHE", "").strip()
    return (Path(base) if base else Path.home() / ".cache" / "tpubuild") / "prices"


def latest() -> Path | None:
    """The newest cache file, or None."""
    try:
        found = sorted(cache_dir().glob(PATTERN))
    except OSError:
        return None
    return found[-1] if found else None


@lru_cache(maxsize=1)
def bundled() -> dict[str, Any]:
    data = json.loads(BUNDLED.read_text(encoding="utf-8"))
    data["source"] = {"kind": "bundled", "file": "builder/data/prices.json", "retrieved": data["retrieved"],
                      "text": f"the bundled snapshot builder/data/prices.json (catalogue of {data['retrieved']})"}
    return data


@lru_cache(maxsize=4)
def _with_cache(path: str, _mtime: float) -> dict[str, Any] | None:
    try:
        cached = json.loads(Path(path).read_text(encoding="utf-8"))
        retrieved, matched, where = str(cached["retrieved"]), cached["matched"], cached["catalogue"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # an unreadable cache is no source: the bundled snapshot is
    base = bundled()
    if retrieved[:10] < base["retrieved"]:
        return None
    data = skus.overlay(base, matched, retrieved[:10], where)
    data["source"] = {"kind": "catalogue", "file": path, "retrieved": retrieved,
                      "text": f"the Cloud Billing Catalog read {retrieved} ({path})"}
    return data


def table() -> dict[str, Any]:
    """The price table the plan reads now (see the module's docstring)."""
    path = latest()
    if path is not None:
        try:
            found = _with_cache(str(path), path.stat().st_mtime)
        except OSError:
            found = None
        if found is not None:
            return found
    return bundled()
