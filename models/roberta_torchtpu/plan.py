"""RoBERTa on TorchTPU: what the launch computes (models/roberta_torchtpu/launcher.py's first part).

The job is models/torchtpu's (launch.py ``Job``: per-host environment, ports, pins, hosts) with
the script fixed to :data:`SCRIPT` and its arguments derived from the ``ROBERTA_*`` keys that mean
the same here as on fairseq (batch, sequence length, schedule, checkpoints, architecture, bf16);
``ROBERTA_TORCHTPU_ARGS`` appends pretrain.py's own flags. Standard library only.

* world: one process per host (torchrun ``--nproc-per-node 1``; the TorchTPU runtime of that
  process drives every chip of its host), so a process's micro-batch is
  ``ROBERTA_BATCH_PER_DEVICE x chips per host`` and the update frequency is
  ``ROBERTA_TOTAL_BATCH / (that x hosts)``: the global batch is fixed whatever the slice;
* data: the fairseq path's data-bin, ``<MOUNT_POINT>/nfs_share/data-bin/<env>/roberta``
  (models/roberta/prepare_data.py's output, prepared from ROBERTA_DATA_SOURCE on the shared disk);
* checkpoints: ``<MOUNT_POINT>/nfs_share/checkpoints/<env>/roberta_torchtpu`` (a format of its
  own: fairseq's checkpoints stay where they are).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..roberta import recipe
from ..torchtpu import launch

MODEL = "roberta_torchtpu"
FOLDER = f"models/{MODEL}"
SCRIPT = f"{FOLDER}/pretrain.py"
#: shipped beside the script (it imports them from its folder)
SHIP = (f"{FOLDER}/rdata.py", f"{FOLDER}/rmodel.py")
LaunchError = launch.LaunchError
#: the ROBERTA_* keys pretrain.py takes, as its flags (option field -> flag)
FLAGS = (("roberta_arch", "--arch"), ("roberta_total_batch", "--total-batch"),
         ("roberta_batch_per_device", "--batch-per-device"), ("roberta_seq_len", "--seq-len"),
         ("roberta_max_updates", "--max-updates"), ("roberta_lr", "--lr"),
         ("roberta_warmup_updates", "--warmup-updates"), ("roberta_lr_scheduler", "--lr-scheduler"),
         ("roberta_save_interval_updates", "--save-interval-updates"),
         ("roberta_keep_checkpoints", "--keep-checkpoints"), ("roberta_resume", "--resume"))


@dataclasses.dataclass(frozen=True)
class Job(launch.Job):
    """models/torchtpu's Job, its script and arguments this model's."""

    @classmethod
    def from_settings(cls, s: Any) -> Job:
        base = launch.Job.from_settings(s)
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        job = cls(**{**fields, "script": SCRIPT, "ship": SHIP, "model": MODEL})
        return cls(**{**fields, "script": SCRIPT, "ship": SHIP, "model": MODEL, "args": tuple(arguments(job))})

    def opt(self, name: str) -> Any:
        return self.options[f"roberta_{name}"]


#: the fairseq path's data-bin (models/roberta/recipe.py ``data_bin``): the same prepared data
data_bin = recipe.data_bin


def save_dir(job: Job) -> str:
    return f"{recipe.nfs(job)}/checkpoints/{job.env}/{MODEL}"


def checkpoint_path(job: Job) -> str:
    return f"{save_dir(job)}/checkpoint_last.pt"


def update_freq(job: Job) -> int:
    """Micro-steps per update (0: the batch does not divide; :func:`problems` says so)."""
    step = job.opt("batch_per_device") * job.chips
    return job.opt("total_batch") // step if job.opt("total_batch") % step == 0 else 0


def arguments(job: Job) -> list[str]:
    """pretrain.py's arguments on every host."""
    words = ["--data", data_bin(job), "--save-dir", save_dir(job),
             "--devices-per-process", str(job.chips_per_host)]
    for name, flag in FLAGS:
        words += [flag, str(job.options[name])]
    if job.options["roberta_bf16"]:
        words.append("--bf16")
    return words + list(job.options.get("roberta_torchtpu_args", ()))


def problems(job: Job) -> list[LaunchError]:
    """Every setting this launch refuses, each once (keys.py ``check`` hands them to validate)."""
    found = launch.problems(job)
    if found:
        return found  # the root: a slice torch-tpu cannot use
    step = job.opt("batch_per_device") * job.chips
    if not update_freq(job):
        up = -(-job.opt("total_batch") // step) * step
        found.append(LaunchError("ROBERTA_TOTAL_BATCH", f"a global batch of {job.opt('total_batch')} sequences does "
                                 f"not divide into {job.chips} chips x {job.opt('batch_per_device')} sequences",
                                 f'set ROBERTA_TOTAL_BATCH="{up}" or a ROBERTA_BATCH_PER_DEVICE that divides it'))
    if job.opt("warmup_updates") >= job.opt("max_updates"):
        found.append(LaunchError("ROBERTA_WARMUP_UPDATES", f"{job.opt('warmup_updates')} warmup updates reach past "
                                 f"the last update ({job.opt('max_updates')})",
                                 "set ROBERTA_WARMUP_UPDATES below ROBERTA_MAX_UPDATES"))
    return found


def resume_problems(before: Job, after: Job) -> list[LaunchError]:
    """An update whose training cannot resume at the next sequence: a checkpoint's position counts
    sequences of ``ROBERTA_SEQ_LEN`` tokens (rdata.py). Batch sizes and the slice may change."""
    if after.opt("resume") != "exact" or before.env != after.env or before.opt("seq_len") == after.opt("seq_len"):
        return []
    return [LaunchError("ROBERTA_SEQ_LEN", f"ROBERTA_SEQ_LEN changes from {before.opt('seq_len')} to "
                        f"{after.opt('seq_len')}, but the checkpoint's data position counts sequences of "
                        f"{before.opt('seq_len')} tokens", f'keep ROBERTA_SEQ_LEN="{before.opt("seq_len")}" or set '
                        'ROBERTA_RESUME="reset-data" for this update (the weights resume, the data order restarts)')]


def resize_note(before: Job, after: Job) -> str:
    if before.hosts == after.hosts or after.opt("resume") != "exact" or update_freq(after) == 0:
        return ""
    return (f"RoBERTa (TorchTPU) resumes at the next sequence after its last checkpoint on {after.hosts} host(s) "
            f"instead of {before.hosts}: the global batch stays {after.opt('total_batch')} sequences "
            f"({update_freq(after)} micro-steps per update)")
