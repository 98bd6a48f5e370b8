"""What a plan commits you to, beyond the hourly cost: the totals ``tpubuild plan`` shows beside it.

One record per total (:class:`Total`), made here from the hourly estimate (``builder.catalogue.cost``) and
the plan; ``plan --format json`` carries them as ``cost.totals`` and the text prints each one's
``text`` under "Totals", so both views read the same record (docs/plan_cost_ttl.md, "Totals"):

* ``calendar_committed``: a calendar-mode slice is billed for its whole window, used or not, and
  the request cannot be cancelled: the slice's hourly rate × ``TPU_CALENDAR_DAYS`` × 24.
* ``calendar_before_window``: what the build makes before the window starts (Filestore, the disk)
  bills from the create: their hourly rate × the hours until ``TPU_CALENDAR_START``.
* ``flex_max``: a flex-start slice runs at most ``TPU_MAX_RUN_HOURS`` (7 days without it): the
  most its slice can cost, rate × those hours.
* ``until_ttl``: with ``ENV_TTL_HOURS``, what the environment costs from the TPU's creation until
  the TTL destroys the TPU (everything the plan leaves billed, × the TTL's hours), and what stays
  billed per hour after it (Filestore, the disk: the TTL destroys the TPU only); with a candidate
  list, also at the worst case (``worst_total``, :func:`at_worst`).
* ``monthly_after_destroy``: what a destroy leaves billed every month: the shared PD's snapshot it
  takes (at most the disk's size of snapshot storage), the Filestore backup (at most the share's
  capacity) and the buckets it keeps (billed by what they hold: the rate, no total).
* ``calendar_after_destroy``: a destroy cannot cancel a calendar-mode reservation: what stays
  billed until its end.
* ``checkpoint_copy``: the selected model's checkpoints in the state bucket (docs/recovery.md,
  "Checkpoints in the bucket"): the newest copy kept, its size as the model's keys.py models it, at
  the bucket's GB-month rate, and the time one copy takes on the hosts, modelled at the seeder's
  ``gcloud storage cp`` rate (builder/catalogue/durations.py ``SEED_PER_100GB``).

A figure that stands in for an unpublished price keeps its ``bound`` ("at most", "at least",
"stand-in": builder/catalogue/cost.py); the snapshot and backup are ceilings ("at most": billed by the data
they hold). Pure: the clock is a parameter, by default the one clock the calendar rules read
(:func:`builder.config.calendar.now`; ``TPUBUILD_NOW`` pins it).

The plan's whole money section is made and printed here too: :func:`section` is ``cost`` of
``plan --format json`` (the hourly estimate before and after, the change, the totals, where the
prices come from) and :func:`lines` is the text ``plan`` prints of that same dict (the "Cost per
hour" block and the "Totals"), so the two views cannot tell different figures.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from builder.catalogue.cost import (Estimate, Item, bound_prefix, change_text, combine, estimate, money, per_month, row_path,
                                    sku_basis, table)
from builder.catalogue.cost import rate as rate_text
from builder.catalogue.durations import SEED_PER_100GB
from builder.catalogue.modules import accelerator_module
from builder.config import calendar
from builder.config.model_registry import checkpoint
from builder.config.offers import MAX_RUN_HOURS, calendar_window
from builder.facts.actions import Action
from builder.facts.records import asdict, record
from builder.planning import plan as plans

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.planning.plan import Plan


@record
class Total:
    kind: str  # calendar_committed, calendar_before_window, flex_max, until_ttl, monthly_after_destroy,
    #            calendar_after_destroy, checkpoint_copy
    total: float  # USD: for the hours, or per month (``per``)
    per: str  # "hours": total is for ``hours``; "month": total is per month
    hours: float | None
    hourly: float | None  # the rate it multiplies (None for a monthly tail)
    bound: str  # "", "at most", "at least", "stand-in" (builder.catalogue.cost.BOUNDS)
    text: str
    items: tuple[dict[str, Any], ...] = ()  # monthly_after_destroy: what keeps billing, each with its monthly figure


def _usd(value: float, bound: str, approximate: bool) -> str:
    return f"{bound_prefix(bound)}{money(value, approximate)}"


def _hours(hours: float) -> str:
    return f"{hours:,.0f} h" if hours < 48 or hours % 24 else f"{hours / 24:.0f} days ({hours:,.0f} h)"


def _per_month(kind: str, name: str, region: str) -> tuple[float, bool]:
    """A per-month rate the table must have (prices.json ``kept_gb_month``; tests/unit/test_money.py)."""
    value, approx = per_month(kind, name, region)
    assert value is not None, f"builder/data/prices.json has no {kind}.{name} price"
    return value, approx


def _basis(name: str, region: str) -> str:
    """The SKU a ``kept_gb_month`` figure comes from (or the bundled row): a total's item's ``basis``."""
    return sku_basis(table(), row_path("kept_gb_month", name, "price", region))


def _slice(settings: Settings) -> Estimate:
    return estimate(settings, frozenset({accelerator_module(settings.arch)}))


def _committed(settings: Settings, chips: Estimate, kind: str, hours: float, what: str) -> Total | None:
    if chips.unknown or not chips.items:
        return None
    rate = chips.known
    total = rate * hours
    return Total(kind, round(total, 2), "hours", hours, round(rate, 4), chips.bound,
                 f"{what}: {_usd(total, chips.bound, chips.approximate)} ({money(rate, chips.approximate)}/h × "
                 f"{_hours(hours)})")


def totals(settings: Settings, plan: Plan, after: Estimate, ttl_fires: bool,
           now: datetime.datetime | None = None) -> list[Total]:
    """The plan's totals (see the module's docstring), in that order; ``after`` is the plan's
    hourly cost after the build, ``ttl_fires`` whether this plan creates the TPU that the TTL
    destroys."""
    s, out = settings, []
    accel = accelerator_module(s.arch)
    if plan.action is not Action.DESTROY and plan.applies(accel):
        if s.provisioning == "calendar" and s.calendar_days:
            found = _committed(s, _slice(s), "calendar_committed", s.calendar_days * 24.0,
                               f"committed: the calendar-mode reservation bills its whole window from "
                               f"{s.calendar_start}, used or not, and cannot be cancelled")
            out += [found] if found else []
            out += _before_window(s, after, now)
        if s.provisioning == "flex-start":
            hours = float(s.max_run_hours or MAX_RUN_HOURS)
            found = _committed(s, _slice(s), "flex_max", hours,
                               f"flex-start: the slice runs at most {hours:.0f} h (TPU_MAX_RUN_HOURS)")
            out += [found] if found else []
    if s.env_ttl_hours and ttl_fires and not after.unknown:
        hours = float(s.env_ttl_hours)
        kept, words = _without_tpu(after, accel)
        total = after.known * hours
        out.append(Total("until_ttl", round(total, 2), "hours", hours, round(after.known, 4), after.bound,
                         f"until the TTL: {_usd(total, after.bound, after.approximate)} for the first "
                         f"{_hours(hours)} ({money(after.known, after.approximate)}/h), then "
                         f"{money(kept, after.approximate)}/h without the TPU{words}"))
    if plan.action is Action.DESTROY:
        out += _after_destroy(s, plan, now)
    else:
        out += _checkpoint_copy(s)
    return out


def _checkpoint_copy(s: Settings) -> list[Total]:
    """``checkpoint_copy`` (the module's docstring): on vm and mig, whose hosts may write the
    checkpoints (modules/host_identity ``checkpoint_writer``), for a model that opts in."""
    files, gb = checkpoint(s)
    if not files or s.arch not in ("vm", "mig"):
        return []
    rate, approx = _per_month("kept_gb_month", "bucket", s.region)
    what = (f"the newest copy of {s.model}'s {', '.join(files)} in "
            f"gs://{s.state_bucket}/{s.workspace_prefix}/checkpoints/{s.model}")
    tail = "plus each replaced copy for the bucket's soft-delete window (7 days unless changed)"
    if gb is None:
        item = {"what": what, "monthly": None, "how": f"{money(rate, approx)}/GB-month of its size (not modelled)",
                "bound": "", "approximate": approx, "basis": _basis("bucket", s.region)}
        return [Total("checkpoint_copy", 0.0, "month", None, None, "", f"checkpoints in the bucket, every month: "
                      f"{what}: {item['how']}, {tail}", (item,))]
    monthly = round(gb * rate, 2)
    minutes = 2 * gb * SEED_PER_100GB / 100  # staged off Filestore, then uploaded, each at the seeder's rate
    item = {"what": what, "monthly": monthly, "how": f"~{gb:.1f} GB, modelled, × {money(rate, approx)}/GB-month",
            "bound": "", "approximate": approx, "gb": round(gb, 2), "copy_minutes": round(minutes, 1),
            "basis": _basis("bucket", s.region)}
    return [Total("checkpoint_copy", monthly, "month", None, None, "",
                  f"checkpoints in the bucket, every month: {money(monthly, approx)} ({what} {money(monthly, approx)} "
                  f"({item['how']}), {tail}); each copy takes ~{minutes:.1f} min on host 0 after a save, in the "
                  f"background (modelled: read off Filestore and uploaded at ~170 MB/s)", (item,))]


def _without_tpu(after: Estimate, accel: str) -> tuple[float, str]:
    """What ``after`` costs per hour without the slice, and " (Filestore BASIC_HDD 1024 GiB, shared PD
    pd-balanced 500 GB)": the priced items that stay, as the cost names them (the disk only where
    the plan has one)."""
    stays = [i for i in after.items if i.module != accel and i.hourly]
    words = ", ".join(dict.fromkeys(i.what for i in stays))
    return after.known - sum(i.hourly or 0.0 for i in after.items if i.module == accel), f" ({words})" if words else ""


def _before_window(s: Settings, after: Estimate, now: datetime.datetime | None) -> list[Total]:
    """A calendar-mode plan: what bills before the window starts (Filestore, the disk: made by the
    build, days before the reserved slice), so the committed total is not read as all it costs."""
    if after.unknown or not s.calendar_start:
        return []
    begin = calendar_window(s.calendar_start, s.calendar_days)[0]
    hours = ((begin - (now or calendar.now()).astimezone(datetime.timezone.utc)).total_seconds()) / 3600
    accel = accelerator_module(s.arch)
    kept, words = _without_tpu(after, accel)
    if hours <= 0 or kept <= 0:
        return []
    stays = [i for i in after.items if i.module != accel and i.hourly]
    bound, approx = combine(i.bound for i in stays), any(i.approximate for i in stays)
    kept = round(kept, 4)  # the rate shown, which the total multiplies
    total = kept * hours
    return [Total("calendar_before_window", round(total, 2), "hours", round(hours, 2), round(kept, 4), bound,
                  f"before the window: {_usd(total, bound, approx)} ({money(kept, approx)}/h × {_hours(hours)}) for "
                  f"what the build makes before the reserved slice starts at {s.calendar_start}{words}")]


def at_worst(found: list[dict[str, Any]], worst: dict[str, Any] | None) -> None:
    """A candidate list: the TTL's total priced at the worst case too, as the hourly cost is
    (``worst``: builder/planning/candidate_table.py ``costs``' record, the whole environment's
    hourly cost if the slice lands in the dearest candidate): ``worst_total`` and the text's
    "; at most $X for those hours if the slice lands in ZONE MODE"."""
    if worst is None:
        return
    most = "at most " if worst["bound"] in (None, "", "at most") else bound_prefix(worst["bound"])
    for t in found:
        if t["kind"] == "until_ttl":
            dearer = worst["hourly"] * t["hours"]
            t["worst_total"] = round(dearer, 2)
            t["text"] += (f"; {most}{money(dearer, worst['approximate'])} for those {_hours(t['hours'])} if the "
                          f"slice lands in {worst['zone']} {worst['mode']} (the worst case)")


def _after_destroy(s: Settings, plan: Plan, now: datetime.datetime | None) -> list[Total]:
    items: list[dict[str, Any]] = []
    if plans.runs(s, plan, "snapshot"):
        rate, approx = _per_month("kept_gb_month", "snapshot", s.region)
        multi = per_month("kept_gb_month", "snapshot_multi_region", s.region)
        elsewhere = f"; {rate_text(multi[0], multi[1])}/GB-month in the nearest multi-region" if multi[0] is not None else ""
        items.append({"what": f"the snapshot of {s.shared_pd_name}", "monthly": round(rate * s.shared_pd_size_gb, 2),
                      "how": f"at most {s.shared_pd_size_gb} GB × {money(rate, approx)}/GB-month, stored in {s.region}"
                             f"{elsewhere}", "bound": "at most", "approximate": approx, "basis": _basis("snapshot", s.region)})
    if plans.runs(s, plan, "backup"):
        rate, approx = _per_month("kept_gb_month", "filestore_backup", s.region)
        items.append({"what": f"the Filestore backup of {s.filestore_name}",
                      "monthly": round(rate * s.shared_fs_capacity_gb, 2),
                      "how": f"at most {s.shared_fs_capacity_gb} GiB × {money(rate, approx)}/GiB-month",
                      "bound": "at most", "approximate": approx, "basis": _basis("filestore_backup", s.region)})
    rate, b_approx = _per_month("kept_gb_month", "bucket", s.region)
    items.append({"what": f"the buckets gs://{s.state_bucket} and gs://{s.dataset_bucket}", "monthly": None,
                  "how": f"{money(rate, b_approx)}/GB-month of what they hold", "bound": "", "approximate": b_approx,
                  "basis": _basis("bucket", s.region)})
    priced = [i for i in items if i["monthly"] is not None]
    monthly = sum(i["monthly"] for i in priced)
    bound = combine(i["bound"] for i in priced)
    approx = any(i["approximate"] for i in priced)
    parts = [f"{i['what']} {money(i['monthly'], i['approximate'])} ({i['how']})" for i in priced]
    kept = f"{items[-1]['what']}: {items[-1]['how']}"
    out = [Total("monthly_after_destroy", round(monthly, 2), "month", None, None, bound,
                 f"after the destroy, every month: {_usd(monthly, bound, approx)} ({'; '.join(parts)}), plus {kept}"
                 if parts else f"after the destroy, every month: {kept}", tuple(items))]
    if s.provisioning == "calendar" and s.calendar_start and plan.destroys(accelerator_module(s.arch)):
        begin, end = calendar_window(s.calendar_start, s.calendar_days)
        now = (now or calendar.now()).astimezone(datetime.timezone.utc)  # the one clock (TPUBUILD_NOW)
        hours = max(0.0, (end - max(now, begin)).total_seconds() / 3600)
        found = _committed(s, _slice(s), "calendar_after_destroy", round(hours, 2),
                           f"still billed: the calendar-mode reservation cannot be cancelled and bills until {end:%Y-%m-%dT%H:%MZ}")
        out += [found] if found and hours else []
    return out


def as_dicts(found: list[Total]) -> list[dict[str, Any]]:
    return [asdict(t) for t in found]


def section(settings: Settings, plan: Plan, before: Estimate | None, after: Estimate) -> dict[str, Any]:
    """The ``cost`` section of ``plan --format json``: the hourly estimate ``before`` (the applied
    values; None: nothing applied is known) and ``after`` the build, the change, the totals and
    where the prices come from (docs/plan_cost_ttl.md)."""
    data = table()
    ttl_fires = plan.action is not Action.DESTROY and plan.applies(accelerator_module(settings.arch))
    found = totals(settings, plan, after, ttl_fires)
    change = change_text(before, after)
    for t in found:  # the $0.00/h is the environment's: a calendar-mode reservation bills on
        if t.kind == "calendar_after_destroy" and t.hourly is not None:
            change += (f"; except the calendar-mode reservation, which a destroy cannot cancel: "
                       f"{bound_prefix(t.bound)}{money(t.hourly)}/h until its end (Totals)")
    return {"before": before.as_dict() if before is not None else None, "after": after.as_dict(),
            "change": change, "totals": as_dicts(found),
            "prices": {"file": data["source"]["file"], "source": data["source"]["kind"],
                       "from": data["source"]["text"], "retrieved": data["source"]["retrieved"],
                       "checked": data.get("verification", {}).get("checked", "never"),
                       "check_at": sorted({data["sources"][i.source] for i in after.unconfirmed}),
                       "currency": data["currency"], "sources": data["sources"]}}


def lines(c: dict[str, Any]) -> list[str]:
    """The text ``plan`` prints of :func:`section`'s dict: the hourly cost, each item, each
    stand-in said once, the prices' provenance, then the "Totals" block (each total's ``text``)."""
    caveat = " (estimate from unconfirmed list prices)" if c["after"]["unconfirmed"] else ""
    out = [f"Cost per hour: {c['change']}{caveat}"]
    out += [f"  {Item(**item).text()}" for item in c["after"]["items"]]
    out += [f"  {bound}" for bound in c["after"]["bounds"]]  # each stand-in figure, said once
    if "candidates" in c:  # a candidate list (builder/planning/candidate_table.py): which one is priced, the worst case
        out.append(f"  {c['candidates']['text']}")
    approx = " (~: the list price of another region)" if c["after"]["approximate"] else ""
    out.append(f"  list prices in {c['prices']['currency']} from {c['prices']['from']}{approx}; your bill may differ")
    if c["after"]["unconfirmed"]:
        out.append(f"  (unconfirmed): not found in Google's price pages when last checked "
                   f"({c['prices']['checked']}); check {', '.join(c['prices']['check_at'])} before relying on it")
    if c["totals"]:
        out += ["", "Totals:"] + [f"  {t['text']}" for t in c["totals"]]
    return out
