"""``tpubuild prices update|show`` (builder/commands/verbs/prices.py): the catalogue cache and what plan prices from.

``update`` reads the Billing Catalog (builder/cloud/billing.py), matches its SKUs
(builder/catalogue/skus.py) and writes the dated cache file builder/catalogue/price_source.py reads;
``show`` prints each chip-hour figure the plan would use, its source and date (docs/plan_cost_ttl.md).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from builder.catalogue import cost, price_source, skus
from builder.cloud import billing
from builder.config import calendar
from builder.facts.errors import BadInput, WorldError

#: The provisioning models ``show --region`` prices as plan would (builder/catalogue/cost.py, tpu_price).
SHOWN_MODELS = ("on-demand", "spot", "flex-start", "calendar", "reservation")


def run_prices(args: argparse.Namespace) -> int:
    if args.verb == "update":
        return update(args)
    return show(args)


def update(args: argparse.Namespace) -> int:
    for flag in ("generation", "region"):
        if getattr(args, flag, None):
            raise BadInput(f"--{flag}: only `tpubuild prices show` takes it; drop it from `prices update`")
    api_key = args.api_key or os.environ.get(billing.API_KEY_VARIABLE, "").strip() or None
    read = [sku for service in skus.SERVICES
            for sku in billing.list_skus(service, api_key=api_key, endpoint=args.endpoint)]
    matched = skus.match(read)
    if not matched["tpu_chip_hour"]:
        raise WorldError(f"the Billing Catalog answered {len(read)} SKUs of services/{', '.join(skus.SERVICES)} and "
                         "none is a TPU chip-hour SKU tpubuild prices; the cache is left as it was")
    now = calendar.now()
    retrieved = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    folder = price_source.cache_dir()
    path = folder / f"prices-{now:%Y-%m-%d}.json"
    body = {"retrieved": retrieved, "matched": matched,
            "catalogue": {"endpoint": args.endpoint or "https://cloudbilling.googleapis.com",
                          "services": list(skus.SERVICES), "skus_read": len(read), "live": True}}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        raise WorldError(f"cannot write the price cache {path} ({exc.strerror or exc}); set TPUBUILD_CACHE to a "
                         "folder you can write") from None
    counts = {g: len([p for p in matched["skus"] if p.startswith(f"tpu_chip_hour.{g}.")]) for g in matched["tpu_chip_hour"]}
    monthly = len(matched["skus"]) - sum(counts.values())
    print(f"read {len(read)} SKUs of services/{', '.join(skus.SERVICES)}; matched {len(matched['skus'])} prices "
          f"({', '.join(f'{g}: {n}' for g, n in counts.items())}; per month: {monthly})")
    print(f"wrote {path}; plan, plan --all and status price from it now (`tpubuild prices show`)")
    return 0


def _rows(generation: str | None, region: str | None) -> list[dict[str, Any]]:
    data = cost.table()
    gens = [cost.generation_key(generation)] if generation else list(data["tpu_chip_hour"])
    unknown = [g for g in gens if g not in data["tpu_chip_hour"]]
    if unknown:
        raise BadInput(f"--generation: {generation!r} has no prices; choose one of {', '.join(data['tpu_chip_hour'])}")
    out = []
    for g in gens:
        rows = data["tpu_chip_hour"][g]
        if region:
            for model in SHOWN_MODELS:
                found = cost.tpu_price(g, region, model)
                out.append({"generation": g, "mode": model, "region": region, "price": found.value,
                            "approximate": found.approximate, "bound": found.bound, "basis": found.basis,
                            "why": found.unknown_why or found.bound_why or found.note})
            continue
        for mode, by_region in rows.items():
            if not isinstance(by_region, dict) or mode in ("pod",) or mode.startswith("_"):
                continue
            for r, value in by_region.items():
                if r == "default" or value is None:
                    continue
                path = f"tpu_chip_hour.{g}.{mode}.{r}"
                out.append({"generation": g, "mode": mode, "region": r, "price": value, "approximate": False,
                            "bound": "", "basis": cost.sku_basis(data, path), "why": ""})
    return out


#: The per-month rows ``show`` lists after the chip-hour figures (builder/catalogue/storage_skus.py).
MONTHLY = {"filestore_gib_month": "GiB-month", "disk_gb_month": "GB-month", "kept_gb_month": "GB-month"}


def _monthly(region: str | None) -> list[dict[str, Any]]:
    data = cost.table()
    out = []
    for kind, unit in MONTHLY.items():
        for name, row in data[kind].items():
            if name.startswith("_"):
                continue
            where = region or row["default_region"]
            value, approx = cost.per_month(kind, name, where)
            at = where if approx is False and value is not None else row["default_region"]
            out.append({"row": f"{kind}.{name}", "region": where, "price": value, "approximate": approx, "unit": unit,
                        "confirmed": cost.confirmed(f"{kind}.{name}.price.{at}") or
                        f"{kind}.{name}.price.{at}" in data.get("skus", {}),
                        "basis": cost.sku_basis(data, f"{kind}.{name}.price.{at}")})
    return out


def show(args: argparse.Namespace) -> int:
    if args.api_key or args.endpoint:
        raise BadInput("--api-key/--endpoint: only `tpubuild prices update` reads the catalogue; drop them from `show`")
    data = cost.table()
    rows = _rows(args.generation, args.region)
    monthly = [] if args.generation else _monthly(args.region)
    if args.format == "json":
        print(json.dumps({"source": data["source"], "currency": data["currency"], "chip_hour": rows,
                          "per_month": monthly}, indent=2))
        return 0
    print(f"TPU prices per chip-hour in {data['currency']} from {data['source']['text']}:")
    for r in rows:
        figure = ("no published price" if r["price"] is None
                  else f"{cost.bound_prefix(r['bound'])}{cost.rate(r['price'], r['approximate'])}")
        tail = f"  ({r['why']})" if r["why"] else ""
        print(f"  {r['generation']:<6} {r['mode']:<13} {r['region']:<20} {figure:<14} {r['basis'] or '-'}{tail}")
    if monthly:
        print(f"Per month, in {data['currency']}:")
    for m in monthly:
        figure = "no price" if m["price"] is None else f"{cost.rate(m['price'], m['approximate'])}/{m['unit']}"
        print(f"  {m['row']:<40} {m['region']:<20} {figure:<20} {m['basis']}{'' if m['confirmed'] else ' (unconfirmed)'}")
    return 0
