"""The environment's TTL (``ENV_TTL_HOURS``): what the Cloud Scheduler job asks Cloud Build to run.

Decision (docs/cloud.md, "TTL"): a TTL counts from the TPU's creation. When it expires, a Cloud
Scheduler job (``modules/ttl``, called by the TPU module so it lives and dies with the TPU) calls
``POST https://cloudbuild.googleapis.com/v1/projects/<project>/builds`` with :func:`build_request`:
the same dispatch step as the root ``cloudbuild.yaml``, with ``_BUILD_ACTION=destroy`` and the
scope of the architecture (``builder.catalogue.modules.ttl_scope``: the module whose Terraform calls
modules/ttl), from the source tarball ``submit`` keeps at
``gs://<state_bucket>/<SOURCE>``. vm: ``_TPU=true`` (modules/tpu_vm, which holds the job); mig:
``_MIG=true`` (modules/tpu_mig: the slice's VMs, template and workload policy, which holds the
job; the hosts' account and firewall in modules/tpu_mig_access stay, as after any
``destroy _MIG``; docs/pipeline.md's table). So only the TPU is destroyed (its guard, lock and
finalize as any build); Filestore, the shared PD and the buckets are never in scope. ``tpubuild ttl extend 4h`` moves the job's schedule;
``tpubuild plan`` shows when it will fire, ``tpubuild status`` when it fires.

Pure: the request is a dict in the REST (camelCase) form, checked by the tests against the real
``google.cloud.devtools.cloudbuild_v1.types.Build``.
"""

from __future__ import annotations

import datetime
import re
import shlex
from typing import TYPE_CHECKING, Any

from builder.catalogue.modules import ttl_scope
from builder.catalogue.step_kinds import MAX_BUILD_TIMEOUT
from builder.config import calendar
from builder.facts.errors import BadInput
from builder.inputs import build_limits
from builder.inputs.root_build import DISPATCH_IMAGE

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

#: Where ``submit`` keeps the source tarball the TTL's build runs from (in the state bucket).
SOURCE_OBJECT = "workspace/{env}/ttl/source.tgz"
#: The TTL's build: the dispatch itself, which then waits for the destroy pipeline (up to
#: step_kinds.MAX_PIPELINE_TIMEOUT): it outlives it (timeouts nest, docs/pipeline.md).
TIMEOUT_S = MAX_BUILD_TIMEOUT


def source_object(env_name: str) -> str:
    return SOURCE_OBJECT.format(env=env_name)


def job_name(settings: Settings) -> str:
    return f"projects/{settings.project_id}/locations/{settings.region}/jobs/tpubuild-{settings.env_name}-ttl"


def build_request(settings: Settings) -> dict[str, Any]:
    """The Build the TTL job creates: dispatch destroy, scoped to the module that holds the job."""
    scope = [w for m, on in ttl_scope(settings.arch).items() for w in (f"--{m}", "true" if on else "false")]
    dispatch = shlex.join(["tpubuild", "dispatch", "--action", "destroy", *scope,
                           "--allow-data-loss", "false", "--allow-wipe", "false"])
    script = "\n".join(["set -euo pipefail", "python -m pip install -q --no-cache-dir .", dispatch, ""])
    return build_limits.check({
        "source": {"storageSource": {"bucket": settings.state_bucket, "object": source_object(settings.env_name)}},
        "steps": [{
            "id": "ttl-dispatch",
            "name": DISPATCH_IMAGE,
            "entrypoint": "bash",
            "env": ["TPUBUILD_DISPATCH_BUILD=$BUILD_ID", "PIP_DISABLE_PIP_VERSION_CHECK=1",
                    "PIP_ROOT_USER_ACTION=ignore"],
            "args": ["-c", script],
        }],
        "timeout": f"{TIMEOUT_S}s",
        # modules/ttl adds serviceAccount (the pipelines' own account), which needs an explicit logging option
        "options": {"logging": "CLOUD_LOGGING_ONLY"},
        "tags": ["tpubuild", f"tpubuild-{settings.env_name}", "tpubuild-ttl"],
    }, f"the TTL's build of {settings.env_name}")


_DURATION = re.compile(r"^(\d{1,4})(h|d)$")


def parse_extension(text: str) -> datetime.timedelta:
    """``4h`` or ``2d`` → a timedelta; anything else is bad input."""
    m = _DURATION.fullmatch(text.strip().lower())
    if not m or int(m.group(1)) == 0:
        raise BadInput(f"ttl extend: {text!r} is not a duration; write hours or days like 4h or 2d")
    n = int(m.group(1))
    return datetime.timedelta(hours=n) if m.group(2) == "h" else datetime.timedelta(days=n)


def cron_for(when: datetime.datetime) -> str:
    """The Cloud Scheduler cron (UTC) that fires at ``when`` (minute precision), as modules/ttl
    writes it with formatdate("m H D M *")."""
    when = when.astimezone(datetime.timezone.utc)
    return f"{when.minute} {when.hour} {when.day} {when.month} *"


def next_fire(cron: str, now: datetime.datetime) -> datetime.datetime:
    """When a ``m H D M *`` cron fires next after ``now`` (UTC)."""
    parts = cron.split()
    if len(parts) != 5 or parts[4] != "*" or not all(p.isdigit() for p in parts[:4]):
        raise ValueError(f"{cron!r} is not a TTL schedule (m H D M *)")
    minute, hour, day, month = map(int, parts[:4])
    now = now.astimezone(datetime.timezone.utc)
    for year in (now.year, now.year + 1):
        try:
            when = datetime.datetime(year, month, day, hour, minute, tzinfo=datetime.timezone.utc)
        except ValueError:
            continue
        if when > now:
            return when
    raise ValueError(f"{cron!r} never fires")


def expires_text(settings: Settings) -> str:
    """What ``tpubuild plan`` says about the TTL."""
    hours = settings.env_ttl_hours
    if not hours:
        return "no TTL (ENV_TTL_HOURS unset): the TPU runs until you destroy it"
    return (f"the TPU is destroyed {hours} h after it is created (Cloud Scheduler job "
            f"tpubuild-{settings.env_name}-ttl; Filestore, the disk and the buckets stay); "
            "`tpubuild ttl extend 4h` pushes it back, `tpubuild status` shows when it fires")


def plan_info(settings: Settings, *, applies_tpu: bool, now: datetime.datetime | None = None) -> dict[str, Any]:
    """What ``tpubuild plan`` says about the TTL: when it fires if this plan creates the TPU now
    (a TPU that already exists keeps its job, and ``tpubuild status`` reads when that fires)."""
    hours = settings.env_ttl_hours
    now = (now or calendar.now()).astimezone(datetime.timezone.utc)  # the one clock (TPUBUILD_NOW pins it)
    info: dict[str, Any] = {"hours": hours, "job": job_name(settings), "fires_if_created_now": None}
    text = expires_text(settings)
    if applies_tpu:
        fires = now.replace(second=0, microsecond=0) + datetime.timedelta(hours=hours)
        info["fires_if_created_now"] = fires.strftime("%Y-%m-%dT%H:%MZ")
        text += f"; a TPU created now is destroyed at about {info['fires_if_created_now']}"
    info["text"] = text
    return info
