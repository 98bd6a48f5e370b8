"""What GitOps ``auto`` refuses from the applied values: a key that moves the whole environment.

``auto`` updates an environment in place; it never relocates one. A changed project, name, zone or
region, network or architecture (:data:`MOVING_KEYS`) would need a destroy and a create, which
auto does not decide on its own. :func:`move_refusal` is the gate's ``auto-move`` row
(builder/config/gate.py): ``validate --applied``, ``plan``/``render --action auto``, ``plan --all``,
``submit`` and ``dispatch`` refuse it with this one line, and ``builder.planning.auto.decide`` raises
the same. The new values are first placed where the applied slice is (builder/config/candidates.py
``settle``): a ZONE list that still holds the granted place and keeps its first zone moves nothing;
one that puts another zone first moves the environment, which ``update`` does (make-before-break)
and auto refuses with a line that says so.

Pure: reads the key table and the model plug-ins' keys, calls no cloud.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder.config.candidates import settle, split
from builder.config.keys import KEYS
from builder.config.model_registry import model_keys
from builder.facts.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from builder.config.settings import Settings

#: Changing one of these moves the environment; auto refuses.
MOVING_KEYS: tuple[str, ...] = ("PROJECT_ID", "ENV_BUILD_NAME", "ZONE", "REGION", "NETWORK", "SUBNETWORK", "TPU_ARCH")


def value_of(settings: Settings, key: str) -> Any:
    """``key``'s parsed value in ``settings`` (a model key: the selected model's option)."""
    if key == "TPU_RUNTIME_VERSION":
        return settings.runtime_version
    models = model_keys(settings.repo_root)
    spec = next(k for k in (*KEYS, *models) if k.name == key)
    if key in {k.name for k in models}:
        return settings.model_options.get(spec.field)
    return getattr(settings, spec.field)


def changed_keys(old: Settings, new: Settings) -> list[str]:
    """Keys whose parsed value differs, in the order of the key table."""
    return [k.name for k in (*KEYS, *model_keys(new.repo_root)) if value_of(old, k.name) != value_of(new, k.name)]


#: The moving keys an explicit ``update`` moves the environment for, make-before-break (TPU_MOVE;
#: docs/capacity.md, "Moving an environment to another zone"): the others need destroy + create.
UPDATE_MOVES: tuple[str, ...] = ("ZONE", "REGION")


def move_refusal(applied: Settings, settings: Settings, since: str = " since the applied snapshot") -> ConfigError | None:
    """The first moving key (the root cause: a moved ZONE moves its REGION too) whose value in
    ``settings``, placed where the ``applied`` slice is (and where an update would put it: a list
    that puts another zone first moves, candidates.reordered), differs from ``applied``; None when
    none does."""
    place = applied.candidates[0] if applied.candidates else None
    first = split(str(applied.raw.get("ZONE") or applied.zone))[0]  # the applied list's first zone, as written
    current = settle(settings, place, first)
    for key in changed_keys(applied, current):
        if key in MOVING_KEYS:
            fix = ("run `tpubuild update`, which moves it make-before-break (docs/capacity.md, \"Moving an environment "
                   "to another zone\"), or put the value back" if key in UPDATE_MOVES and current.move else
                   "put the value back, or run destroy and then create")
            return ConfigError(f"changed from {value_of(applied, key)!r} to {value_of(current, key)!r}{since}",
                               f"auto does not move an environment: {fix}",
                               path=current.source, line=current.line_of(key), key=key)
    return None
