"""``tpubuild run --runtime MODEL SCRIPT [ARGS]``: a one-off of a model that runs a script (its
keys.py declares ``RUNTIME``, the option fields of the script and its arguments; models/torchtpu:
any PyTorch script under torchrun on every host with TorchTPU). The launch is the model's own
``plan_train`` with the script and arguments in place of values.env's, so it is the same launch
``tpubuild train MODEL`` runs (``--dry-run`` prints its per-host blocks the same way).

Decisions: the script is a file under the folder of values.env (where ``TORCHTPU_SCRIPT`` paths
are relative to), named from the current folder as ``tpubuild run`` names files; it is shipped to
``~/.tpubuild/run/<its path>`` on every host. A runtime launch is every host's (a slice trains
as one): ``--hosts``, ``--ship`` and ``--no-ship`` are refused with it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from builder.commands import load_settings, placed
from builder.config import model_registry
from builder.facts.errors import BadInput
from builder.facts.records import replace

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


def runtime_settings(args: argparse.Namespace, words: list[str]) -> tuple[Settings, str]:
    """values.env's settings with ``args.runtime``'s model selected and ``words`` (SCRIPT ARGS) in
    its RUNTIME fields, and the script as named; ``tpubuild run`` (builder/commands/train.py) then
    launches them as ``tpubuild train`` would."""
    model = args.runtime
    if args.hosts != "all" or args.ship or args.no_ship:
        raise BadInput(f"--runtime {model}: the launch runs on every host and ships its script itself; "
                       "leave out --hosts, --ship and --no-ship")
    settings = placed(load_settings(args))  # where the slice was granted
    known = model_registry.available(settings.repo_root)
    if model not in known:
        raise BadInput(f"--runtime {model}: not a model; the known models are {', '.join(known)} (folders under "
                       "models/ with a launcher.py)")
    fields = model_registry.declared(settings.repo_root, model, "RUNTIME")
    if not fields:
        raise BadInput(f"--runtime {model}: the {model} model runs no script of yours (its keys.py declares no "
                       "RUNTIME); use 'tpubuild train' for it, or run your command without --runtime")
    script, rest = words[0], words[1:]
    path = Path(script).resolve()
    rel = os.path.relpath(path, settings.repo_root.resolve())
    if not path.is_file() or rel.startswith(".."):
        raise BadInput(f"--runtime {model}: {script} is not a file under {settings.repo_root} (the folder of "
                       f"values.env); name a script there, e.g. tpubuild run --runtime {model} train.py --steps 10")
    script_field, args_field = fields
    options = {**settings.model_options, script_field: Path(rel).as_posix(), args_field: tuple(rest)}
    return replace(settings, model=model, model_options=options), script
