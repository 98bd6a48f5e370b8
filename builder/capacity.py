"""The capacity check: does the project's quota hold the slice, before anything billed is made?

Pure: what to read (:func:`need`: the quota ID of the slice's generation and provisioning model,
from its record in builder/data/tpu_offers.json, and how many chips or TensorCores the slice
takes, from its topology) and what the value read means (:func:`refusal`: one line naming the
quota and what to do, or None). ``builder/cloud/quotas.py`` reads the value; ``tpubuild
check-capacity`` (the pipeline's first step) and ``tpubuild plan --check`` run both.
docs/pipeline.md, "The capacity check", says which API and why.
"""

from __future__ import annotations

from builder.records import record
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

#: The TPU_ARCH whose TPU is counted against the Cloud TPU API's quotas (mig's slices use
#: Compute Engine's, node creates nothing any more).
CHECKED_ARCH = "vm"


@record
class Need:
    """The quota ``quota_id`` of ``service`` must allow ``amount`` ``counts`` in ``zone``."""

    service: str
    quota_id: str
    amount: int
    counts: str
    project: str
    zone: str
    region: str
    accelerator_type: str
    provisioning: str


def need(settings: Settings) -> Need | str:
    """What the slice of ``settings`` needs of which quota, or why tpubuild checks none (a line)."""
    s = settings
    topo = s.topology
    if s.arch != CHECKED_ARCH:
        return (f"TPU_ARCH={s.arch}: tpubuild checks the Cloud TPU API's quota (TPU_ARCH=vm) only; "
                "a refusal shows at the slice's apply")
    quota = topo.record.quota
    quota_id = quota.ids.get(s.provisioning, "") if quota is not None else ""
    if not quota_id:
        return (f"no {s.provisioning} quota of {topo.generation} is known to tpubuild "
                "(builder/data/tpu_offers.json); a refusal shows at the TPU's apply")
    amount = topo.chips if quota.counts == "chips" else topo.cores
    return Need(quota.service, quota_id, amount, quota.counts, s.project_id, s.zone, s.region, topo.accelerator_type,
                s.provisioning)


def beside(settings: Settings, running: Settings | None) -> Need | str:
    """:func:`need` under make-before-break (TPU_REPLACE, builder/config/replace.py): while the new
    slice is created beside the running one (``running``: the applied values, None: unknown or
    none), the quota must hold both when both count against it. A change that keeps the slice
    (none of the variables that replace it differ) needs what :func:`need` says."""
    from builder.records import replace

    from builder import tfvars
    from builder.config.replace import MAKE_BEFORE_BREAK
    from builder.modules import accelerator_module, spec

    new = need(settings)
    if (isinstance(new, str) or running is None or settings.replace != MAKE_BEFORE_BREAK
            or running.arch != settings.arch):
        return new
    module = accelerator_module(settings.arch)
    forcing = spec(settings.arch, module).replaced_by  # type: ignore[union-attr]
    before, after = tfvars.for_module(running, module), tfvars.for_module(settings, module)
    old = need(running)
    if all(before.get(v) == after.get(v) for v in forcing) or isinstance(old, str) or old.quota_id != new.quota_id:
        return new
    return replace(new, amount=new.amount + old.amount,
                   accelerator_type=f"{new.accelerator_type} beside the running {old.accelerator_type} "
                                    "(make-before-break: both until the old one is deleted)")


def refusal(n: Need, value: int | None) -> str | None:
    """None when quota ``value`` (None: Cloud Quotas has no value for the zone) holds the slice,
    else the one line that fails the build."""
    if value is None:
        return (f"quota {n.quota_id} ({n.service}) has no value for {n.zone} in project {n.project}: "
                f"{n.accelerator_type} ({n.provisioning}) cannot be created there; request {n.amount} {n.counts} "
                f"at https://console.cloud.google.com/iam-admin/quotas?project={n.project} or choose another zone")
    if value >= n.amount:
        return None
    return (f"quota {n.quota_id} ({n.service}) allows {value} {n.counts} in {n.zone}, {n.accelerator_type} "
            f"({n.provisioning}) needs {n.amount}: request an increase to {n.amount} at "
            f"https://console.cloud.google.com/iam-admin/quotas?project={n.project}, or choose a smaller slice")


def passed(n: Need, value: int) -> str:
    """The line a passing check prints."""
    return (f"quota {n.quota_id} ({n.service}) allows {value} {n.counts} in {n.zone}; {n.accelerator_type} "
            f"({n.provisioning}) needs {n.amount}")
