"""How long each pipeline step takes, in minutes: one table of estimates, read by
``benchmarks/critical_path.py`` (the pipelines' critical paths) and by ``tpubuild plan`` (how long
make-before-break bills two slices together, builder/replacement.py). Correct a figure here and
every view moves with it. Pure: standard library only.
"""

from __future__ import annotations

from typing import Any

#: Minutes per step: "<kind>" or "<module>-<kind>" (the more specific wins). Sources: Filestore
#: creation takes "several minutes" (Filestore docs, creating instances; ~8 measured for
#: BASIC_HDD); a TPU VM create typically 3-5 minutes (Cloud TPU docs, TPU VM creation); a MIG of
#: TPU VMs similar plus its instances (resize); a disk and IAM objects take seconds. Tool steps
#: (guard, check-capacity, finalize in the builder image): container start plus image pull (~0.5)
#: plus the command (~0.5); tpubuild-image: a docker container and a manifest lookup (the image is
#: there; building it is initialize's); terraform init (provider download ~0.5) plus plan (~0.5);
#: tpu-attach: one TPU node update; mig-attach: a disk and a group lookup, then one attach-disk per
#: VM, in parallel.
MINUTES: dict[str, float] = {
    "image": 0.5, "capacity": 1.0, "guard": 1.0, "finalize": 1.0,
    "plan": 1.0, "apply": 1.0, "filestore-apply": 8.0, "shared_pd-apply": 0.5, "dashboard-apply": 0.5,
    "tpu-apply": 5.0, "mig-apply": 2.0, "resize": 6.0, "drain": 4.0, "queue": 5.0, "unqueue": 3.0,
    "restore": 0.5, "snapshot": 2.0, "backup": 10.0, "attach": 1.0,
    # TPU_REPLACE=make-before-break: tpu-swap checks the new slice (READY after its create), tpu-release
    # plans and deletes the old TPU VM (deletes take a few minutes, as creates do)
    "swap": 0.5, "release": 4.0,
    # ... with a MODEL: tpu-prepare prints the move's scripts (a tool step); tpu-checkpoint waits for
    # the model's next checkpoint on the old slice (on average half its checkpoint interval; at most
    # builder.step_kinds.DRAIN_WAIT_S, 30 min) and stops it; tpu-resume launches on the new slice
    # (staging, an idempotent install, the detached launch)
    "prepare": 1.0, "checkpoint": 10.0, "resume": 3.0,
    "seed": 2.0,  # the seeder VM's start, plus SEED_PER_100GB per 100 GB of the disk
    # filestore-publish: a gcloud container and one object written to the workspace
    "publish": 0.5,
    # "<arch>:<step id>" where a step id means another thing there: on mig, tpu-apply makes the
    # slice's access (an account, a custom role, firewall rules: seconds each), not a TPU
    "mig:tpu-apply": 1.0,
}
#: Minutes the seeder takes per 100 GB copied (gcloud storage cp on an e2-standard-8, ~170 MB/s).
SEED_PER_100GB = 10.0


#: The make-before-break steps that find nothing to do when the build replaces no slice (a create,
#: an update that keeps the slice): a container start and one lookup each.
MOVE_KINDS = frozenset({"swap", "checkpoint", "release", "resume"})
NOTHING_TO_MOVE = 0.5


def duration(step: dict[str, Any], settings: Any, *, replacing: bool = True) -> float:
    """Minutes of one step (a rendered step, or any mapping with its ``id``): its architecture's row
    for its id (``<arch>:<id>``), else its id's row, else its kind's (``<module>-<kind>``), else 1; a seed adds its disk's copy time. ``replacing=False``: the
    build replaces no slice, so the :data:`MOVE_KINDS` steps only look (``NOTHING_TO_MOVE``)."""
    sid = step["id"]
    kind = sid.rsplit("-", 1)[-1] if "-" in sid else sid
    kind = {"tpubuild-image": "image", "check-capacity": "capacity"}.get(sid, kind)
    if not replacing and kind in MOVE_KINDS:
        return NOTHING_TO_MOVE
    minutes = MINUTES.get(f"{getattr(settings, 'arch', '')}:{sid}", MINUTES.get(sid, MINUTES.get(kind, 1.0)))
    if kind == "seed":
        minutes += SEED_PER_100GB * settings.shared_pd_size_gb / 100
    return minutes
