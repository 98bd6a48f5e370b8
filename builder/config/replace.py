"""TPU_REPLACE: how an update that replaces the TPU goes (docs/pipeline.md, "Make-before-break").

The rule, decided here once and read by every view through ``Settings.replace``:

* ``make-before-break`` is the default wherever tpubuild can do it: the TPU API path
  (``TPU_ARCH="vm"``) with a slice Terraform owns (not ``TPU_QUEUED``), and the Compute Engine path
  (``TPU_ARCH="mig"``) but for calendar mode. A change that replaces the slice (vm: accelerator type,
  runtime, provisioning, network, ...; mig: anything of the workload policy or the instance
  template, which would recreate every VM) first creates the new slice under the environment's
  other slice name (``tpu-<env>`` <-> ``tpu-<env>-b``: a second TPU VM, or a second MIG with its own
  workload policy and template), waits until it is READY (every VM of the group running), moves
  the training, and only then deletes the old one. Google never guarantees capacity for a shape
  the project does not run yet; deleting first can leave nothing running. Both slices are billed
  meanwhile (``tpubuild plan`` says how long and what it costs).
* ``break-before-make`` only when the user asks for it (one slice billed at a time, e.g. a TPU
  quota that cannot hold both slices), and where make-before-break is not possible: a queued
  slice (``TPU_QUEUED``: the tpu-queue step deletes and requests it again) and calendar mode on mig
  (``TPU_PROVISIONING="calendar"``: the VMs run only on the one reservation its request delivers,
  sized for one slice, so a second slice would have nowhere to run; the update drains the MIG,
  then resizes it). Asking for make-before-break there is refused, one line, rather than silently
  not honoured.

The TPU quota check (``check-capacity``) counts both slices under make-before-break.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from builder.config.model_registry import declared

MAKE_BEFORE_BREAK = "make-before-break"
BREAK_BEFORE_MAKE = "break-before-make"

Fail = Callable[[str, str, str], None]


def supported(arch: str, queued: bool, provisioning: str = "") -> str:
    """'' where make-before-break is implemented, else why not (the end of a sentence)."""
    if arch == "node":
        return "does not apply to the legacy TPU Node (it can only be destroyed)"
    if arch == "mig" and provisioning == "calendar":
        return ('is not possible with TPU_PROVISIONING="calendar" (the VMs run only on the one reservation its '
                "request delivers, sized for one slice: an update drains the MIG, then resizes it)")
    if queued:
        return "is not implemented for a queued slice (TPU_QUEUED: tpu-queue deletes it and requests it again)"
    return ""


def resolve(v: dict[str, Any], fail: Fail) -> None:
    """Set ``v["replace"]`` to the mode the slice is replaced with, or fail on TPU_REPLACE's line."""
    declared = v["replace"]
    why_not = supported(v["arch"], v["queued"], v.get("provisioning", ""))
    if declared == MAKE_BEFORE_BREAK and why_not:
        fail("TPU_REPLACE", f"make-before-break {why_not}",
             f'remove TPU_REPLACE or set TPU_REPLACE="{BREAK_BEFORE_MAKE}"')
    v["replace"] = declared or (BREAK_BEFORE_MAKE if why_not else MAKE_BEFORE_BREAK)


def slot_names(settings: Any) -> tuple[str, ...]:
    """The names the slice may have: on vm the two slots of modules/tpu_vm, on mig the two groups
    of modules/tpu_mig (``tpu-<env>`` and ``tpu-<env>-b``: make-before-break alternates them),
    elsewhere ``tpu-<env>`` alone."""
    name = settings.tpu_name
    return (name, f"{name}-b") if settings.arch in ("vm", "mig") else (name,)


def group_filter(settings: Any) -> str:
    """mig: the ``--filter`` of ``gcloud compute instance-groups managed list`` that lists the
    slice's groups, whichever of :func:`slot_names` exist (each name regex-escaped, the whole name
    anchored: ``tpu-<env>-bx`` is not a slot). The one spelling every view uses (the host scripts'
    preamble, the health check, the pipeline)."""
    return f'name~"^({"|".join(re.escape(n) for n in slot_names(settings))})$"'


def slice_words(settings: Any) -> str:
    """How a message names the slice: ``tpu-<env>``, or on vm and mig, where a swap may have moved
    it, ``tpu-<env> or tpu-<env>-b (whichever exists)``; the host scripts find the one that exists
    (models/hosts.py) and say which."""
    names = slot_names(settings)
    return names[0] if len(names) == 1 else f"{' or '.join(names)} (whichever exists)"


def makes_before_breaking(s: Any) -> bool:
    """TPU_REPLACE=make-before-break: a replacing change creates the new
    slice beside the old one (<module>-apply: tpu on vm, mig on mig), checks it (-swap), then deletes
    the old one (-release); with a MODEL, :func:`moves_training`. A change that replaces nothing finds
    nothing to swap or release."""
    return s.replace == MAKE_BEFORE_BREAK


def moves_training(s: Any) -> bool:
    """Make-before-break with a MODEL that can be moved: the build moves the training too:
    tpu-prepare prints the model's probe, stop and launch scripts (before anything is made),
    tpu-checkpoint stops the training on the old slice at its next checkpoint, tpu-resume starts it
    on the new one once the old is deleted. A model that declares ``HANDOVER = False`` (its launcher
    has no ``plan_probe``: models/torchtpu runs the user's own script, whose checkpoints tpubuild
    cannot see) is not moved: the new slice is still made and checked before the old one goes, and
    the plan says that the training on the old one stops there (:func:`unmoved_model`)."""
    return makes_before_breaking(s) and bool(s.model) and not unmoved_model(s)


def unmoved_model(s: Any) -> str:
    """The MODEL that make-before-break cannot move to the new slice (its keys.py declares
    ``HANDOVER = False``, builder/config/model_registry.py), or ''."""
    if not s.model:
        return ""
    return "" if declared(s.repo_root, s.model, "HANDOVER") else s.model
