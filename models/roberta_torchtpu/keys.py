"""values.env keys of the roberta_torchtpu model and its plug-in declaration, registered in
builder/config/model_registry.py. Runs only inside tpubuild (it imports builder.config).

``MODEL="roberta_torchtpu"`` pretrains RoBERTa on TorchTPU (torch 2.13, torch-tpu) instead of
fairseq on torch_xla: the ``ROBERTA_*`` keys that mean the same thing (batch, sequence length,
schedule, checkpoints, architecture, bf16, resume) are read from the roberta model's keys
(models/roberta/keys.py), so one values.env switches runtime with one line; the launch is
models/torchtpu's (per-host environment, install, logs). docs/models.md compares the two paths.
"""

from __future__ import annotations

from typing import Any

from builder.config.keys import KeySpec

from ..torchtpu.facts import PROFILER_PORT, STEP_WORD  # noqa: F401  (the declaration: torchtpu's)
from ..roberta.keys import checkpoint_gb  # noqa: F401  (the declaration: one checkpoint_last.pt, as fairseq's)
from ..torchtpu.keys import script_args

#: The plug-in declaration (builder/config/model_registry.py ``DECLARED``): the launch copies
#: models/torchtpu (train.sh, tpu_observe.py) to ~/.tpubuild/torchtpu; pretrain.py serves the profiler.
CODE_DIR = ".tpubuild/torchtpu"
PROFILER = "tpu_observe.py"
STEP_LABEL = "RoBERTa on TorchTPU updates"
#: What models/torchtpu/train.sh copies to the bucket after each save: the folder pretrain.py
#: publishes checkpoint_last.pt in ($TPUBUILD_CHECKPOINT_DIR; docs/recovery.md), one
#: checkpoint_last.pt of the size RoBERTa's keys model (12 bytes a parameter).
CHECKPOINT_FILES = ("checkpoint",)  # the dashboard variable allows letters, digits, spaces and _ . : / -


def check(settings: Any) -> list[tuple[str, str, str]]:
    """The model's own rules on a loaded Settings: ``(key, what, fix)`` each."""
    from .plan import Job, problems

    return [(e.key, e.what, e.fix) for e in problems(Job.from_settings(settings)) if e.key != "TPU_ARCH"]


def check_change(applied: Any, settings: Any) -> list[tuple[str, str, str]]:
    from .plan import Job, resume_problems

    return [(e.key, e.what, e.fix) for e in resume_problems(Job.from_settings(applied), Job.from_settings(settings))]


def change_notes(applied: Any, settings: Any) -> list[str]:
    from .plan import Job, resize_note

    note = resize_note(Job.from_settings(applied), Job.from_settings(settings))
    return [note] if note else []


KEYS: tuple[KeySpec, ...] = (
    KeySpec("ROBERTA_TORCHTPU_ARGS", "roberta_torchtpu_args", (), script_args,
            "MODEL=\"roberta_torchtpu\": extra flags of models/roberta_torchtpu/pretrain.py, split like a "
            "shell line (e.g. '--seed 2'); the ROBERTA_* keys set the rest."),
)
