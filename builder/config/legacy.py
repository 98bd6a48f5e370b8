"""TPU Node (the ``node`` architecture) is read-only legacy.

Google Cloud stopped creating TPU Nodes ("2VM TPU") on 2025-04-25: a create is answered "Your
request to provision TPU Node has been denied. Please migrate to TPU VM Architecture", and the
google provider deprecated ``google_tpu_node`` in 6.33 and removed it in 7.0. So every action that
would *apply* a node (``create``, ``update``, and ``auto``, which ends in one of them) is refused
here, before any cloud call, with exit 2 and one line that names the values.env line that makes
the file a node file and the fix, ``tpubuild migrate``. ``destroy``, ``status``, ``initialize``
and ``render --action destroy`` keep working, so people can clean up. ``validate`` says the same
in advance: it exits 2 on a node file with that one line (builder/config/later.py), since the
file can no longer build anything; the line says destroy and status still work.

Pure: no I/O. Called by ``builder.planning.request.parse``, the one way in of ``tpubuild plan``, ``render``,
``submit`` and ``dispatch``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.config import model_registry
from builder.facts.actions import APPLYING, Action
from builder.facts.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from builder.config.settings import Settings

NODE_END_OF_LIFE = "2025-04-25"

#: The seed repository's own scripts that belong to no model, which this product replaces. A
#: model's are declared by its package (its keys.py ``SEED_SCRIPTS``); ``SEED_SCRIPTS`` of this
#: module is the whole record (:func:`seed_scripts`).
_OWN_SEED_SCRIPTS: dict[str, str] = {
    "env_setup/scripts/setup_mig.sh": "the seed's MIG setup (env_setup/scripts/startup.sh does it now)",
}


def seed_scripts() -> dict[str, str]:
    """Every seed-era script path (path → what it was): this module's own and every shipped
    model's ``SEED_SCRIPTS`` (builder/config/model_registry.py :func:`seed_scripts`), whatever MODEL the
    file selects, a model the registry knows or none: a seed-era file is recognised by its paths
    alone (validate names them, migrate clears them, destroy resolves neither)."""
    return {**_OWN_SEED_SCRIPTS, **model_registry.seed_scripts()}


def __getattr__(name: str) -> dict[str, str]:
    """``SEED_SCRIPTS``: the whole record, :func:`seed_scripts` (read when first used, so importing
    this module loads no model's keys.py)."""
    if name == "SEED_SCRIPTS":
        return seed_scripts()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def node_reason(settings: Settings) -> tuple[str, str]:
    """(key, what) of the line that makes this a node file."""
    if settings.line_of("TPU_ARCH"):
        return "TPU_ARCH", 'TPU_ARCH="node" asks for a TPU Node'
    key = "TPU_PYTORCH_VERSION" if settings.line_of("TPU_PYTORCH_VERSION") else "TPU_RUNTIME_VERSION"
    return key, f"{settings.runtime_version} is a TPU Node runtime, so this file describes a TPU Node"


def node_refusal(settings: Settings, action: Action | None) -> ConfigError | None:
    """The one-line refusal when ``action`` would apply a TPU Node (None: when the file is a node
    file at all, worded for ``tpubuild validate``: what plan and create will do with it)."""
    if settings.arch != "node" or (action is not None and action not in APPLYING):
        return None
    key, what = node_reason(settings)
    seed = any(p in seed_scripts() for p in (settings.mig_setup_script, settings.mig_seed_data_prep_script))
    era = "this seed-era file" if seed else "this file"
    refused = "plan, render and submit refuse create, update and auto" if action is None else f"{action} is refused"
    return ConfigError(
        f"{what}; Google Cloud stopped creating TPU Nodes on {NODE_END_OF_LIFE}, so {refused} "
        f"(destroy and status still work for an existing node)",
        f"run tpubuild migrate to turn {era} into its TPU VM equivalent (a .bak copy is kept)",
        path=settings.source, line=settings.line_of(key), key=key,
    )


def refuse_node(settings: Settings, action: Action) -> None:
    """Raise the one-line refusal when ``action`` would apply a TPU Node."""
    refusal = node_refusal(settings, action)
    if refusal is not None:
        raise refusal
