"""How each kind of pipeline step is rendered: the builder images (pinned, the one place each is
named), the script template and timeout per step kind (:data:`KINDS`), and the timeouts the steps
and the build share. Pure data and small helpers; ``builder.render.pipeline`` renders with them and
re-exports them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

from builder.catalogue import builder_image
from builder.catalogue.module_parts import settles_with_gcloud
from builder.catalogue.modules import spec
from builder.config.keys import duration_seconds
from builder.facts.records import record

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

#: Builder images, pinned by tag: the one place each is named (docs/terraform.md, "Terraform
#: versions", says which releases and how the tests' Terraform compares). The Terraform image has
#: no bash: its steps run under its BusyBox ``sh`` (which has ``pipefail``) and are written in
#: the POSIX subset plus pipefail. ``python``: the builder image's base; ``tpubuild``: that image
#: (:func:`image` fills it in), which ``docker`` (the CLI on Cloud Build's daemon) builds and pushes.
IMAGES: dict[str, str] = {
    "terraform": "hashicorp/terraform:1.16.4",
    "python": "python:3.11-slim",
    "gcloud": "gcr.io/google.com/cloudsdktool/google-cloud-cli:587.0.0-slim",
    "docker": "docker:28.2.2-cli",
    "tpubuild": "{region}-docker.pkg.dev/{project}/{repository}/{name}:{tag}",
}
SHELLS: dict[str, str] = {"terraform": "sh", "python": "bash", "gcloud": "bash", "docker": "sh", "tpubuild": "bash"}


def image(settings: Settings, key: str) -> str:
    """The image a step of ``IMAGES[key]`` runs in: the pinned name, or for ``tpubuild`` the
    environment's builder image (``<region>-docker.pkg.dev/<project>/tpubuild-<env>/tpubuild:<tag>``)."""
    if key != "tpubuild":
        return IMAGES[key]
    return IMAGES[key].format(region=settings.region, project=settings.project_id,
                              repository=settings.image_repository, name=builder_image.NAME,
                              tag=builder_image.tag())



@record
class Kind:
    """A kind of step, one record: the builder image, the script template (``{module}`` in its
    name: the step's plan module's own template), the step timeout in seconds (None: per step,
    see :func:`step_timeout`) and how many minutes it usually takes (builder/catalogue/durations.py; an
    apply's are its module's ``apply_minutes``). Its template's context is ``_<kind>`` of
    builder/render/pipeline.py's ``_Steps``."""

    image: str
    template: str
    timeout: int | None
    minutes: float = 1.0


#: Seconds a resize (and a drain) step may take, and the seed step.
RESIZE_STEP_S = 3600
#: mig's failover: how long mig-apply waits for each candidate's group to become whole (its
#: flex-start request fulfilled) while it shows no error, before trying the next candidate
#: (TPUBUILD_ACQUIRE_WAIT_S overrides it); its step's timeout allows ACQUIRE_TRY_S per candidate.
ACQUIRE_WAIT_S = 600
ACQUIRE_TRY_S = ACQUIRE_WAIT_S + 900
SEED_STEP_S = 14400
#: Seconds the mig-calendar step may take: it waits this less 300 for Google's decision on the request.
CALENDAR_STEP_S = 1800
#: Seconds the tpubuild-image step may take: a check when the image exists, a build and push once.
IMAGE_STEP_S = 1200
#: TPU_REPLACE=make-before-break: how long tpu-swap (mig-swap) waits for the new slice to be READY
#: (every VM of the new group running) after its apply waited for it (modules/tpu_vm's 60 minutes
#: create timeout; on mig, mig-resize's wait until the group is stable).
SWAP_WAIT_S = 900
#: TPU_REPLACE=make-before-break with a MODEL: how long tpu-checkpoint waits for the model's next
#: checkpoint on the old slice before it stops the training anyway (TPUBUILD_DRAIN_WAIT_S overrides
#: it when the step runs); how often, and how long apart, tpu-resume tries the launch on the new one
#: while its hosts finish booting.
DRAIN_WAIT_S = 1800
RESUME_TRIES = 10
RESUME_WAIT_S = 60
#: Step kind (builder.planning.plan.Step.kind) → how it is rendered, and its minutes (estimates; 1 where
#: not given). Sources: a tool step (guard, check-capacity, finalize in the builder image) is a
#: container start plus image pull (~0.5) plus the command (~0.5); tpubuild-image a docker container
#: and a manifest lookup (the image is there; building it is initialize's); terraform init (provider
#: download ~0.5) plus plan (~0.5); tpu-attach one TPU node update, mig-attach a disk and a group
#: lookup, then one attach-disk per VM in parallel; a MIG's VMs come up in resize; make-before-break:
#: tpu-swap checks the new slice (READY after its create), tpu-release plans and deletes the old TPU
#: VM (deletes take a few minutes, as creates do); with a MODEL, tpu-prepare prints the move's
#: scripts (a tool step), tpu-checkpoint waits for the model's next checkpoint on the old slice (on
#: average half its checkpoint interval; at most DRAIN_WAIT_S) and stops it, tpu-resume launches on
#: the new slice (staging, an idempotent install, the detached launch); seed: the seeder VM's start,
#: plus builder/catalogue/durations.py's SEED_PER_100GB per 100 GB of the disk; filestore-publish: a gcloud
#: container and one object written to the workspace; identity (mig's tpu-identity): terraform init
#: (~0.5) plus a plan and an apply of one resource, the hosts' service account (~0.5).
KINDS: dict[str, Kind] = {
    "image": Kind("docker", "builder_image.sh.j2", IMAGE_STEP_S, 0.5),
    "capacity": Kind("tpubuild", "capacity.sh.j2", 300),
    "restore": Kind("gcloud", "pd_restore.sh.j2", 300, 0.5),
    "snapshot": Kind("gcloud", "pd_snapshot.sh.j2", 3600, 2.0),
    "backup": Kind("gcloud", "fs_backup.sh.j2", 7200, 10.0),
    "unqueue": Kind("gcloud", "tpu_unqueue.sh.j2", 1800, 3.0),
    "identity": Kind("terraform", "tf_identity.sh.j2", 600),  # the hosts' account alone (the entry's ``identity``)
    "plan": Kind("terraform", "tf_plan.sh.j2", 1200),
    "guard": Kind("tpubuild", "guard.sh.j2", 600),
    "drain": Kind("gcloud", "mig_drain.sh.j2", RESIZE_STEP_S, 4.0),
    "apply": Kind("terraform", "tf_apply.sh.j2", None),  # the module's apply_timeout (builder.catalogue.modules)
    "calendar": Kind("gcloud", "mig_calendar.sh.j2", CALENDAR_STEP_S),
    "resize": Kind("gcloud", "mig_resize.sh.j2", RESIZE_STEP_S, 6.0),
    "queue": Kind("gcloud", "tpu_queue.sh.j2", None, 5.0),  # how long it waits for the queue, plus slack
    "attach": Kind("gcloud", "{module}_attach.sh.j2", 1200),  # tpu_attach (vm), mig_attach (mig)
    "swap": Kind("gcloud", "{module}_swap.sh.j2", SWAP_WAIT_S + 300, 0.5),  # tpu_swap (vm), mig_swap (mig)
    # the move of the training (kind "drain" is the MIG's): scripts printed in the builder image
    # (tpubuild, no gcloud), run in the gcloud image
    "prepare": Kind("tpubuild", "tpu_prepare.sh.j2", 600),
    "checkpoint": Kind("gcloud", "tpu_checkpoint.sh.j2", DRAIN_WAIT_S + 900, 10.0),
    "resume": Kind("gcloud", "tpu_resume.sh.j2", RESUME_TRIES * (RESUME_WAIT_S + 300), 3.0),
    "release": Kind("terraform", "tf_release.sh.j2", 3600, 4.0),  # a TPU VM's delete: up to 30 minutes
    "unslot": Kind("terraform", "tf_unslot.sh.j2", 1200),  # a move's storage release, planned (then guarded)
    "seed": Kind("gcloud", "pd_seed.sh.j2", SEED_STEP_S, 2.0),
    "publish": Kind("gcloud", "fs_publish.sh.j2", 300, 0.5),  # the NFS export, for hosts made before Filestore
    "finalize": Kind("tpubuild", "finalize.sh.j2", 600),
}
def verdict_wait_s(gates: tuple[str, ...]) -> int:
    """How long a slice's apply that runs beside its gates (builder.planning.plan.asks_first) waits
    for the last one's verdict on a plan that changes what exists: the guard starts only after the
    builder image's step (tpubuild-image), and each gate may take its step's timeout."""
    return IMAGE_STEP_S + sum(KINDS[g].timeout or 0 for g in gates)


#: TPU_QUEUED: how long tpu-queue waits for ACTIVE without TPU_QUEUED_VALID_FOR, and at most (the
#: pipeline lasts at most MAX_PIPELINE_TIMEOUT, and the steps before and after the queue's fit
#: beside it: tests/unit/test_build_limits.py); its step timeout adds QUEUE_SLACK_S to the wait.
QUEUE_WAIT_S = 4 * 3600
MAX_QUEUE_WAIT_S = 18 * 3600
QUEUE_SLACK_S = 900
#: The Cloud Build states of a build that has ended: a lock it holds protects nothing
#: (builder/cloud/lock.py takes it over; the health check's build recovers under it).
BUILD_ENDED = frozenset({"SUCCESS", "FAILURE", "INTERNAL_ERROR", "TIMEOUT", "CANCELLED", "EXPIRED"})
#: Slack added to the longest path through the steps for the whole build's timeout.
BUILD_TIMEOUT_SLACK = 900
MAX_BUILD_TIMEOUT = 86400  # Cloud Build's maximum build timeout (24 h)
#: Timeouts nest: a build that waits for another outlives it (docs/pipeline.md, "Timeouts nest").
#: The parents of a pipeline: the root build, the TTL's build and the health build, each running
#: ``tpubuild dispatch`` (a pip install, the checks, the lock, the submission, then the wait):
#: DISPATCH_AROUND_S is what a dispatch does besides the wait; HEALTH_AROUND_S the health build's
#: own steps around its recreate (the check, then the relaunch's tries: recovery.LAUNCH_TRIES ×
#: LAUNCH_WAIT_S, 30 min, and the SSH each takes). So a pipeline may take at most
#: MAX_PIPELINE_TIMEOUT, and every parent at most Cloud Build's 24 h.
DISPATCH_AROUND_S = 1800
HEALTH_AROUND_S = 3600
MAX_PIPELINE_TIMEOUT = MAX_BUILD_TIMEOUT - DISPATCH_AROUND_S - HEALTH_AROUND_S
#: How long the seeder itself may run: its step's timeout less room to clean up its VM.
SEED_TIMEOUT_S = SEED_STEP_S - 600
#: Where filestore-publish writes the NFS export under the environment's workspace
#: (``gs://<state bucket>/workspace/<ENV>/``), and where startup.sh reads it when its metadata has
#: none (a slice asked for before Filestore: docs/pipeline.md, "The slice first"); lines
#: ``nfs_ip=<IPv4>`` and ``nfs_share=<share>``.
NFS_EXPORT_OBJECT = "mounts/filestore"
#: How long Terraform waits for the state lock that another build holds.
LOCK_TIMEOUT = "5m"



class StepLike(Protocol):
    """What :func:`step_timeout` reads of a step (``builder.planning.plan.Step``)."""

    kind: str
    module: str


def queue_wait_s(settings: Settings) -> int:
    """Seconds tpu-queue waits for ACTIVE: TPU_QUEUED_VALID_FOR (the request expires then
    anyway), else QUEUE_WAIT_S; at most MAX_QUEUE_WAIT_S."""
    valid = duration_seconds(settings.queued_valid_for) if settings.queued_valid_for else QUEUE_WAIT_S
    return min(valid, MAX_QUEUE_WAIT_S)


def step_timeout(settings: Settings, step: StepLike) -> int:
    """Seconds the rendered step may run (its ``timeout``): its kind's, an apply's module's
    ``apply_timeout``, a queue's wait plus slack. The pipeline and builder/planning/replacement.py read it for the most
    make-before-break can bill two slices together."""
    fixed = KINDS[step.kind].timeout
    if fixed is not None:
        return fixed
    if step.kind == "apply":
        found = spec(settings.arch, step.module)
        assert found is not None, step
        if settling_apply(settings, step):  # mig's failover: a wait per candidate (ACQUIRE_TRY_S)
            return max(found.apply_timeout, len(settings.candidates) * ACQUIRE_TRY_S)
        return found.apply_timeout
    return queue_wait_s(settings) + QUEUE_SLACK_S  # queue


def settling_apply(settings: Settings, step: StepLike) -> bool:
    """Whether ``step`` is mig's acquisition (``builder.catalogue.module_parts.settles_with_gcloud``): the
    accelerator's apply of a failover on mig, run in the gcloud image with the carried Terraform."""
    found = spec(settings.arch, step.module)
    return (step.kind == "apply" and found is not None and found.accelerator and not found.destroy_only
            and settles_with_gcloud(settings))


_DURATION = re.compile(r"^\d+s$")


def check_duration(value: str) -> str:
    """A Cloud Build duration we accept: whole seconds, positive (``"1800s"``). The Build type
    itself takes ``"-5s"``, so we check."""
    if not _DURATION.fullmatch(value) or int(value[:-1]) <= 0:
        raise ValueError(f"{value!r} is not a positive duration in whole seconds like '600s'")
    return value
