#!/usr/bin/env python3
"""The TPU rows and the per-month rows' prices of the bundled ``builder/data/prices.json``, produced from the recorded Cloud Billing Catalog
response ``tests/data/billing/recorded.json`` by the code ``tpubuild prices update`` runs on a live one
(``builder.catalogue.skus.match`` and ``overlay``). ``tests/unit/test_prices_catalogue.py`` fails when the
file is stale. Usage::

    python tools/bundle_prices.py             # exit 1 and a diff when prices.json is stale
    python tools/bundle_prices.py --write     # rewrite prices.json from the recording
    python tools/bundle_prices.py --record [--api-key K] [--endpoint URL]
                                              # replace the recording with a live read, then --write
"""

from __future__ import annotations

import argparse
import datetime
import difflib
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.catalogue import skus, storage_skus, tpu_device_skus  # noqa: E402

PRICES = REPO / "builder" / "data" / "prices.json"
RECORDED = REPO / "tests" / "data" / "billing" / "recorded.json"


def recording() -> dict[str, Any]:
    return json.loads(RECORDED.read_text(encoding="utf-8"))


def bundled_text(current: dict[str, Any] | None = None) -> str:
    """What prices.json should hold: its hand-kept rows, the recording's matched TPU rows over them."""
    current = current if current is not None else json.loads(PRICES.read_text(encoding="utf-8"))
    rec = recording()
    found = [s for service in rec["services"].values() for s in service]
    source = {"recorded": "tests/data/billing/recorded.json", "services": sorted(rec["services"]),
              "live": rec.get("live", False)}
    return json.dumps(skus.overlay(current, skus.match(found), rec["recorded"], source), indent=2,
                      ensure_ascii=False) + "\n"


def _record(api_key: str | None, endpoint: str | None) -> None:
    from builder.cloud import billing

    rec = recording()
    services = {}
    for service in skus.SERVICES:  # only the SKUs tpubuild prices, and the TPU ones it leaves out (decoys)
        read = billing.list_skus(service, api_key=api_key, endpoint=endpoint)
        services[service] = [s for s in read if skus.classify(s) or storage_skus.classify(s) or
                             tpu_device_skus.records(s) or "Tpu" in s["description"]]
    rec.update({"recorded": datetime.date.today().isoformat(), "live": True, "services": services})
    RECORDED.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true")
    p.add_argument("--record", action="store_true")
    p.add_argument("--api-key")
    p.add_argument("--endpoint")
    args = p.parse_args(argv)
    if args.record:
        _record(args.api_key, args.endpoint)
    want, have = bundled_text(), PRICES.read_text(encoding="utf-8")
    if args.write or args.record:
        PRICES.write_text(want, encoding="utf-8")
        return 0
    if want != have:
        sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True), "prices.json", "want"))
        print("builder/data/prices.json is stale: run python tools/bundle_prices.py --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
