"""GitOps ``auto``: what changed since the applied snapshot, and which modules that touches.

Pure: no I/O (``builder.cloud.auto`` adds the digests of the modules' sources, which read files).
``tpubuild plan --action auto`` and ``render --action auto`` use it offline with ``--applied FILE``;
the cloud's ``auto`` uses it with the snapshot read from the state bucket.
The rules (docs/cloud.md has the table):

* no applied snapshot → ``create``;
* a key that moves the whole environment (``MOVING_KEYS``: project, name, zone/region, network,
  architecture) changed → refused (``BadInput``, exit 2): auto never relocates an environment;
  destroy it and create it again, or put the value back (the gate's ``auto-move`` row,
  builder/config/moves.py, which every door that reads the applied values consults first);
* otherwise every changed key maps to plan modules (``modules_for_key``; a module these values do
  not create, such as an unattached shared PD, is named with why and left out), every module whose
  Terraform or boot sources changed (digests recorded in the snapshot) is added, and so is every
  module the snapshot marks *outstanding* (changed outside the scope of an earlier build);
  modules the snapshot marks *absent* (destroyed on purpose) stay absent, and an environment
  whose every module is absent (a full destroy) is left alone;
* nothing left → nothing to do (exit 0); else ``update`` restricted to those modules.

Values are compared after parsing with ``builder.config`` (so ``STANDARD`` and ``BASIC_HDD``,
``"true"`` and ``"yes"``, or a changed comment are no change).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.catalogue.modules import SCOPED, modules_for_key, specs
from builder.config import Settings
from builder.config.moves import MOVING_KEYS, changed_keys, move_refusal, value_of as _value
from builder.facts.actions import Action, Verdict
from builder.facts.records import record
from builder.planning.plan import make_plan

if TYPE_CHECKING:  # pragma: no cover
    from builder.planning.plan import Plan

#: Keys only the GitOps triggers read (builder/inputs/gitops.py): a change applies nothing.
TRIGGER_KEYS: tuple[str, ...] = ("ENV_PROTECTED",)


@record
class Decision:
    action: Verdict
    only: frozenset[str] | None
    reasons: tuple[str, ...]

    def summary(self) -> str:
        if self.action == Verdict.NOTHING:
            return "auto: nothing changed since the applied snapshot; nothing to do"
        if self.action == Verdict.CREATE:
            return "auto: create"
        return f"auto: update {', '.join(sorted(self.only or ()))}"


def decide(
    current: Settings,
    applied: Settings | None,
    *,
    plan_modules: tuple[str, ...],
    build_id: str = "",
    outstanding: frozenset[str] = frozenset(),
    absent: frozenset[str] = frozenset(),
    sources_then: dict[str, str] | None = None,
    sources_now: dict[str, str] | None = None,
) -> Decision:
    if applied is None:
        return Decision(Verdict.CREATE, None, ("no applied snapshot: this environment has no successful build yet",))
    since = f" since build {build_id}" if build_id else " since the applied snapshot"
    if set(plan_modules) <= absent:
        return Decision(Verdict.NOTHING, None, (f"the environment was destroyed by build {build_id or '?'}; auto leaves it "
                                       "destroyed: run _BUILD_ACTION=create to bring it back",))
    moved = move_refusal(applied, current, since)  # the gate's auto-move row (builder/config/moves.py)
    if moved is not None:
        raise moved
    keys = changed_keys(applied, current)
    wanted: dict[str, list[str]] = {}
    reasons: list[str] = []
    for key in keys:
        mods = sorted(modules_for_key(key, current.arch) & set(plan_modules))
        shown = f"{key}: {_value(applied, key)!r} → {_value(current, key)!r}"
        if mods:
            reasons.append(f"{shown} ({', '.join(mods)})")
            for m in mods:
                wanted.setdefault(m, []).append(key)
        elif left_out := sorted(modules_for_key(key, current.arch) - set(plan_modules)):
            why = "; ".join(f"{s.name}: not created: {s.unwanted_why}" for s in specs(current.arch)
                            if s.name in left_out)
            reasons.append(f"{shown} ({why})")
        elif key in TRIGGER_KEYS:
            reasons.append(f"{shown} (no infrastructure change: read by the environment's triggers; import them "
                           "again from tpubuild trigger)")
        else:
            reasons.append(f"{shown} (no infrastructure change: read at training time)")
    listed = [[c.label for c in s.candidates] for s in (applied, current)]
    if listed[0] != listed[1] and not any(k in keys for k in ("ZONE", "TPU_PROVISIONING")):
        # the slice stays where it was granted (builder/config/candidates.py): only later tries read the list
        reasons.append(f"candidates: {', '.join(listed[0])} → {', '.join(listed[1])} (the slice stays in "
                       f"{current.zone} {current.provisioning}; the list is read when the slice is acquired again)")
    then, now = sources_then or {}, sources_now or {}
    for m in plan_modules:
        if m in then and m in now and then[m] != now[m]:
            reasons.append(f"{m}: its Terraform or boot sources changed{since}")
            wanted.setdefault(m, []).append("sources")
    for m in sorted(outstanding & set(plan_modules)):
        reasons.append(f"{m}: outstanding (destroyed, or changed outside the scope of build {build_id or '?'})")
        wanted.setdefault(m, []).append("outstanding")
    for m in sorted(set(wanted) & absent):
        reasons.append(f"{m}: destroyed by a scoped destroy; auto leaves it absent "
                       f"(run update with _{m.upper()}=true to bring it back)" if m in SCOPED else
                       f"{m}: destroyed; auto leaves it absent (run create to bring it back)")
        del wanted[m]
    if not wanted:
        return Decision(Verdict.NOTHING, None, tuple(reasons) or (f"values.env is unchanged{since}",))
    return Decision(Verdict.UPDATE, frozenset(wanted), tuple(reasons))


def touched(old: Settings | None, new: Settings, *, plan_modules: tuple[str, ...],
            sources_then: dict[str, str] | None = None, sources_now: dict[str, str] | None = None) -> frozenset[str]:
    """Plan modules whose values or sources differ between ``old`` and ``new`` (all when unknown or
    when a moving key changed). ``finalize`` uses it to keep what a scoped build left out."""
    every = frozenset(plan_modules)
    if old is None:
        return every
    keys = changed_keys(old, new)
    if any(k in MOVING_KEYS for k in keys):
        return every
    out: set[str] = set()
    for key in keys:
        out |= modules_for_key(key, new.arch)
    then, now = sources_then or {}, sources_now or {}
    out |= {m for m in plan_modules if m in then and m in now and then[m] != now[m]}
    return frozenset(out) & every


#: auto's one reason when the applied snapshot's values.env no longer parses.
UNREADABLE = "the applied snapshot could not be read: update every module"


def decide_unreadable(plan_modules: tuple[str, ...], absent: frozenset[str]) -> Decision:
    """auto's decision when a snapshot exists but its values.env no longer parses (a key renamed
    or removed since it was applied): nothing can be compared, so update every module that is not
    absent. ``tpubuild plan --action auto`` refuses instead (it asks for ``--applied FILE``)."""
    return Decision(Verdict.UPDATE, frozenset(plan_modules) - absent, (UNREADABLE,))


def plan_for(settings: Settings, decision: Decision) -> Plan | None:
    """The plan that carries out ``decision``; None when there is nothing to do."""
    if decision.action == Verdict.NOTHING:
        return None
    if decision.action == Verdict.CREATE:
        return make_plan(settings, Action.CREATE)
    return make_plan(settings, Action.UPDATE, only=decision.only)
