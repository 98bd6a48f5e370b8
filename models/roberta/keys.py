"""values.env keys of the roberta model (``ROBERTA_*``), registered in builder/config/model_registry.py.

Each entry is a :class:`builder.config.keys.KeySpec`; ``builder.config`` parses them into
``Settings.model_options`` under the spec's ``field``. Unlike the rest of models/roberta this file
imports tpubuild (it runs only inside tpubuild, when values.env is loaded).

The defaults are fairseq's RoBERTa-base pretraining recipe
(peak LR 5e-4, 10k warmup updates, 125k updates, 512 tokens per sample) with a global batch of
2048 sequences, which ``--update-freq`` keeps fixed whatever the pod size (see
``models/roberta/launcher.py``). The rules that need the topology (does the batch divide across
the slice's devices? does the launcher know the generation?) are the launcher's
(models/roberta/rules.py ``problems``, on :class:`Facts` read from the Settings: no dataclass, so
validate does not load ``dataclasses``); :func:`check` hands them to ``tpubuild validate``
through builder/config/model_registry.py, so validate and ``train`` refuse the same things.
"""

from __future__ import annotations

import re
from typing import Any

from builder.config.keys import KeySpec, boolean, choice, integer, named

#: The plug-in declaration (builder/config/model_registry.py ``DECLARED``).
CODE_DIR = ".tpubuild/roberta"  # where the launch copies models/roberta on every host (vm, mig)
PROFILER = "xla_observe.py"  # torch_xla's profiler client, in CODE_DIR
STEP_WORD = "train_inner"  # fairseq's progress lines (lib.sh send_train_steps)
STEP_LABEL = "fairseq train_inner"  # the step metric's description (the text every existing environment has)
DATA_KEYS = ("ROBERTA_DATA_SOURCE",)
SEED_SCRIPTS = {"roberta/env_setup/data_prep_seed_shared_disk_pd.sh":
                "the seed's shared-PD preparation (the shared_pd-seed step copies GCS_DATASET now)"}
#: What train.sh copies to the bucket after each save (models/checkpoint_sync.sh; docs/recovery.md)
CHECKPOINT_FILES = ("checkpoint_last.pt",)
#: Parameters of fairseq's RoBERTa architectures (the RoBERTa paper, Liu et al. 2019: 125M, 355M).
PARAMETERS = {"roberta_base": 125e6, "roberta_large": 355e6}
#: Bytes a fairseq checkpoint holds per parameter: the fp32 weights and Adam's two fp32 moments.
CHECKPOINT_BYTES_PER_PARAMETER = 12


def checkpoint_gb(settings: Any) -> float:
    """GB of one checkpoint_last.pt, modelled (:data:`PARAMETERS` × :data:`CHECKPOINT_BYTES_PER_PARAMETER`)."""
    arch = str(settings.model_options.get("roberta_arch") or "roberta_base")
    return PARAMETERS.get(arch, PARAMETERS["roberta_base"]) * CHECKPOINT_BYTES_PER_PARAMETER / 1e9


def positive_float(value: str) -> float:
    v = value.strip()
    try:
        n = float(v)
    except ValueError:
        raise ValueError(f"{value!r} is not a number; write it like '0.0005' or '5e-4'") from None
    if not 0 < n < 1:
        raise ValueError(f"{v} is not a learning rate between 0 and 1; write it like '0.0005'")
    return n


def data_source(value: str) -> str:
    """``gs://bucket/prefix``, an absolute path, a path relative to ``<MOUNT_POINT>/shared_pd``,
    or empty (the shared PD's root, where GCS_DATASET was copied)."""
    v = value.strip().rstrip("/")
    if v.startswith("gs://"):
        if not re.fullmatch(r"gs://[a-z0-9][a-z0-9._-]{1,221}[a-z0-9](/[^*?\[\]\s]*)?", v):
            raise ValueError(f"{value!r} is not a gs:// folder; write it like 'gs://my-bucket/wikitext' (no wildcards)")
        return v
    if v == "":
        return v
    if not re.fullmatch(r"[A-Za-z0-9_./-]+", v) or ".." in v.split("/"):
        raise ValueError(
            f"{value!r} is not a usable folder; write gs://bucket/folder, an absolute path, "
            "or a folder on the shared PD such as 'wikitext'"
        )
    return v


def file_name(value: str) -> str:
    v = value.strip()
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", v) or v in (".", ".."):
        raise ValueError(f"{value!r} is not a plain file name; write it like 'train.txt'")
    return v


def fairseq_version(value: str) -> str:
    """``auto`` (empty), a fairseq version such as ``0.12.2``, or a pip requirement such as
    ``fairseq-fixed==0.12.3.1``. Always a pinned ``==`` requirement or ``auto``."""
    v = value.strip()
    if v in ("", "auto"):
        return "auto"
    if re.fullmatch(r"\d+\.\d+\.\d+(\.\d+)?", v):
        return f"fairseq=={v}"
    if re.fullmatch(r"fairseq(-fixed)?==\d+\.\d+\.\d+(\.\d+)?", v):
        return v
    raise ValueError(f"{value!r} is not a pinned fairseq; write 'auto', '0.12.2' or 'fairseq-fixed==0.12.3.1'")


def torch_xla_version(value: str) -> str:
    v = value.strip()
    if v in ("", "auto"):
        return "auto"
    if re.fullmatch(r"2\.\d+\.\d+", v):
        return v
    raise ValueError(f"{value!r} is not a torch_xla release; write 'auto' or a version like '2.5.1'")


def extra_args(value: str) -> tuple[str, ...]:
    v = value.strip()
    try:
        import shlex

        words = tuple(shlex.split(v))
    except ValueError as exc:
        raise ValueError(f"{value!r} cannot be split into words ({exc}); close every quote") from None
    if words and not words[0].startswith("--"):
        raise ValueError(f"{value!r} must start with a fairseq flag; write it like '--dropout 0.1'")
    return words


def check(settings: Any) -> list[tuple[str, str, str]]:
    """The model's own rules on a loaded Settings: ``(key, what, fix)`` each."""
    from .rules import Facts, problems

    return [(e.key, e.what, e.fix) for e in problems(Facts.from_settings(settings))]


def check_change(applied: Any, settings: Any) -> list[tuple[str, str, str]]:
    """The model's rules on an update from the ``applied`` Settings to ``settings``: a change the
    training cannot resume across exactly (models/roberta/rules.py ``resume_problems``)."""
    from .rules import Facts, resume_problems

    before, after = Facts.from_settings(applied), Facts.from_settings(settings)
    return [(e.key, e.what, e.fix) for e in resume_problems(before, after)]


def change_notes(applied: Any, settings: Any) -> list[str]:
    """What ``plan`` notes about the training on an update from ``applied`` (rules.py ``resize_note``)."""
    from .rules import Facts, resize_note

    note = resize_note(Facts.from_settings(applied), Facts.from_settings(settings))
    return [note] if note else []


def warnings(settings: Any) -> list[str]:
    """Can ``tpubuild train roberta`` run with this file as it stands? Warnings, not errors (the
    infrastructure is still valid), that ``tpubuild validate`` prints, each ``file:line: text``.

    RoBERTa prepares its data from ``ROBERTA_DATA_SOURCE``: a gs:// folder, an absolute path, or a
    folder on the shared PD (``<MOUNT_POINT>/shared_pd/...``). The last needs the disk attached to
    every host (``SHARED_PD_DISK_ATTACH="true"``) and something on it: ``GCS_DATASET`` (copied onto
    the disk after it is created) or ``SHARED_PD_RESTORE`` (a snapshot)."""
    options, lines, path = settings.model_options, settings.lines, settings.source
    src = str(options.get("roberta_data_source") or "")
    if src.startswith(("gs://", "/")):
        return []
    where = f"{settings.mount_point.rstrip('/')}/shared_pd{'/' + src if src else ''}"

    def at(*keys: str) -> str:
        line = next((lines[k] for k in keys if k in lines), None)
        return f"{path}:{line}" if line is not None else str(path)

    if not settings.shared_pd_attach:
        return [f"{at('SHARED_PD_DISK_ATTACH', 'ROBERTA_DATA_SOURCE', 'MODEL')}: `tpubuild train` cannot run as "
                f"shipped: RoBERTa reads its data from the shared PD ({where}) but SHARED_PD_DISK_ATTACH is "
                'false; set SHARED_PD_DISK_ATTACH="true" and GCS_DATASET (copied onto the disk), or '
                'ROBERTA_DATA_SOURCE="gs://bucket/folder"']
    if not settings.gcs_dataset and not settings.shared_pd_restore:
        return [f"{at('SHARED_PD_DISK_ATTACH', 'ROBERTA_DATA_SOURCE')}: `tpubuild train` reads {where} on the "
                "shared PD, but nothing fills the disk (no GCS_DATASET, no SHARED_PD_RESTORE); set GCS_DATASET "
                "to the raw text's gs:// folder, or put the data there yourself before training"]
    return []


KEYS: tuple[KeySpec, ...] = (
    named("ROBERTA_DATA_SOURCE", "", data_source,
          "Raw text folder: gs://bucket/folder, an absolute path, or a folder on the shared PD "
          "(relative to <MOUNT_POINT>/shared_pd); empty means the shared PD's root."),
    named("ROBERTA_TRAIN_FILE", "train.txt", file_name,
          "Training text file inside ROBERTA_DATA_SOURCE (one sentence or paragraph per line, "
          "blank line between documents)."),
    named("ROBERTA_VALID_FILE", "valid.txt", file_name,
          "Validation text file inside ROBERTA_DATA_SOURCE."),
    named("ROBERTA_BPE", "gpt2", choice(("gpt2", "none")),
          "gpt2: encode with RoBERTa's GPT-2 BPE and dictionary; none: the text is already "
          "space-separated tokens (a dictionary is built from the training file)."),
    named("ROBERTA_TOTAL_BATCH", 2048, integer(1, 1 << 20, "sequences"),
          "Global batch: sequences per optimizer update across the whole pod."),
    named("ROBERTA_BATCH_PER_DEVICE", 16, integer(1, 4096, "sequences"),
          "Sequences per TPU device per forward pass (fairseq --batch-size)."),
    named("ROBERTA_SEQ_LEN", 512, integer(16, 8192, "tokens"),
          "Tokens per sample (fixed: fairseq --tokens-per-sample and --max-positions)."),
    named("ROBERTA_MAX_UPDATES", 125000, integer(1, 100_000_000, "updates"),
          "Stop after this many optimizer updates (also the polynomial decay's end)."),
    named("ROBERTA_LR", 0.0005, positive_float, "Peak learning rate."),
    named("ROBERTA_WARMUP_UPDATES", 10000, integer(0, 100_000_000, "updates"),
          "Linear warmup updates."),
    named("ROBERTA_LR_SCHEDULER", "polynomial_decay",
          choice(("polynomial_decay", "inverse_sqrt", "cosine")),
          "fairseq learning-rate scheduler."),
    named("ROBERTA_SAVE_INTERVAL_UPDATES", 2000,
          integer(1, 100_000_000, "updates"),
          "Write a checkpoint (and checkpoint_last.pt) every N updates."),
    named("ROBERTA_KEEP_CHECKPOINTS", 3, integer(1, 1000, "checkpoints"),
          "Keep the newest N interval checkpoints (checkpoint_last.pt is always kept)."),
    named("ROBERTA_RESUME", "exact", choice(("exact", "reset-data")),
          "exact: a relaunch continues at the next sequence, translated across world sizes "
          "(models/roberta/resume.py); reset-data: fairseq --reset-dataloader (model and optimizer "
          "resume, the data order restarts), to change the batch shape of a running training."),
    named("ROBERTA_ARCH", "roberta_base", choice(("roberta_base", "roberta_large")),
          "fairseq model architecture."),
    named("ROBERTA_BF16", True, boolean, "Train in bfloat16 on the TPU (XLA_USE_BF16=1)."),
    KeySpec("ROBERTA_FAIRSEQ_VERSION", "roberta_fairseq", "auto", fairseq_version,
            "fairseq pinned on the hosts: auto = fairseq==0.12.2 on Python < 3.11, "
            "fairseq-fixed==0.12.3.1 on 3.11+."),
    KeySpec("ROBERTA_TORCH_XLA_VERSION", "roberta_torch_xla", "auto", torch_xla_version,
            "vm only: torch/torch_xla release installed on the hosts; auto = the one matched to the "
            "TPU runtime (see docs/models.md). node uses the image's conda env."),
    named("ROBERTA_EXTRA_ARGS", (), extra_args,
          "Extra upstream fairseq-train flags appended as they are, e.g. '--dropout 0.1'."),
)

