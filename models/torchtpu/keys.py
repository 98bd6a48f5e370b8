"""values.env keys of the torchtpu model (``TORCHTPU_*``) and its plug-in declaration,
registered in builder/config/model_registry.py. Runs only inside tpubuild (it imports builder.config).

``MODEL="torchtpu"`` runs any PyTorch script on every host of a v4/v5e/v5p/v6e/TPU7x slice with
TorchTPU (``torch-tpu``): ``TORCHTPU_SCRIPT`` (a file of this repository, shipped to the hosts as
``tpubuild run`` ships files) with ``TORCHTPU_ARGS``. The rules that need the topology are the
launcher's (models/torchtpu/launch.py ``problems``); :func:`check` hands them to validate.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any

from builder.config.keys import KeySpec

# the declaration's facts that the launch also uses: the log word the dashboard's step rate
# counts, and the port of the profiler server on the hosts
from .facts import PROFILER_PORT, STEP_WORD  # noqa: F401  (models/torchtpu/facts.py: no dataclasses at import)

#: The plug-in declaration (builder/config/model_registry.py ``declared``).
CODE_DIR = ".tpubuild/torchtpu"  # where the launch copies models/torchtpu on every host
DATA_KEYS: tuple[str, ...] = ()  # keys that hold a gs:// folder the hosts read
RUNTIME = ("torchtpu_script", "torchtpu_args")  # what `tpubuild run --runtime torchtpu SCRIPT ARGS` sets
PROFILER = "tpu_observe.py"  # the capture helper in CODE_DIR (builder/render/observe.py runs it)
#: What train.sh copies to the bucket after each save: the script's checkpoint folder
#: ($TPUBUILD_CHECKPOINT_DIR; models/checkpoint_sync.sh, docs/recovery.md). Its size is the
#: script's: no checkpoint_gb, so the plan prices it per GB.
CHECKPOINT_FILES = ("checkpoint",)
#: make-before-break cannot move the training: it is the user's own script, whose checkpoints
#: tpubuild cannot see (the launcher has no plan_probe); docs/models.md, "TorchTPU and TPU_REPLACE"
HANDOVER = False
#: it runs on TorchTPU, not torch_xla: no metrics report for `tpubuild train --metrics` to rewrite
METRICS = False


def script_path(value: str) -> str:
    v = value.strip()
    if v == "":
        return v
    norm = posixpath.normpath(v)
    if v.startswith("/") or norm.startswith("..") or not re.fullmatch(r"[A-Za-z0-9_./-]+", v):
        raise ValueError(f"{value!r} is not a path in this repository; write it relative to values.env's folder, "
                         "like 'train.py' or 'models/torchtpu/examples/tiny_transformer.py'")
    return norm


def script_args(value: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(value.strip()))
    except ValueError as exc:
        raise ValueError(f"{value!r} cannot be split into words ({exc}); close every quote") from None


def check(settings: Any) -> list[tuple[str, str, str]]:
    """The model's own rules on a loaded Settings: ``(key, what, fix)`` each."""
    from .launch import Job, problems

    # a TPU Node file is refused once, for every model (builder/config/legacy.py node_refusal)
    found = [(e.key, e.what, e.fix) for e in problems(Job.from_settings(settings)) if e.key != "TPU_ARCH"]
    script = str(settings.model_options.get("torchtpu_script") or "")
    root = settings.repo_root
    if script and root is not None and not (root / script).is_file():
        found.append(("TORCHTPU_SCRIPT", f"{script} is not a file in {root}",
                      "write the path of your script relative to values.env's folder"))
    return found


KEYS: tuple[KeySpec, ...] = (
    KeySpec("TORCHTPU_SCRIPT", "torchtpu_script", "", script_path,
            "MODEL=\"torchtpu\": the PyTorch script every host runs under torchrun (a path relative to "
            "values.env's folder; shipped to ~/.tpubuild/run on every host)."),
    KeySpec("TORCHTPU_ARGS", "torchtpu_args", (), script_args,
            "Arguments passed to TORCHTPU_SCRIPT, split like a shell line."),
)
