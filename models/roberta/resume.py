"""Exact resume across world sizes: fairseq's saved position, translated to this run's world size.

fairseq saves the training position in ``checkpoint_last.pt`` as
``extra_state["train_iterator"]``: the epoch and ``iterations_in_epoch``, the batches *one
device* took in that epoch. Those batches are its shard of the epoch, so the number means
something only at the world size it was saved at. After a resize (v3-32 → v3-128, or a shrink)
upstream fairseq reads it as if the world size had not changed and skips or repeats samples.

Why a translation is exact (docs/models.md, "Exact resume across sizes", has the proof):

* ``EpochBatchIterator`` forms the epoch's batches globally, independent of the world size:
  the dataset's order (``--seed``, the epoch), cut into batches of ``--batch-size`` sequences
  (``batch_by_size``), shuffled with ``seed + epoch``: the global list ``B_0 .. B_{N-1}``.
  Only then does ``ShardedIterator`` give device ``k`` of ``W`` the batches ``B_k, B_{k+W}, ...``.
* With ``--update-freq F``, update ``u`` (0-based in the epoch) takes the device's batches
  ``uF .. uF+F-1``, so across the ``W`` devices the global batches ``uFW .. (u+1)FW - 1``. The
  launcher keeps ``F·W = ROBERTA_TOTAL_BATCH / ROBERTA_BATCH_PER_DEVICE = K`` fixed at every size,
  so update ``u`` trains the same ``K`` batches, the same sequences, at every world size; after
  ``i`` batches per device the first ``i·W`` global batches, a prefix, are trained.
* Translating ``i`` to ``i' = i·W / W'`` therefore starts the new run exactly at global batch
  ``i·W``: none skipped, none repeated. A checkpoint is written after a whole update, so
  ``i·W = U·K`` and ``W'`` divides it whenever the batch rules accept ``W'`` (``K = F'·W'``).
* The epoch's end does not depend on ``W`` either: with ``--skip-remainder-batch`` a device takes
  ``ceil(N/W) - 1`` batches, grouped by ``F``: ``floor(floor((N-1)/W)/F) = floor((N-1)/K)`` updates,
  the same number at every size (the rest of the epoch is left out the same way at every size).

What this file changes in fairseq (:func:`install`, in every process ``pjrt_compat.py`` runs,
PJRT or not): ``EpochBatchIterator.state_dict`` also records the world size and the epoch's
batch count; ``load_state_dict`` translates the position to this run's world size and refuses
(:class:`ResumeError`, one line) what cannot resume exactly: another batch count (the batch size,
the sequence length or the data changed), a position that does not split across the new devices,
``--grouped-shuffling`` across sizes (its shuffle depends on the world size). A checkpoint written
before this file records no world size: it is read from the checkpoint's own ``cfg``.
Each host logs one line: ``resumes at update N, sample S of epoch E, translated from world size
A to B``. The launcher's ``--dry-run`` says the same (models/roberta/launcher.py ``header``).

Standard library only, but for :func:`install`, which imports fairseq.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The logger the resume line goes to (``logging`` is imported when a checkpoint is loaded, not
#: when the launcher is: ``tpubuild train`` loads the launcher and never logs through it).
LOGGER = "tpubuild.resume"
#: What the launcher's --dry-run and each host's log say about the resume (one wording).
SAYS = "resumes at update {updates}, sample {sample} of epoch {epoch}, translated from world size {old} to {new}"


class ResumeError(RuntimeError):
    """A saved position this run cannot continue from exactly."""


@dataclass(frozen=True)
class Position:
    """Where an epoch stands: ``iterations`` batches per device of ``world`` devices."""

    epoch: int
    iterations: int
    world: int

    @property
    def global_batches(self) -> int:
        """The epoch's batches trained across the pod: its global order's prefix ``B_0 ..``."""
        return self.iterations * self.world


def translate(saved: Position, world: int) -> Position:
    """``saved`` at ``world`` devices: the same global batches trained, each device's share."""
    if world < 1:
        raise ResumeError(f"world size {world} is not a number of devices")
    done = saved.global_batches
    if done % world:
        raise ResumeError(
            f"the checkpoint stands at {saved.iterations} batches per device x {saved.world} devices = {done} "
            f"batches of epoch {saved.epoch}, which do not split across {world} devices; resume at world size "
            f"{saved.world}, or at one whose ROBERTA_TOTAL_BATCH / ROBERTA_BATCH_PER_DEVICE is a multiple of it")
    return Position(saved.epoch, done // world, world)


def says(saved: Position, now: Position, *, updates: Any, batch_size: int) -> str:
    """The host's log line (and the shape of the --dry-run's): see :data:`SAYS`."""
    return SAYS.format(updates=updates, sample=now.global_batches * batch_size, epoch=now.epoch,
                       old=saved.world, new=now.world)


def translated_state(state: dict[str, Any], *, world: int, batches: int, batch_size: int,
                     grouped: bool = False) -> tuple[dict[str, Any], str]:
    """fairseq's ``train_iterator`` state for an iterator of ``world`` shards over an epoch of
    ``batches`` batches of ``batch_size`` sequences: the state to load and the line to log."""
    saved_world = int(state.get("world_size") or world)
    saved_batches = state.get("batches")
    if saved_batches is not None and int(saved_batches) != batches:
        raise ResumeError(
            f"the checkpoint's epochs had {saved_batches} batches and this run forms {batches}: the batch size "
            "(ROBERTA_BATCH_PER_DEVICE), the sequence length (ROBERTA_SEQ_LEN) or the data changed since it was "
            "saved; set them back, or set ROBERTA_RESUME=\"reset-data\" (the data order restarts), or start a new run "
            "(move checkpoint_last.pt out of --save-dir)")
    if grouped and saved_world != world:
        raise ResumeError(f"--grouped-shuffling shuffles groups of world-size batches: a checkpoint of world size "
                          f"{saved_world} cannot resume at {world}; drop --grouped-shuffling or keep the size")
    saved = Position(int(state["epoch"]), int(state.get("iterations_in_epoch", 0)), saved_world)
    now = translate(saved, world)
    out = {**state, "iterations_in_epoch": now.iterations, "world_size": world}
    return out, says(saved, now, updates=state.get("updates", "?"), batch_size=batch_size)


# ---------------------------------------------------------------- fairseq

def _epoch_shape(itr: Any) -> tuple[int, int]:
    """(batches in an epoch, the largest batch's sequences) of an ``EpochBatchIterator``."""
    batches = itr.frozen_batches
    return len(batches), max((len(b) for b in batches[:1]), default=0)


def install() -> bool:
    """Patch fairseq's epoch iterator (and its checkpoint reader) as the module docstring says;
    idempotent. False where fairseq is not importable."""
    try:
        from fairseq import checkpoint_utils
        from fairseq.data import iterators
    except ImportError:
        return False
    cls = iterators.EpochBatchIterator
    if getattr(cls.load_state_dict, "_tpubuild_resume", False):
        return True
    state_dict, load_state_dict = cls.state_dict, cls.load_state_dict

    def saving(self: Any) -> dict[str, Any]:
        state = state_dict(self)
        state.update(world_size=self.num_shards, batches=_epoch_shape(self)[0])
        return state

    def loading(self: Any, state: dict[str, Any]) -> Any:
        batches, batch_size = _epoch_shape(self)
        translated, line = translated_state(state, world=self.num_shards, batches=batches, batch_size=batch_size,
                                            grouped=bool(getattr(self, "grouped_shuffling", False)))
        if self.shard_id == 0:
            import logging

            logging.getLogger(LOGGER).info("tpubuild: %s (iterations_in_epoch %s -> %s)", line,
                                           state.get("iterations_in_epoch", 0), translated["iterations_in_epoch"])
        return load_state_dict(self, translated)

    loading._tpubuild_resume = True  # type: ignore[attr-defined]
    cls.state_dict, cls.load_state_dict = saving, loading
    read = checkpoint_utils.load_checkpoint_to_cpu

    def load_checkpoint_to_cpu(*args: Any, **kwargs: Any) -> Any:
        """Upstream's, noting in the train iterator's state what the log line and a checkpoint
        written without this file need: the update count, and the world size it was saved at."""
        state = read(*args, **kwargs)
        itr = (state.get("extra_state") or {}).get("train_iterator")
        if isinstance(itr, dict):
            history = state.get("optimizer_history") or [{}]
            itr.setdefault("updates", history[-1].get("num_updates", "?"))
            cfg = state.get("cfg")
            if "world_size" not in itr and cfg is not None:
                itr["world_size"] = int(cfg["distributed_training"]["distributed_world_size"])
        return state

    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu
    return True
