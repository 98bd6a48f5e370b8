"""The steps of a move to another zone beyond an update's (docs/capacity.md, "Moving an environment to
another zone"): which storage modules are made from a copy the move takes in the old zone (its
``<module>-snapshot``/``<module>-backup`` before the plan, builder/catalogue/modules.py), and the
release steps that delete the old zone's storage last. ``builder.planning.plan.steps`` weaves them in,
``builder.render.pipeline`` renders them, builder/planning/move.py tells them. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from builder.catalogue.modules import CATALOGUE, accelerator_module

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


#: What a move copies, per storage module (its catalogue entry's ``move_copy``): the step kind that takes
#: the copy in the old zone before the module's plan (``<module>-<kind>``, which leaves the copy's name in
#: ``plans/<module>.move-copy``) and the module's variable its plan passes it in (modules/filestore,
#: modules/shared_pd).
COPIES: dict[str, tuple[str, ...]] = {m.name: m.move_copy[:2] for m in CATALOGUE if m.move_copy}
FINAL: frozenset[str] = frozenset(m.name for m in CATALOGUE if m.move_copy[2:] == ("final",))


def copied(plan: Any, ids: set[str] | frozenset[str], module: str) -> bool:
    """Whether ``module``'s apply in ``plan`` is made from a copy the move takes (its copy step is there)."""
    return module in COPIES and plan.applies(module) and f"{module}-{COPIES[module][0]}" in ids


def releases(settings: Settings, plan: Any, last: dict[str, str], ids: set[str], tools: str,
             add: Callable[[str, str, str, list[str]], str]) -> None:
    """The end of a move: once the slice's handover is done (its module's last step), per storage
    module the move copied, ``<module>-release-plan`` (the plan with ``release=true``: the old zone's
    slot deleted), ``<module>-release-guard`` (the guard lets it go only with the copy kept beside it,
    MOVED) and ``<module>-release`` (applies that plan); Filestore's first takes a last backup of the
    old share (``filestore-final-backup``: what was written after the move's backup is kept)."""
    acc = accelerator_module(settings.arch)
    handed = [last[acc]] if acc in last else []
    for module in COPIES:
        if not copied(plan, ids, module):
            continue
        first = [*handed, last[module]]
        if module in FINAL:
            first = [add(f"{module}-final-{COPIES[module][0]}", COPIES[module][0], module, first)]
        planned = add(f"{module}-release-plan", "unslot", module, first)
        add(f"{module}-release", "release", module, [add(f"{module}-release-guard", "guard", module, [planned, tools])])
