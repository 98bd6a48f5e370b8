"""RoBERTa's launch rules that need the topology: does the global batch divide across the slice's
devices (``--update-freq``), does the launcher know the generation's device count, can training
resume exactly across an update. ``tpubuild validate``, ``plan`` and ``render`` run them
(models/roberta/keys.py ``check``) on :class:`Facts`, read from tpubuild's Settings without the
launch's :class:`~models.roberta.recipe.Job` (a dataclass: ``dataclasses`` imports ``inspect``, about
a tenth of ``validate``'s start-up; docs/startup.md); ``train`` runs the same functions on the
Job, which has the same attributes. Standard library only.
"""

from __future__ import annotations

from typing import Any

from ..launch_error import LaunchError

MODEL = "roberta"


class Facts:
    """What the rules read of a launch, taken from tpubuild's Settings (``Job.from_settings``
    copies these same five and adds what the launch needs)."""

    __slots__ = ("env", "generation", "chips", "devices_per_chip", "options")

    def __init__(self, env: str, generation: str, chips: int, devices_per_chip: int, options: dict[str, Any]) -> None:
        self.env = env
        self.generation = generation
        self.chips = chips
        self.devices_per_chip = devices_per_chip
        self.options = options

    @classmethod
    def from_settings(cls, s: Any) -> Facts:
        t = s.topology
        return cls(env=s.env_name, generation=t.generation, chips=t.chips,
                   devices_per_chip=t.record.xla_devices_per_chip or 0, options=dict(s.model_options))

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def opt(self, name: str) -> Any:
        return self.options[f"roberta_{name}"]


def world_size(job: Facts) -> int:
    """XLA devices in the slice: the number of processes fairseq trains with."""
    if job.devices_per_chip <= 0:
        raise LaunchError("TPU_ACCELERATOR_TYPE", f"the roberta launcher has no proven PyTorch/XLA device count for "
                          f"{job.generation} (its generation record has none)",
                          'use a v5p or v6e slice for MODEL="roberta", or set MODEL="" and start your own script '
                          "with `tpubuild run -- ...`")
    return job.chips * job.devices_per_chip


def problems(job: Facts) -> list[LaunchError]:
    """Every setting this launch refuses, each once: the model's own rules. ``tpubuild validate``
    reports them all (models/roberta/keys.py ``check``); :func:`plan_train` raises the first.
    A generation without a device count is the root: the batch cannot be checked without one."""
    found: list[LaunchError] = []
    try:
        world = world_size(job)
        update_freq(job.opt("total_batch"), world, job.opt("batch_per_device"))
    except LaunchError as exc:
        found.append(exc)
    if job.opt("warmup_updates") >= job.opt("max_updates"):
        found.append(warmup_error(job))
    return found


def resume_problems(before: Facts, after: Facts) -> list[LaunchError]:
    """What changing the applied ``before`` into ``after`` would make training unable to resume
    exactly (models/roberta/resume.py): the checkpoint's position counts batches of
    ``ROBERTA_BATCH_PER_DEVICE`` sequences of ``ROBERTA_SEQ_LEN`` tokens, taken after a whole
    number of updates of ``ROBERTA_TOTAL_BATCH / ROBERTA_BATCH_PER_DEVICE`` batches, which the new
    world size must split. A size change the batch rules accept (:func:`problems`) always does;
    ``ROBERTA_RESUME="reset-data"`` restarts the data order instead. Another environment, or a
    slice the model cannot use (its own root cause, :func:`problems`), has nothing to add."""
    if after.opt("resume") != "exact" or before.env != after.env:
        return []
    fix = ('or set ROBERTA_RESUME="reset-data" for this update (fairseq --reset-dataloader: the model and optimizer '
           "resume, the data order restarts)")
    found = [LaunchError(key, f"{key} changes from {before.opt(name)} to {after.opt(name)}, but training resumes from "
                         f"the applied run's checkpoint, whose position counts batches of {before.opt('batch_per_device')} "
                         f"sequences of {before.opt('seq_len')} tokens", f'keep {key}="{before.opt(name)}" {fix}')
             for name, key in (("batch_per_device", "ROBERTA_BATCH_PER_DEVICE"), ("seq_len", "ROBERTA_SEQ_LEN"))
             if before.opt(name) != after.opt(name)]
    if found:
        return found
    try:
        world = world_size(after)
    except LaunchError:
        return []
    batches = before.opt("total_batch") // before.opt("batch_per_device")
    if batches % world:
        found.append(LaunchError(
            "ROBERTA_TOTAL_BATCH", f"ROBERTA_TOTAL_BATCH changes from {before.opt('total_batch')} to "
            f"{after.opt('total_batch')}: the applied run's checkpoint stands after whole updates of {batches} batches, "
            f"which do not split across {world} devices", f'keep ROBERTA_TOTAL_BATCH="{before.opt("total_batch")}" on a slice '
            f"whose device count divides {batches} {fix}"))
    return found


def resize_note(before: Facts, after: Facts) -> str | None:
    """What ``plan`` says about the training when an update changes the world size (None: it
    does not, or the change is refused): how the saved position is translated (resume.py)."""
    if before.env != after.env or after.opt("resume") != "exact" or resume_problems(before, after):
        return None
    try:
        sizes = [(world_size(j), update_freq(j.opt("total_batch"), world_size(j), j.opt("batch_per_device")))
                 for j in (before, after)]
    except LaunchError:
        return None
    (old, freq_then), (new, freq_now) = sizes
    if old == new:
        return None
    return (f"{MODEL}: training resumes at the next sequence: each host translates checkpoint_last.pt's position "
            f"from world size {old} to {new} (--update-freq {freq_then} → {freq_now}, global batch "
            f"{after.opt('total_batch')} sequences; models/{MODEL}/resume.py): none skipped, none repeated")


def warmup_error(job: Facts) -> LaunchError:
    return LaunchError("ROBERTA_WARMUP_UPDATES", f"{job.opt('warmup_updates')} warmup updates is not below "
                       f"ROBERTA_MAX_UPDATES={job.opt('max_updates')}",
                       "lower ROBERTA_WARMUP_UPDATES or raise ROBERTA_MAX_UPDATES")


def update_freq(total_batch: int, world: int, per_device: int) -> int:
    """Gradient-accumulation steps so that ``world × per_device × update_freq == total_batch``."""
    step = world * per_device
    if total_batch % step == 0:
        return total_batch // step
    fits = [b for b in range(per_device, 0, -1) if total_batch % (world * b) == 0]
    if step > total_batch:
        what = (f"one step of the pod already holds {world} devices × {per_device} = {step} sequences, "
                f"more than ROBERTA_TOTAL_BATCH={total_batch}")
    else:
        what = (f"ROBERTA_TOTAL_BATCH={total_batch} is not a multiple of {world} devices × "
                f"{per_device} sequences = {step}")
    fixes = []
    if fits:
        fixes.append(f'set ROBERTA_BATCH_PER_DEVICE="{fits[0]}"')
    up = -(-total_batch // step) * step
    fixes.append(f'set ROBERTA_TOTAL_BATCH="{up}"')
    raise LaunchError("ROBERTA_TOTAL_BATCH", what, " or ".join(fixes))
