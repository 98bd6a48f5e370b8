"""How long each pipeline step takes, in minutes, read by ``benchmarks/critical_path.py`` (the
pipelines' critical paths) and by ``tpubuild plan`` (how long make-before-break bills two slices
together, builder/planning/replacement.py). The figures are facts of their records: a step kind's
``minutes`` (builder/catalogue/step_kinds.py ``KINDS``) and, for an apply, its module's ``apply_minutes``
(its catalogue entry, builder/catalogue/modules.py). Correct a figure there and every view moves with it.
"""

from __future__ import annotations

from typing import Any

from builder.catalogue.modules import CATALOGUE, spec
from builder.catalogue.step_kinds import KINDS

#: Minutes the seeder takes per 100 GB copied (gcloud storage cp on an e2-standard-8, ~170 MB/s).
SEED_PER_100GB = 10.0


#: The make-before-break steps that find nothing to do when the build replaces no slice (a create,
#: an update that keeps the slice): a container start and one lookup each.
MOVE_KINDS = frozenset({"swap", "checkpoint", "release", "resume"})
NOTHING_TO_MOVE = 0.5


def duration(step: dict[str, Any], settings: Any, *, replacing: bool = True) -> float:
    """Minutes of one step (a rendered step, or any mapping with its ``id``, ``<module>-<kind>``):
    an apply's module's ``apply_minutes`` (its entry on the settings' architecture: on mig, tpu-apply
    is the slice's access, not a TPU), else its kind's ``minutes``, else 1; a seed adds its disk's copy time. ``replacing=False``: the
    build replaces no slice, so the :data:`MOVE_KINDS` steps only look (``NOTHING_TO_MOVE``)."""
    sid = step["id"]
    kind = sid.rsplit("-", 1)[-1] if "-" in sid else sid
    kind = {"tpubuild-image": "image", "check-capacity": "capacity"}.get(sid, kind)
    if not replacing and kind in MOVE_KINDS:
        return NOTHING_TO_MOVE
    module = sid[: -len(kind) - 1] if sid.endswith(f"-{kind}") else ""
    entry = None
    if kind == "apply" and module:  # the module's entry on these settings' architecture (any, without them)
        entry = (spec(settings.arch, module) if settings is not None
                 else next((s for s in CATALOGUE if s.name == module), None))
    minutes = entry.apply_minutes if entry is not None else KINDS[kind].minutes if kind in KINDS else 1.0
    if kind == "seed":
        minutes += SEED_PER_100GB * settings.shared_pd_size_gb / 100
    return minutes


def table() -> dict[str, float]:
    """Every figure by step: ``<kind>``, and ``<module>-apply`` where a module's apply has its own
    (what benchmarks/critical_path.py prints beside the paths)."""
    out = {kind: k.minutes for kind, k in KINDS.items()}
    out.update({f"{s.name}-apply": s.apply_minutes for s in CATALOGUE if s.apply_minutes != KINDS["apply"].minutes})
    return out
