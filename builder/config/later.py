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
  (builder/config/gate.py), before a slice the model cannot use is billed;
* a MIG_SETUP_SCRIPT / MIG_SEED_DATA_PREP_SCRIPT that does not exist: a pipeline that runs it
  (a create or update that boots the hosts or seeds the disk) refuses it; a destroy runs neither,
  so ``plan``, ``render``, ``submit`` and ``dispatch`` with destroy do not resolve the paths
  (``submit`` packs the destroy's variables without them: ``builder.inputs.tfvars.all_for``), and on its
  own ``load`` only warns (seed-era files name the seed repository's scripts).

Which door refuses which of them, for which actions, is builder/config/gate.py (the gate's rows
call the functions here). Pure: reads the model plug-ins and the script paths, calls no cloud.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from builder.config.model_registry import change_problems, problems
from builder.config.scripts import repo_script
from builder.facts.errors import ConfigError

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
    before the slice is changed; ``validate --applied FILE`` reports them (the gate's ``model-change``
    row, builder/config/gate.py)."""
    return [ConfigError(what, fix, path=settings.source, line=settings.line_of(key), key=key)
            for key, what, fix in change_problems(applied, settings)]


def script_refusals(settings: Settings, keys: Collection[str] | None = None) -> list[ConfigError]:
    """MIG_SETUP_SCRIPT / MIG_SEED_DATA_PREP_SCRIPT that are not files of the repository, one line
    each: the gate's ``scripts`` row (every build door, for create, update and auto), and, with
    ``keys`` (those of the two the plan runs), the renderer's preflight
    (builder/render/pipeline.py ``preflight``: a plan rendered outside a door checks only the
    scripts its steps use)."""
    found: list[ConfigError] = []
    for key, field in _SCRIPTS:
        rel = getattr(settings, field)
        if rel and (keys is None or key in keys):
            try:
                repo_script(settings, key, rel)
            except ConfigError as exc:
                found.append(exc)
    return found
