"""What ``tpubuild plan`` says of TPU_REPLACE: which of make-before-break and break-before-make an
update that applies the slice does, how long both slices are billed together, and what that costs.

The facts come from their one place each: the mode from ``Settings.replace``
(builder/config/replace.py), whether the change replaces the slice from the before → after
(``builder.planning.diff``), the steps from the plan (``tpu-apply → tpu-swap → [tpu-checkpoint] →
tpu-release → [tpu-resume]``, the bracketed ones with a MODEL), their
minutes from ``builder.catalogue.durations`` (the table benchmarks/critical_path.py reads), the price from
``builder.catalogue.cost``. The guard says the same thing of the real Terraform plan (``builder.planning.guard``:
a slice created while another one is kept). Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder.catalogue import cost
from builder.catalogue.durations import duration
from builder.catalogue.modules import accelerator_module
from builder.catalogue.step_kinds import DRAIN_WAIT_S, step_timeout
from builder.config.replace import MAKE_BEFORE_BREAK, moves_training, slot_names, unmoved_model
from builder.facts.actions import Action
from builder.planning.plan import runs

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.planning.diff import Diff
    from builder.planning.plan import Plan


#: What the overlap's figures are where a price stands in (``bound``, builder/catalogue/cost.py ``BOUNDS``):
#: said once after the prices, as the cost says it once under its items.
STAND_INS = {"at most": "a price stands in for one Google does not publish (see the cost): the figures are ceilings",
             "at least": "a price stands in for one Google does not publish (see the cost): the figures are floors",
             "stand-in": "prices stand in for ones Google does not publish (see the cost), ceilings and floors "
                         "summed: the figures are neither"}


def _billed(plan: Plan) -> list[Any]:
    """The accelerator module's steps from its apply (the new slice's create) to its release (the
    old one's delete), both included: on vm apply, swap, checkpoint (with a MODEL: the wait for
    its next checkpoint on the old slice, then its stop) and release; on mig resize and attach too
    (the new group's VMs come and get the disk meanwhile). Both slices bill through all of them."""
    mine = [st for st in plan.steps if st.module == accelerator_module(plan.arch)]
    kinds = [st.kind for st in mine]
    if "apply" not in kinds or "release" not in kinds:
        return []
    return mine[kinds.index("apply"):kinds.index("release") + 1]


def overlap_minutes(plan: Plan) -> float:
    """Minutes both slices are billed together, expected: each billed step's estimate
    (``builder.catalogue.durations``)."""
    return sum(duration({"id": st.id}, None) for st in _billed(plan))


def overlap_minutes_max(settings: Settings, plan: Plan) -> float:
    """The most minutes both slices can be billed together: each billed step's rendered timeout
    (``builder.catalogue.step_kinds.step_timeout``), after which Cloud Build stops the build."""

    return sum(step_timeout(settings, st) for st in _billed(plan)) / 60


def facts(settings: Settings, plan: Plan, applied: Settings | None, d: Diff) -> dict[str, Any] | None:
    """The replacement section of ``tpubuild plan`` (None: the plan does not apply the slice).

    ``replaces``: True/False from the before → after, None when nothing applied is known.
    Only under make-before-break when the change replaces the slice, or (an update compared with
    nothing) may: ``overlap_minutes`` (expected) and ``overlap_minutes_max`` (the billed steps'
    timeouts) both slices are billed together; ``old_hourly`` and ``new_hourly`` (USD/h, the
    running and the new slice's list prices); ``overlap_cost`` and ``overlap_cost_max`` (USD, both
    slices for those minutes; None: the running slice's price is unknown); ``bound`` (how the
    figures err where a price stands in, builder/catalogue/cost.py); ``text``, what the plan notes ('' when
    there is nothing to say)."""
    module = accelerator_module(settings.arch)
    if not plan.applies(module) or plan.action is Action.DESTROY:
        return None
    changed = d.get(module)
    replaces = (changed is not None and changed.status == "replace") if d.applied else None
    mbb = settings.replace == MAKE_BEFORE_BREAK and bool(runs(settings, plan, "swap"))
    out: dict[str, Any] = {"mode": settings.replace, "replaces": replaces, "module": module,
                           "overlap_minutes": None, "overlap_minutes_max": None, "overlap_cost": None,
                           "overlap_cost_max": None, "old_hourly": None, "new_hourly": None, "bound": None}
    names = " or ".join(slot_names(settings))
    if mbb and (replaces or (replaces is None and plan.action is Action.UPDATE)):
        minutes, most = overlap_minutes(plan), overlap_minutes_max(settings, plan)
        out["overlap_minutes"], out["overlap_minutes_max"] = minutes, most
        old = cost.estimate(applied, frozenset({module})) if applied is not None and replaces else None
        new = cost.estimate(settings, frozenset({module}))
        if not new.unknown:
            out["new_hourly"] = round(new.known, 4)
            out["bound"] = new.bound or None
        if old is not None and not old.unknown and not new.unknown:
            both = old.known + new.known
            out["old_hourly"] = round(old.known, 4)
            out["overlap_cost"] = round(both * minutes / 60, 2)
            out["overlap_cost_max"] = round(both * most / 60, 2)
            out["bound"] = cost.combine((old.bound, new.bound)) or None
        was = f"the running {applied.accelerator_type}" if applied is not None and replaces else "the running slice"
        idle = (f"the new {settings.accelerator_type} at ${out['new_hourly']:,.2f}/h, which stands idle until the "
                "release" if out["new_hourly"] is not None else "")
        stand = f"; {STAND_INS[out['bound']]}" if out["bound"] else ""
        if out["overlap_cost"] is not None:
            price = (f": ~${out['overlap_cost']:,.2f}, at most ${out['overlap_cost_max']:,.2f} ({was} at "
                     f"${out['old_hourly']:,.2f}/h and {idle}{stand})")
        elif replaces:
            price = f" ({idle + ', and ' if idle else ''}the running slice, whose list price is unknown: builder/data/prices.json{stand})"
        else:
            price = (f" ({idle + ', and ' if idle else ''}the running slice, whose price for that time is unknown until "
                     f"the applied values are{stand})")
        when = "" if replaces else "if the change replaces the slice (compare with --applied FILE to know): "
        if moves_training(settings):
            moves = (f"{module}-checkpoint waits (at most {DRAIN_WAIT_S // 60} min) for {settings.model}'s next "
                     f"checkpoint on the old one and stops it there, {module}-release deletes the old one, "
                     f"{module}-resume starts {settings.model} on the new one from that checkpoint")
        else:
            moves = f"{module}-release deletes the old one ({_not_moved(settings)})"
        out["text"] = (f"{module}: {when}make-before-break: {module}-apply creates the {settings.accelerator_type} "
                       f"slice beside {was} under the other slice name ({names}) and waits until it is READY, "
                       f"{module}-swap checks it, {moves}; both are billed "
                       f"together for ~{minutes:.0f} min (at most {most:.0f} min, the steps' timeouts){price}; the TPU quota must hold both slices; if the new "
                       "slice does not come, the old one keeps running and the build fails")
    elif replaces:
        out["text"] = (f"{module}: break-before-make (TPU_REPLACE): the running slice is deleted first, then "
                       f"the {settings.accelerator_type} slice is created in its place: one slice billed at a time, "
                       "and nothing runs if Google has no capacity for the new one")
    elif mbb and plan.action is Action.CREATE:
        out["text"] = create_handover(settings, plan)
    else:
        out["text"] = ""
    return out


def create_handover(settings: Settings, plan: Plan) -> str:
    """Why a create lists the handover steps (swap, checkpoint, release, resume) although a fresh
    one has nothing to hand over: the pipeline cannot know at render time that no slice runs. The
    applied snapshot is written only by a build that succeeded, so a create rerun after one that
    failed past ``<module>-apply``, or run over an environment whose snapshot is gone, may find a
    slice running; when it holds other values, ``<module>-apply`` makes the new one beside it
    (make-before-break is a Terraform variable of every apply) and only these steps delete the old
    one. Rendering them always keeps that from leaving two slices billed (docs/pipeline.md)."""
    module = accelerator_module(settings.arch)
    handover = ("swap", "checkpoint", "release", "resume")
    kinds = [st.id for st in plan.steps if st.module == module and st.kind in handover]
    model = settings.model
    training = f", no {model} training," if model else ""
    moves = (f"{module}-checkpoint stops {model} on the old one, {module}-release deletes it and {module}-resume "
             f"starts {model} on the new one" if moves_training(settings) else
             f"{module}-release deletes the old one ({_not_moved(settings)})" if model else
             f"{module}-release deletes the old one")
    return (f"{module}: {', '.join(kinds)} are in every create (make-before-break): on a fresh create they find one "
            f"slice{training} and do nothing; a create that finds a slice already running with other values (a rerun "
            f"after a create that failed past {module}-apply) makes the new one beside it, and {moves}, as in an "
            "update")


def _not_moved(settings: Settings) -> str:
    """Why make-before-break moves no training (MODEL empty, or a model it cannot move), and what stops."""
    model = unmoved_model(settings)
    if model:
        return (f"{model} is not moved: it runs your own script, whose checkpoints tpubuild cannot see, so whatever "
                f"runs on the old slice stops there; start it on the new one with tpubuild train {model}, "
                "from your script's last checkpoint")
    return "MODEL is empty: whatever runs there stops, and the build starts nothing on the new one"
