"""The model packages (``models/<name>/``): the registry, where they are found, how tpubuild
loads them, and what it expects of them (:class:`Launcher`).

Adding a model = its own folder (:data:`MODELS` lists the source tree's folders with a ``keys.py``
and a ``launcher.py``); builder/ names no model (tests/unit/test_model_plugin.py enforces it):

* ``models/<name>/keys.py``: ``KEYS``, a tuple of :class:`builder.config.keys.KeySpec` (names
  ``<NAME>_*``, fields ``<name>_*``); ``builder.config`` parses them into ``Settings.model_options``;
  and, optionally, ``check(settings)``: the model's own rules on a loaded Settings (does the batch
  divide across the slice's devices, does the launcher know the generation), each a
  ``(key, what, fix)``. ``tpubuild validate`` reports them (:func:`problems`), ``plan``/``render``/
  ``submit`` refuse them for create/update/auto, and the launcher refuses the same when it plans
  ``train``, so they must be the launcher's own rules, not a copy; and ``warnings(settings)``:
  ``file:line: text`` lines ``validate`` prints about a file the model cannot train with as it
  stands (no data on the hosts) that is still a valid environment; and ``check_change(applied,
  settings)``: the model's rules on an update from the applied values (a change its training
  cannot resume across), each a ``(key, what, fix)`` (:func:`change_problems`); and
  ``change_notes(applied, settings)``: what ``plan`` notes about the training on that update
  (how a resize's training resumes);
* in that keys.py, the model's declaration (:data:`DECLARED`; module constants, each optional):
  ``CODE_DIR``, where its launch copies its folder on every host (``tpubuild profile`` runs its
  helper there); ``PROFILER``, the capture helper in CODE_DIR (``capture --port P --duration-ms MS
  --logdir DIR``; None: ``tpubuild profile`` refuses) and ``PROFILER_PORT``, its server's port on
  the hosts (None: builder/render/observe.py ``PROFILER_PORT``); ``STEP_WORD``, the word of the log lines the dashboard's step-rate metric counts, and
  ``STEP_LABEL``, how the metric's description names those lines (None: the step word);
  ``DATA_KEYS``, its keys that may hold a gs:// folder (their bucket names are checked);
  ``SEED_SCRIPTS``, the seed repository's own scripts of that model (path → what it was), which
  tpubuild replaces; ``CHECKPOINT_FILES``, what its train.sh copies to the bucket after each save
  (models/checkpoint_sync.sh; docs/recovery.md, "Checkpoints in the bucket"), with the optional
  ``checkpoint_gb(settings)``, the size it models for one copy (:func:`checkpoint`, priced by ``plan``);
  ``RUNTIME``, the option fields of a script and its arguments, which
  ``tpubuild run --runtime <name> SCRIPT ARGS`` sets (builder/commands/runtime.py); ``HANDOVER``, whether
  make-before-break moves its training at a checkpoint (False where its launcher has no ``plan_probe``:
  the build then makes the new slice first but does not move the training, builder/config/replace.py);
  ``METRICS``, whether its hosts write torch_xla's metrics report (``tpubuild train --metrics``; False: refused). Which generations and architectures it supports is its ``check``;
* ``models/<name>/launcher.py``: the :class:`Launcher` that ``tpubuild train/stop/logs`` call;
* its host scripts. The host transport (gcloud ssh/scp, IAP, the ready check, detach, stop) is the
  shared ``models/hosts.py``: a launcher imports it as ``from .. import hosts``.

``models/`` is not a package of the install (the launchers are standard library only, so they
also run where tpubuild is not installed). tpubuild imports each ``models`` folder it finds as a
package of its own name (``tpubuild_models_<n>``), so a model's files import each other relatively
(``from . import recipe``, ``from .. import hosts``); from a checkout, ``import models.roberta.launcher``
works the same way (``models`` is a namespace package there).

The folders are looked up first beside values.env (``<folder>/models``, a repository of the
user's own), then in the source tree tpubuild runs from (an editable install, or the /workspace of
a Cloud Build step). A model of the user's own folder (a keys.py and a launcher.py) is registered like a shipped
one (:func:`registered`): its keys, checks and declaration are read the same way.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from builder.facts.source_models import DEFAULT_MODEL, SOURCE_MODELS  # noqa: F401

if TYPE_CHECKING:  # pragma: no cover
    from builder.config.keys import KeySpec

LAUNCHER = "launcher.py"
KEYS = "keys.py"
#: The registry: the model packages of the source tree (folders with a keys.py and a launcher.py).
MODELS: tuple[str, ...] = tuple(sorted(d.name for d in SOURCE_MODELS.iterdir()
                                       if (d / KEYS).is_file() and (d / LAUNCHER).is_file()))
#: The step word of a training that selects no model (``tpubuild run``'s own scripts print it too).
STEP_WORD = "tpubuild-step"
#: What a model's keys.py may declare besides its keys, and the value when it does not.
DECLARED: dict[str, Any] = {"CODE_DIR": "", "PROFILER": None, "PROFILER_PORT": None, "STEP_WORD": STEP_WORD,
                            "STEP_LABEL": None,
                            "DATA_KEYS": (), "SEED_SCRIPTS": {}, "RUNTIME": (), "HANDOVER": True,
                            "METRICS": True, "CHECKPOINT_FILES": ()}
#: The optional functions of models/<name>/keys.py: the model's own rules, and its advice.
CHECK = "check"
CHECK_CHANGE = "check_change"
CHANGE_NOTES = "change_notes"
WARNINGS = "warnings"
CHECKPOINT_GB = "checkpoint_gb"
HOSTS = "hosts.py"


class Launcher(Protocol):
    """What ``tpubuild train/stop/logs`` call on ``models/<name>/launcher.py`` (a module).

    ``Job.from_settings(settings)`` copies what the launch needs out of the Settings (a frozen
    dataclass; a ``listing`` field means the launcher supports ``TPU_ARCH="mig"``: tpubuild fills
    it with the slice's list-instances argv; on vm a ``slots`` field is filled with the names the
    slice may have, ``tpu-<env>`` and ``tpu-<env>-b``, which make-before-break alternates: pass it
    to ``hosts.for_arch`` so the launch reaches the live one; on mig with ``slots`` and ``groups``
    (the argv that lists which exist) as well. A launcher without them reaches ``tpu-<env>`` only). ``LaunchError(key, what, fix)`` is a setting that
    cannot launch (``key`` a values.env key, or a ``--flag``). The ``plan_*`` functions return
    steps (``models/hosts.py`` ``Step``) that :meth:`render` turns into one bash script.

    Optional: ``plan_probe(job, models_root)``, steps that print one ``tpubuild-probe RUNNING
    MTIME`` line (``models/hosts.py`` ``probe_line``: whether the model trains, and when its
    checkpoint was last written) for ``tpubuild stop --probe``: a make-before-break build
    (TPU_REPLACE) waits on it for the next checkpoint before it stops the training on the old
    slice and resumes it on the new one (builder/templates/tpu_checkpoint.sh.j2). A launcher
    without it declares ``HANDOVER = False`` in its keys.py: its training is not moved (no
    tpu-prepare, tpu-checkpoint or tpu-resume step; the plan says the training on the old slice
    stops at tpu-release).
    """

    Job: Any
    LaunchError: type[Exception]

    def plan_train(self, job: Any, models_root: str) -> list[Any]: ...

    def plan_stop(self, job: Any, models_root: str) -> list[Any]: ...

    def plan_logs(self, job: Any, host: int, *, follow: bool, lines: int = 200) -> list[Any]: ...

    def render(self, steps: list[Any]) -> str: ...

    def header(self, job: Any, model: str) -> str: ...

    def log_dir(self, job: Any) -> str: ...


#: The members every launcher must have (:func:`missing` checks them).
LAUNCHER_MEMBERS: tuple[str, ...] = ("Job", "LaunchError", "plan_train", "plan_stop", "plan_logs", "render",
                                     "header", "log_dir")


def missing(launcher: ModuleType) -> list[str]:
    """The :class:`Launcher` members ``launcher`` lacks (empty: it plugs in)."""
    return [name for name in LAUNCHER_MEMBERS if not hasattr(launcher, name)]


def roots(folder: Path | None = None) -> list[Path]:
    """The models/ folders, in lookup order: ``<folder>/models`` (folder = values.env's), then
    the source tree's."""
    candidates = ([folder / "models"] if folder is not None else []) + [SOURCE_MODELS]
    unique: list[Path] = []
    for r in candidates:
        if r.is_dir() and r.resolve() not in [u.resolve() for u in unique]:
            unique.append(r)
    return unique


_PACKAGES: dict[Path, str] = {}


def package(root: Path) -> str:
    """The import name of the models/ folder ``root`` (made a package on first use)."""
    root = root.resolve()
    if root not in _PACKAGES:
        name = "tpubuild_models" if root == SOURCE_MODELS.resolve() else f"tpubuild_models_{len(_PACKAGES)}"
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        # the source tree's models/ after the user's: a model of their own imports the shipped hosts.py
        spec.submodule_search_locations = list(dict.fromkeys([str(root), str(SOURCE_MODELS.resolve())]))
        sys.modules[name] = importlib.util.module_from_spec(spec)
        _PACKAGES[root] = name
    return _PACKAGES[root]


def load(root: Path, dotted: str) -> ModuleType:
    """``models/<dotted>`` of the folder ``root``, e.g. ``load(root, "roberta.launcher")``."""
    return importlib.import_module(f"{package(root)}.{dotted}")


def find(folder: Path | None, model: str, filename: str) -> Path | None:
    """The first models/ folder that has ``<model>/<filename>`` (model "" : ``<filename>``)."""
    for root in roots(folder):
        if (root / model / filename).is_file() and (not model or model.isidentifier()):
            return root
    return None


def registered(folder: Path | None) -> tuple[str, ...]:
    """The models of values.env in ``folder``: :data:`MODELS` and those of ``<folder>/models``
    (folders with a keys.py and a launcher.py), each once."""
    theirs = {d.name for r in roots(folder) if r.resolve() != SOURCE_MODELS.resolve() for d in r.iterdir()
              if (d / KEYS).is_file() and (d / LAUNCHER).is_file() and d.name.isidentifier()}
    return tuple(sorted(set(MODELS) | theirs))


@lru_cache(maxsize=None)
def _keys(folder: Path | None) -> tuple[KeySpec, ...]:
    found: list[KeySpec] = []
    for model in registered(folder):
        root = find(folder, model, KEYS)
        if root is not None:
            found.extend(load(root, f"{model}.keys").KEYS)
    return tuple(found)


def model_keys(folder: Path | None = None) -> tuple[KeySpec, ...]:
    """Every registered model's keys (for values.env in ``folder``; None: the source tree's)."""
    return _keys(folder.resolve() if folder is not None else None)


def available(folder: Path | None) -> list[str]:
    return sorted({d.name for root in roots(folder) for d in root.iterdir() if (d / LAUNCHER).is_file()})


def hosts(folder: Path | None = None) -> ModuleType:
    """``models/hosts.py``, the one host transport (None when no models/ folder has it)."""
    root = find(folder, "", HOSTS)
    return load(root, "hosts") if root is not None else None  # type: ignore[return-value]


def problems(settings: Any) -> list[tuple[str, str, str]]:
    """``(key, what, fix)`` for each thing ``tpubuild train MODEL`` (MODEL = values.env's) would
    refuse about ``settings``: a model no ``models/`` folder has (one line, listing the known
    ones), a launcher that does not run on this architecture, and the model's own ``check``.
    MODEL="" selects no model: nothing to check (``tpubuild run`` needs none)."""
    model, folder = settings.model, settings.repo_root
    if not model:
        return []
    known = available(folder)
    root = find(folder, model, LAUNCHER)
    if root is None:
        import difflib  # only on a typo

        guess = difflib.get_close_matches(model, known, n=1, cutoff=0.6)
        hint = f'did you mean MODEL="{guess[0]}"? ' if guess else ""
        return [("MODEL", f"{model!r} is not a model: the known models are {', '.join(known) or 'none'} "
                 f"(folders under models/ with a {LAUNCHER})",
                 f'{hint}set MODEL to one of them, or MODEL="" to run your own script with `tpubuild run`')]
    default = "" if settings.line_of("MODEL") else f' (MODEL is "{model}" by default; MODEL="" selects none)'
    lacks = launcher_problems(root, model, settings.arch)
    if lacks:
        key, what, fix = lacks
        return [(key, what, fix + default)]
    check = _hook(settings, CHECK)
    return [(key, what, fix + default) for key, what, fix in (check(settings) if check is not None else ())]


def launcher_problems(root: Path, model: str, arch: str) -> tuple[str, str, str] | None:
    """Why the launcher ``root/model/launcher.py`` cannot run ``train`` on ``arch`` (it lacks a
    :class:`Launcher` member, or its ``Job`` has no ``listing`` field and ``arch`` is mig), or None.

    A launcher of the source tree is not imported here: tests/unit/test_model_registry.py
    (``test_shipped_launchers_plug_in_on_every_arch``) proves every shipped one passes on every
    architecture, and importing one (its host transport, its recipe's dataclasses) costs
    ``validate``, ``plan`` and ``render`` a fifth of their start-up (benchmarks/cli_startup.py). A
    launcher of the user's own models/ folder is imported and checked; ``train`` checks the same
    (builder/commands/train.py)."""
    if root.resolve() == SOURCE_MODELS.resolve():
        return None
    return launcher_fit(load(root, f"{model}.launcher"), root / model / LAUNCHER, model, arch)


def launcher_fit(launcher: ModuleType, path: Path, model: str, arch: str) -> tuple[str, str, str] | None:
    """:func:`launcher_problems` of an imported ``launcher``."""
    lacks = missing(launcher)
    if lacks:
        return ("MODEL", f"{path} is not a tpubuild launcher: it lacks {', '.join(lacks)}",
                "add them (the Launcher protocol in builder/config/model_registry.py)")
    import dataclasses

    if arch == "mig" and "listing" not in {f.name for f in dataclasses.fields(launcher.Job)}:
        return ("TPU_ARCH", f'the {model} launcher does not support TPU_ARCH="mig"',
                'use TPU_ARCH="vm", or MODEL="" and start your script with `tpubuild run`')
    return None


def change_problems(applied: Any, settings: Any) -> list[tuple[str, str, str]]:
    """``(key, what, fix)`` for each thing the selected MODEL refuses about updating the applied
    values ``applied`` into ``settings`` (its keys.py ``check_change``). Nothing when either side
    selects no model or another one, or the model's own rules already refuse ``settings``
    (:func:`problems` is the root cause then)."""
    if not settings.model or applied.model != settings.model or problems(settings):
        return []
    check = _hook(settings, CHECK_CHANGE)
    return list(check(applied, settings)) if check is not None else []


def change_notes(applied: Any, settings: Any) -> list[str]:
    """The selected MODEL's notes on updating ``applied`` into ``settings`` (its keys.py
    ``change_notes``); none where :func:`change_problems` would have nothing to check."""
    if not settings.model or applied.model != settings.model or problems(settings):
        return []
    notes = _hook(settings, CHANGE_NOTES)
    return list(notes(applied, settings)) if notes is not None else []


def _hook(settings: Any, name: str) -> Any:
    """The function ``name`` of the selected MODEL's keys.py, or None."""
    model, folder = settings.model, settings.repo_root
    keys_root = find(folder, model, KEYS) if model else None
    return getattr(load(keys_root, f"{model}.keys"), name, None) if keys_root is not None else None


def advice(settings: Any) -> list[str]:
    """The selected MODEL's warnings about ``settings`` (its keys.py ``warnings``)."""
    warn = _hook(settings, WARNINGS)
    return list(warn(settings)) if warn is not None else []


def checkpoint(settings: Any) -> tuple[tuple[str, ...], float | None]:
    """What the selected MODEL copies to the bucket after each save (its ``CHECKPOINT_FILES``;
    empty: it does not opt in) and the GB of one copy its ``checkpoint_gb`` models (None: unknown)."""
    files = tuple(declared(settings.repo_root, settings.model, "CHECKPOINT_FILES")) if settings.model else ()
    size = _hook(settings, CHECKPOINT_GB) if files else None
    return files, (float(size(settings)) if size is not None else None)


def declared(folder: Path | None, model: str, name: str) -> Any:
    """What ``model`` declares as ``name`` in its keys.py (:data:`DECLARED`: its default when the
    model does not, or no models/ folder has it)."""
    root = find(folder, model, KEYS) if model else None
    default = DECLARED[name]
    return getattr(load(root, f"{model}.keys"), name, default) if root is not None else default


def declared_by_all(folder: Path | None, name: str) -> dict[str, Any]:
    """``{model: its declaration of name}`` for every registered model."""
    return {model: declared(folder, model, name) for model in registered(folder)}


@lru_cache(maxsize=None)
def seed_scripts() -> dict[str, str]:
    """The seed repository's model scripts that tpubuild replaces (each model's ``SEED_SCRIPTS``)."""
    return {path: what for scripts in declared_by_all(None, "SEED_SCRIPTS").values()
            for path, what in scripts.items()}
