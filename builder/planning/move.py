"""What ``tpubuild plan`` says of an update that moves the environment to another zone
(docs/capacity.md, "Moving an environment to another zone"): from where to where, why, the steps
in order with their modelled minutes, the down time, and the money, both zones billed together.

An update moves when its acting settings (builder/config/candidates.py ``acting``: the list no
longer holds the granted place, or puts another zone first) are in another zone than the applied
place, and ``TPU_MOVE`` is true. Then nothing that holds data is destroyed before its copy exists:
the new zone's dataset disk is made from a snapshot of the running one, its Filestore instance is
restored from a backup of the running share (zonal tiers; REGIONAL and ENTERPRISE stay within their
region), all while the old slice trains; then the new slice (two slices are billed only from its
create to the old one's release); training resumes from the bucket's checkpoint, and the old zone's
slice, disk and share are deleted last. Every minute here is modelled (builder/catalogue/durations.py
and the seed's throughput), never measured; every price is the plan's own (builder/catalogue/cost.py,
builder/data/prices.json). Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder.catalogue import cost
from builder.catalogue.durations import SEED_PER_100GB, duration
from builder.catalogue.modules import accelerator_module
from builder.config.filestore import TIERS
from builder.facts.actions import Action

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.planning.plan import Plan

def moves(applied: Settings | None, settings: Settings, action: Action) -> bool:
    """Whether ``settings`` (placed as the update acts) move the applied environment to another zone."""
    return (applied is not None and Action(action) is Action.UPDATE and settings.move
            and applied.arch == settings.arch and applied.zone != settings.zone)


def _copy_minutes(gb: float) -> float:
    """A copy of ``gb`` at the seed's modelled throughput (~170 MB/s; Google publishes no rate for
    a snapshot, a disk made from one, a Filestore backup or its restore)."""
    return round(SEED_PER_100GB * gb / 100, 1)


def facts(applied: Settings | None, settings: Settings, plan: Plan, why: str = "") -> dict[str, Any] | None:
    """The move section of ``tpubuild plan`` (None: the update moves nothing). ``why``: what put the
    environment in the new zone (default: the ZONE list's order)."""
    if applied is None or not moves(applied, settings, plan.action):
        return None
    module = accelerator_module(settings.arch)
    tier = TIERS.get(settings.shared_fs_tier)
    fs_moves = tier is not None and not tier.regional or applied.region != settings.region
    first = {"step": f"{module}-apply", "what": f"the {settings.accelerator_type} slice in {settings.zone}, beside "
             f"the running one in {applied.zone}, once its storage is ready (the candidates of {settings.zone} in order)",
             "minutes": duration({"id": f"{module}-apply"}, settings), "training": "runs on the old slice"}
    steps: list[dict[str, Any]] = []
    if settings.shared_pd_attach:
        gb = applied.shared_pd_size_gb
        steps.append({"step": "shared_pd-snapshot", "what": f"a standard snapshot of {applied.shared_pd_name} in "
                      f"{applied.zone} (the disk stays attached: it is read-only)", "minutes": _copy_minutes(gb),
                      "training": "runs on the old slice"})
        steps.append({"step": "shared_pd-apply", "what": f"{settings.shared_pd_name} in {settings.zone}, made from "
                      "that snapshot (no seed)", "minutes": _copy_minutes(gb), "training": "runs on the old slice"})
    if fs_moves:
        gb = applied.shared_fs_capacity_gb
        steps.append({"step": "filestore-backup", "what": f"a backup of {applied.filestore_name}:/"
                      f"{applied.shared_fs_name} in {applied.region} (at most {gb:,} GiB)",
                      "minutes": _copy_minutes(gb), "training": "runs on the old slice"})
        steps.append({"step": "filestore-apply", "what": f"{settings.filestore_name} in {settings.zone}, restored "
                      "from that backup (file_shares.source_backup)",
                      "minutes": duration({"id": "filestore-apply"}, settings) + _copy_minutes(gb),
                      "training": "runs on the old slice"})
    down = [{"step": f"{module}-checkpoint", "what": "stops the training on the old slice at its next checkpoint, "
             "which checkpoint_sync.sh copies to the bucket", "minutes": duration({"id": f"{module}-checkpoint"},
                                                                                   settings), "training": "stops"},
            {"step": f"{module}-resume", "what": f"starts it on the new slice in {settings.zone} from the bucket's "
             "checkpoint, at the next sample", "minutes": duration({"id": f"{module}-resume"}, settings),
             "training": "resumes"}]
    release = [{"step": f"{module}-release", "what": f"deletes the old slice in {applied.zone}",
                "minutes": duration({"id": f"{module}-release"}, settings), "training": "runs on the new slice"}]
    if fs_moves:
        release.append({"step": "filestore-release", "what": f"a last backup of the old share, then deletes it "
                        f"(the guard lets it go: its copy in {settings.zone} was made from a backup of it)",
                        "minutes": 4.0, "training": "runs on the new slice"})
    if settings.shared_pd_attach:
        release.append({"step": "shared_pd-release", "what": f"deletes the old disk in {applied.zone} (its copy "
                        "was made from a snapshot of it)", "minutes": 1.0, "training": "runs on the new slice"})
    copies = sum(s["minutes"] for s in steps)
    ids = {st.id for st in plan.steps}
    built = bool(settings.moving_from) and bool(ids)
    # the steps this build renders (the handover's only with a MODEL that moves, TPU_REPLACE=make-before-break)
    down = [s for s in down if s["step"] in ids] if built else down
    release = [s for s in release if s["step"] in ids] if built else release
    steps += [first, *down, *release]
    slice_release = [s for s in release if s["step"] == f"{module}-release"]
    slice_overlap = first["minutes"] + sum(s["minutes"] for s in down) + sum(s["minutes"] for s in slice_release)
    storage = sum(s["minutes"] for s in steps if s["step"].endswith("-apply") and s is not first) + slice_overlap + \
        sum(s["minutes"] for s in release if s not in slice_release)
    down_minutes = sum(s["minutes"] for s in down)
    old_slice = cost.estimate(applied, frozenset({module}))
    storage_modules = frozenset(m for m, on in (("filestore", fs_moves), ("shared_pd", settings.shared_pd_attach)) if on)
    old_storage = cost.estimate(applied, storage_modules)
    known = not old_slice.unknown and not old_storage.unknown
    both = (old_slice.known * slice_overlap + old_storage.known * storage) / 60 if known else None
    kept = []
    if settings.shared_pd_attach:
        rate, _ = cost.per_month("kept_gb_month", "snapshot", applied.region)
        kept.append(("the disk's snapshot (at most)", applied.shared_pd_size_gb * (rate or 0.0)))
    if fs_moves:
        rate, _ = cost.per_month("kept_gb_month", "filestore_backup", applied.region)
        kept.append(("the share's backups (at most)", applied.shared_fs_capacity_gb * (rate or 0.0)))
    reason = why or (f"asked for with --move-to {settings.move_to}" if settings.move_to else
                     f"the ZONE list puts {settings.zone} first" if settings.candidates
                     and settings.candidates[0].zone == settings.zone else f"the ZONE list no longer holds {applied.zone}")
    out = {"from": applied.zone, "to": settings.zone, "why": reason, "modelled": True, "steps": steps,
           "down_minutes": round(down_minutes, 1), "both_zones_minutes": round(slice_overlap, 1),
           "storage_both_minutes": round(storage, 1),
           "copy_minutes": round(copies, 1),
           "both_zones_cost": round(both, 2) if both is not None else None,
           "kept_per_month": {what: round(usd, 2) for what, usd in kept}, "built": built}
    order = " → ".join(s["step"] for s in steps)
    money = (f"~${both:,.2f} for the old zone's slice and storage billed beside the new ones" if both is not None
             else "the old zone's price is unknown (builder/data/prices.json)")
    after = "; ".join(f"{what} ~${usd:,.2f}/month until you delete them" for what, usd in kept)
    out["text"] = (f"move: {applied.zone} → {settings.zone} ({reason}; TPU_MOVE=\"false\" turns moving off), "
                   f"make-before-break: {order}; modelled, not measured: ~{down_minutes:.0f} min without training, "
                   f"both zones billed ~{slice_overlap:.0f} min (the storage ~{storage:.0f} min): {money}"
                   f"{'; afterwards ' + after if after else ''}; nothing that holds data is deleted before its copy "
                   "exists, so no _ALLOW_DATA_LOSS" + (
                       "; the build renders these steps, and one stopped anywhere continues when run again "
                       if built else "; this build does not render the move's steps (a MIG's slots record no zone yet), so "
                       "its guard refuses replacing Filestore or the disk in place and nothing is lost ") +
                   "(docs/capacity.md, \"Moving an environment to another zone\")")
    return out
