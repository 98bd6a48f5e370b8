"""The parts catalogue entries (builder/modules.py) are made of: a status row, an extra
pipeline step, and the small predicates and summaries the entries name. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

__all__ = ["AFTER", "BEFORE", "BESIDE", "GATE", "INTERRUPTS", "ExtraStep", "StatusPart", "backs_up", "queued",
           "runtime", "slice_shape"]


def runtime(s: Settings) -> str:
    return f"runtime {s.runtime_version}"


def slice_shape(s: Settings) -> str:
    return f"{s.mig_shape.vms} x {s.mig_shape.machine_type}, topology {s.mig_shape.topology}, {s.provisioning}"


def _always(s: Settings) -> bool:
    return True


@dataclass(frozen=True)
class StatusPart:
    """One row of ``tpubuild status``: ``key`` names it in the report and on its line,
    builder/cloud/status.py ``READERS[key]`` reads it, ``row`` (builder/status_rows.py) formats
    what was read, ``when`` says whether the environment has it."""

    key: str
    row: Callable[[dict[str, Any]], str]
    when: Callable[[Settings], bool] = _always


#: Where an :class:`ExtraStep` goes in its module's steps.
BEFORE, GATE, AFTER, BESIDE = "before", "gate", "after", "beside"


@dataclass(frozen=True)
class ExtraStep:
    """A step of a module's pipeline beyond plan → guard → apply, id ``<module>-<kind>``
    (``kind``: a row of ``builder.pipeline.KINDS``), with the module's ``op`` (apply|destroy) when
    ``when(settings)``. ``at``: :data:`BEFORE` its plan step, :data:`GATE` between its guard and its
    apply, :data:`AFTER` its apply (what waits for the module waits for it), :data:`BESIDE` after
    its apply (only the hosts that attach the shared PD wait for it)."""

    kind: str
    op: str
    at: str
    when: Callable[[Settings], bool] = _always


#: What a replaced TPU (or TPU VM) means for the training on it; the guard says it.
INTERRUPTS = "this interrupts training; running jobs stop and must resume from their last checkpoint"


def backs_up(s: Settings) -> bool:
    """The share's tier keeps backups (builder/config/filestore.py), so destroy takes one first."""
    from builder.config.filestore import TIERS

    return TIERS[s.shared_fs_tier].backups


def queued(s: Settings) -> bool:
    return s.queued
