"""What a later command refuses about a values file that loads: ``tpubuild validate`` reports it
all, so a file that validates is one that plan, render, submit and train accept.

``load`` checks the file itself (every key, the rules between keys, the names). The commands
after it refuse three more things, which this module finds without running them:

* a legacy TPU Node file: create, update and auto are refused (builder/config/legacy.py); destroy and
  status keep working. ``validate`` exits 2 on such a file with that one line, so a user learns
  before ``plan`` that the file can no longer build anything and that ``tpubuild migrate`` is
  the fix;
* the selected ``MODEL``: a model that does not exist, a launcher that cannot run on this
  architecture, and the model plug-in's own rules (a global batch that does not divide across
  the slice's devices, a generation the model has no device count for). The plug-in declares
  them (builder/config/model_registry.py ``problems``); ``train`` refuses the same with the same key.
  ``plan``, ``render`` and ``submit`` refuse them for create, update and auto
  (:func:`refuse_unbuildable`), before a slice the model cannot use is billed;
* a MIG_SETUP_SCRIPT / MIG_SEED_DATA_PREP_SCRIPT that does not exist: a pipeline that runs it
  (a create or update that boots the hosts or seeds the disk) refuses it; a destroy runs neither,
  so ``plan``, ``render``, ``submit`` and ``dispatch`` with destroy do not resolve the paths
  (``submit`` packs the destroy's variables without them: ``builder.inputs.tfvars.all_for``), and on its
  own ``load`` only warns (seed-era files name the seed repository's scripts).

Pure: reads the model plug-ins and the script paths, calls no cloud.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from builder.config.calendar import create_refusal
from builder.config.legacy import node_refusal, refuse_node
from builder.config.model_registry import change_problems, problems
from builder.config.scripts import repo_script
from builder.facts.actions import APPLYING, Action
from builder.facts.errors import ConfigError, ConfigErrors

if TYPE_CHECKING:  # pragma: no cover
    from builder.config.settings import Settings

_SCRIPTS = (("MIG_SETUP_SCRIPT", "mig_setup_script"), ("MIG_SEED_DATA_PREP_SCRIPT", "mig_seed_data_prep_script"))


def model_refusals(settings: Settings) -> list[ConfigError]:
    """The selected MODEL's refusals (builder/config/model_registry.py ``problems``), one line each."""
    return [ConfigError(what, fix, path=settings.source, line=settings.line_of(key), key=key)
            for key, what, fix in problems(settings)]


def change_refusals(applied: Settings, settings: Settings) -> list[ConfigError]:
    """What the selected MODEL refuses about updating the applied values ``applied`` into
    ``settings`` (builder/config/model_registry.py ``change_problems``; models/roberta: a batch shape its
    checkpoint cannot resume across), one line each at ``settings``' line. ``plan``/``render``
    (``--applied`` or the snapshot) and ``submit``'s auto refuse them for create, update and auto,
    before the slice is changed; ``validate --applied FILE`` reports them."""
    return [ConfigError(what, fix, path=settings.source, line=settings.line_of(key), key=key)
            for key, what, fix in change_problems(applied, settings)]


def refuse_changes(applied: Settings | None, settings: Settings) -> None:
    """Raise :func:`change_refusals` (a ``ConfigErrors``), if any; ``applied`` None: nothing applied."""
    found = change_refusals(applied, settings) if applied is not None else []
    if found:
        raise ConfigErrors(found, ())


def refusals(settings: Settings, *, skip: Collection[str] = (), node: bool = True) -> list[ConfigError]:
    """Everything a later command would refuse about ``settings``. ``skip``: Settings fields whose
    value did not parse (their own error is the root cause, so the rules reading them stay quiet;
    ``"model"`` skips the model's rules). ``node``: report a legacy TPU Node file (the loader
    passes False when the file has errors of its own: those come first, and a file that does not
    load is refused by every command, destroy included)."""
    found: list[ConfigError] = []
    legacy = node_refusal(settings, None) if node else None
    if legacy is not None:  # nothing on such a file builds (destroy and status excepted)
        found.append(legacy)
    if "model" not in skip:  # train still plans on a node file
        found += model_refusals(settings)
    for key, field in _SCRIPTS:
        rel = getattr(settings, field)
        if rel and field not in skip:
            try:
                repo_script(settings, key, rel)
            except ConfigError as exc:
                found.append(exc)
    return found


def refuse_unbuildable(settings: Settings, action: Action) -> None:
    """Every refusal of an action that config alone cannot decide, before any cloud call: a TPU
    Node, a create whose calendar-mode request would start less than a day ahead
    (builder/config/calendar.py), and (create, update, auto) what the selected MODEL refuses about the slice
    (builder/config/later.py), so a slice the model cannot train on is never billed."""
    refuse_node(settings, action)
    if action is Action.CREATE:  # a new calendar-mode request: its start must lie in Google's window
        too_soon = create_refusal(settings)
        if too_soon is not None:
            raise too_soon
    if action in APPLYING:
        found = model_refusals(settings)
        if found:
            raise ConfigErrors(found, ())
