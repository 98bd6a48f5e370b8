"""The build actions: one type from the CLI's ``--action`` (and Cloud Build's ``_BUILD_ACTION``)
to the plan, the pipeline, the diff, the money lines and the guard.

An action is compared as an :class:`Action`, never as its name in a string
(``tests/unit/test_import_direction.py`` fails on ``plan.action == "destroy"`` anywhere in builder/).
It is a ``str`` enum so that it prints, formats and serialises (JSON, YAML, substitutions) as its
name: ``f"tpubuild-{plan.action}"`` is ``tpubuild-create``.

Pure: standard library and :mod:`builder.facts.errors` only (the bottom layer, builder/facts in the
layer drawing of docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from builder.facts.errors import BadInput


class _Named(str, Enum):
    """An enum that prints and formats as its value (``f"tpubuild-{action}"`` is ``tpubuild-create``)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Action(_Named):
    """What a build does. ``auto`` (GitOps) decides at run time which of create/update it is."""

    INITIALIZE = "initialize"
    CREATE = "create"
    UPDATE = "update"
    DESTROY = "destroy"
    AUTO = "auto"

    @classmethod
    def parse(cls, raw: str, name: str = "--action", *, choices: Iterable[Action] | None = None,
              what: str = "an action") -> Action:
        """``raw`` (any case, spaces around) as one of ``choices`` (default: every action); else
        one line, naming the input as ``name`` (``--action``, ``_BUILD_ACTION``) and every choice.
        The one parse of an action: argparse's ``--action`` and ``builder.planning.request`` both call it."""
        allowed = tuple(cls) if choices is None else tuple(choices)
        found = next((a for a in allowed if a.value == str(raw).strip().lower()), None)
        if found is None:
            *rest, last = (a.value for a in allowed)
            raise BadInput(f"{name}: {raw!r} is not {what}; use {', '.join(rest)} or {last}" if rest else
                           f"{name}: {raw!r} is not {what}; use {last}")
        return found


#: The actions a plan is made for (auto becomes one of create/update first).
PLAN_ACTIONS: tuple[Action, ...] = (Action.INITIALIZE, Action.CREATE, Action.UPDATE, Action.DESTROY)
#: The actions ``_BUILD_ACTION`` / ``submit --action`` take.
BUILD_ACTIONS: tuple[Action, ...] = (*PLAN_ACTIONS, Action.AUTO)
#: The actions a guard runs under (the build's action; initialize has no Terraform to guard).
GUARD_ACTIONS: tuple[Action, ...] = (Action.CREATE, Action.UPDATE, Action.AUTO, Action.DESTROY)
#: Actions that would apply (create or change) the TPU.
APPLYING: frozenset[Action] = frozenset({Action.CREATE, Action.UPDATE, Action.AUTO})
#: The actions whose plan applies modules (create's or update's operations).
APPLIES: frozenset[Action] = frozenset({Action.CREATE, Action.UPDATE})


class Verdict(_Named):
    """What GitOps ``auto`` decided (``builder.planning.auto.Decision``): the action it becomes, or nothing
    to do. Its value is what ``tpubuild plan --action auto`` and ``plan --all`` print."""

    CREATE = "create"
    UPDATE = "update"
    NOTHING = "none"

    @property
    def action(self) -> Action | None:
        """The build action it becomes (None: nothing to do)."""
        return None if self is Verdict.NOTHING else Action(self.value)
