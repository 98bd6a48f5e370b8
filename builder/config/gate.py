"""The gate: the one record of what tpubuild refuses or warns about in a values file that loads,
for which actions, and at which doors (docs/architecture.md, "The gate").

Every values file first goes through ``builder.config.load`` (each key, the rules between keys,
Google's names): every door loads the file, so what load refuses every door refuses. What only
some actions or some doors refuse is a row of :data:`CHECKS`: its name, what it refuses, the
actions it refuses, the doors that consult it, how ``tpubuild validate`` reports it (an error, or a
warning where the file stays valid for plan and render: a ``+14d`` calendar preview), and the
function that finds it, which returns the one-line :class:`ConfigError` (file:line, key, what,
fix) each door prints. The doors:

* ``validate`` reports every row (:func:`for_validate`), whatever the action;
* ``plan``, ``render``, ``submit`` and ``dispatch`` ask :func:`refuse` through
  ``builder.planning.request.parse``, their one way in, with their own door;
* ``plan --all`` asks it for ``auto``, as each environment's apply build would (so a ``+14d``
  calendar start, which that build's dispatch refuses, is a refused row);
* ``trigger`` asks it for ``auto``: a trigger whose every push build ``dispatch`` refuses is refused;
* ``train`` (and ``train --dry-run``) asks it for the file's own MODEL, whatever the action: its real
  run launches that model on the slice, so what the model refuses there is refused in the dry run too.

So validate refuses all a door refuses, dispatch all render does, render all plan does (and dispatch
all plan --all and trigger do), by the rows' door sets
(:data:`SUPERSETS`), and tests/corpus/test_doors_agree.py proves every door answers as its row says,
across the shipped files and generated edits. A new refusal is a new row; a new door is a new
:class:`Door`, and the test fails until it is in the table. Pure: reads the model plug-ins and the
script paths, calls no cloud.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from enum import Enum
from typing import TYPE_CHECKING

from builder.config.calendar import create_refusal, submit_refusal, validate_refusal
from builder.config.later import change_refusals, model_refusals, script_refusals
from builder.config.legacy import node_refusal
from builder.config.moves import move_refusal
from builder.facts.actions import APPLYING, Action
from builder.facts.errors import ConfigError, ConfigErrors
from builder.facts.records import record

if TYPE_CHECKING:  # pragma: no cover
    from builder.config.settings import Settings


class Door(str, Enum):
    """A way a user or a build meets a values file."""

    VALIDATE = "validate"
    PLAN = "plan"
    PLAN_ALL = "plan --all"
    RENDER = "render"
    TRIGGER = "trigger"
    TRAIN = "train"
    SUBMIT = "submit"
    DISPATCH = "dispatch"

    def __str__(self) -> str:
        return str(self.value)


#: (superset, subset): the first door refuses at least every row the second refuses, for the same
#: file and action. validate reports every row (as an error, or a warning); render refuses what plan
#: refuses; the builds (submit, dispatch) what render, plan --all and trigger refuse.
SUPERSETS: tuple[tuple[Door, Door], ...] = ((Door.RENDER, Door.PLAN), (Door.SUBMIT, Door.RENDER),
                                            (Door.DISPATCH, Door.RENDER), (Door.DISPATCH, Door.PLAN_ALL),
                                            (Door.DISPATCH, Door.TRIGGER))

Find = Callable[["Settings", "Action | None", "Settings | None"], "list[ConfigError]"]
_EVERY_BUILD = (Door.VALIDATE, Door.PLAN, Door.PLAN_ALL, Door.RENDER, Door.TRIGGER, Door.SUBMIT, Door.DISPATCH)


@record
class Check:
    """One row of the gate: ``name``; ``what`` it refuses; the ``actions`` it refuses (validate
    reports it whatever the action); the ``doors`` that refuse it; ``validate``: "error" or
    "warning"; ``find(settings, action, applied)``: its one-line refusals (``action`` None: worded for
    validate; ``applied`` None: nothing applied is known)."""

    name: str
    what: str
    actions: tuple[Action, ...]
    doors: tuple[Door, ...]
    validate: str
    find: Find


def _one(found: ConfigError | None) -> list[ConfigError]:
    return [found] if found is not None else []


def _relative(s: Settings, action: Action | None, applied: Settings | None) -> list[ConfigError]:
    return _one(submit_refusal(s))


def _too_soon(s: Settings, action: Action | None, applied: Settings | None) -> list[ConfigError]:
    if action is not None:
        return _one(create_refusal(s))
    line = s.line_of("TPU_CALENDAR_START")
    return _one(validate_refusal(s.source, line, {"provisioning": s.provisioning, "calendar_start": s.calendar_start,
                                                  "calendar_days": s.calendar_days}))


#: Every refusal beyond ``load``, in the order a door reports them (the root cause first).
CHECKS: tuple[Check, ...] = (
    Check("legacy-node", "a TPU Node file: Google stopped creating TPU Nodes (builder/config/legacy.py); destroy "
          "and status still work", APPLYING, _EVERY_BUILD, "error",
          lambda s, a, applied: _one(node_refusal(s, a))),
    Check("model", "what the selected MODEL cannot train on: an unknown model, a launcher that does not run on this "
          "architecture, the plug-in's own rules (builder/config/model_registry.py problems)", APPLYING,
          (*_EVERY_BUILD, Door.TRAIN), "error", lambda s, a, applied: model_refusals(s)),
    Check("auto-move", "a key that moves the environment (project, name, zone, region, network, architecture) "
          "changed since the applied values: auto updates in place, never relocates (builder/config/moves.py; "
          "validate with --applied)", (Action.AUTO,),
          (Door.VALIDATE, Door.PLAN, Door.PLAN_ALL, Door.RENDER, Door.SUBMIT, Door.DISPATCH), "error",
          lambda s, a, applied: _one(move_refusal(applied, s)) if applied is not None else []),
    Check("model-change", "an update the MODEL's training cannot resume across, from the applied values "
          "(model_registry.change_problems; validate with --applied)", APPLYING,
          (Door.VALIDATE, Door.PLAN, Door.PLAN_ALL, Door.RENDER, Door.SUBMIT, Door.DISPATCH), "error",
          lambda s, a, applied: change_refusals(applied, s) if applied is not None else []),
    Check("scripts", "a MIG_SETUP_SCRIPT / MIG_SEED_DATA_PREP_SCRIPT that is not a file of the repository (a "
          "destroy runs neither)", APPLYING, _EVERY_BUILD, "error", lambda s, a, applied: script_refusals(s)),
    Check("calendar-too-soon", "a calendar-mode start less than a day ahead: a create submits a new request "
          "(builder/config/calendar.py)", (Action.CREATE,),
          (Door.VALIDATE, Door.PLAN, Door.RENDER, Door.SUBMIT, Door.DISPATCH), "error", _too_soon),
    Check("calendar-relative", "a relative calendar start (+Nd): a submitted request cannot change, so a build "
          "sends the date written out; validate, plan and render preview it", APPLYING,
          (Door.PLAN_ALL, Door.TRIGGER, Door.SUBMIT, Door.DISPATCH), "warning", _relative),
)

BY_NAME: dict[str, Check] = {c.name: c for c in CHECKS}
#: The rows only the applied values decide: a door consults them once it has read those values
#: (``--applied FILE`` or the state bucket's snapshot), after :func:`refuse` without them.
APPLIED: tuple[str, ...] = ("auto-move", "model-change")


def refusals(settings: Settings, action: Action | None, door: Door, applied: Settings | None = None,
             *, only: Collection[str] | None = None) -> list[ConfigError]:
    """What ``door`` refuses about ``settings`` for ``action`` (None: a door that runs no build
    action, like ``train``: every row of that door); rows ``only``, when named."""
    return [e for c in CHECKS if door in c.doors and (action is None or action in c.actions)
            and (only is None or c.name in only) for e in c.find(settings, action, applied)]


def refuse(settings: Settings, action: Action | None, door: Door, applied: Settings | None = None,
           *, only: Collection[str] | None = None) -> None:
    """Raise :func:`refusals` (one ``ConfigErrors``: the first line, and how many more), if any."""
    found = refusals(settings, action, door, applied, only=only)
    if found:
        raise ConfigErrors(found, ())


def for_validate(settings: Settings, *, skip: Collection[str] = (), node: bool = True,
                 applied: Settings | None = None) -> tuple[list[ConfigError], list[str]]:
    """``tpubuild validate``: every row, as errors and warnings. ``skip``: Settings fields whose
    value did not parse (their own error is the root cause: ``"model"`` skips the model's rows,
    a script field its script); ``node``: the file has no error of its own yet (a TPU Node file
    and the calendar start are reported only then: a file that does not load is refused by every
    command, destroy included, and its calendar window may not be settled)."""
    errors: list[ConfigError] = []
    warnings: list[str] = []
    for c in CHECKS:
        if (c.name in ("legacy-node", "calendar-too-soon", "calendar-relative", "auto-move") and not node) or \
                (c.name in ("model", "model-change") and "model" in skip):
            continue
        found = c.find(settings, None, applied)
        if c.name == "scripts":
            found = [e for e in found if _SCRIPT_FIELDS.get(e.key or "") not in skip]
        if c.validate == "error":
            errors += found
        else:
            warnings += [f"{e.message} ({', '.join(str(d) for d in c.doors)} refuse it)" for e in found]
    return errors, warnings


_SCRIPT_FIELDS = {"MIG_SETUP_SCRIPT": "mig_setup_script", "MIG_SEED_DATA_PREP_SCRIPT": "mig_seed_data_prep_script"}
