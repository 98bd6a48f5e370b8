"""The parts catalogue entries (builder/catalogue/modules.py) are made of: a status row, an extra
pipeline step, and the small predicates and summaries the entries name. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from builder.catalogue.dashboard_tiles import SHARED_PD_DEVICE
from builder.config.filestore import TIERS
from builder.config.replace import makes_before_breaking, moves_training
from builder.facts.actions import Action
from builder.facts.records import record

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

__all__ = ["STORAGE", "AFTER", "BEFORE", "BESIDE", "EARLY", "GATE", "INTERRUPTS", "ExtraStep", "StatusPart", "backs_up", "moving", "moves_share", "copies_share", "queued", "reads_export", "fails_over", "tried",
           "makes_before_breaking", "breaks_before_making", "replacing", "moves_training", "MOVES",
           "capacity_request", "calendar_by_gcloud",
           "runtime", "share_lost", "slice_shape", "filestore_what", "shared_pd_what", "tpu_what",
           "slice_access_what", "slice_what", "SLICE_TEMPLATE", "TPU_VM_REPLACED_BY"]


def runtime(s: Settings) -> str:
    return f"runtime {s.runtime_version}"


def slice_shape(s: Settings) -> str:
    return f"{s.mig_shape.vms} x {s.mig_shape.machine_type}, topology {s.mig_shape.topology}, {s.provisioning}"


def _always(s: Settings) -> bool:
    return True


@record
class StatusPart:
    """One row of ``tpubuild status``: ``key`` names it in the report and on its line,
    builder/cloud/status.py ``READERS[key]`` reads it, ``row`` (builder/catalogue/status_rows.py) formats
    what was read, ``when`` says whether the environment has it."""

    key: str
    row: Callable[[dict[str, Any]], str]
    when: Callable[[Settings], bool] = _always


#: The plan modules the hosts mount or attach: the slice roots read their states only when they are
#: there (``reads_applied``), as the slice is asked for first, beside them (docs/pipeline.md).
STORAGE = ("filestore", "shared_pd")

#: Where an :class:`ExtraStep` goes in its module's steps.
BEFORE, EARLY, GATE, AFTER, BESIDE, ASKS = "before", "early", "gate", "after", "beside", "asks"


@record
class ExtraStep:
    """A step of a module's pipeline beyond plan → guard → apply, id ``<module>-<kind>``
    (``kind``: a row of ``builder.render.pipeline.KINDS``), with the module's ``op`` (apply|destroy) when
    ``when(settings)``. ``at``: :data:`BEFORE` its plan step, :data:`GATE` between its guard and its
    apply, :data:`EARLY` from the pipeline's start (the builder image) beside its plan and guard,
    its apply waiting for it too (work that needs no plan, kept off the critical path), :data:`AFTER`
    its apply (what waits for the module waits for it), :data:`BESIDE` after its apply (only the
    hosts that attach the shared PD wait for it), :data:`ASKS` beside its apply, as the slice's apply
    runs (builder.planning.plan.asks_first: after its plan and the capacity check, waiting for the
    gates' verdict on a plan that changes what exists), the steps after the apply waiting for it:
    a request for the chips made outside Terraform (mig-calendar)."""

    kind: str
    op: str
    at: str
    when: Callable[[Settings], bool] = _always


#: What a replaced TPU (or TPU VM) means for the training on it; the guard says it.
INTERRUPTS = "this interrupts training; running jobs stop and must resume from their last checkpoint"


def backs_up(s: Settings) -> bool:
    """The share's tier keeps backups (builder/config/filestore.py), so destroy takes one first."""
    return TIERS[s.shared_fs_tier].backups


def moving(s: Settings) -> bool:
    """The update moves the environment to another zone (``Settings.moving_from``, set by
    builder/config/candidates.py ``acting``): its storage is copied first (docs/capacity.md)."""
    return bool(s.moving_from)


def moves_share(s: Settings) -> bool:
    """A move copies the Filestore share: a zonal tier's instance, or a regional one leaving its
    region (REGIONAL and ENTERPRISE instances serve every zone of theirs)."""
    tier = TIERS.get(s.shared_fs_tier)
    leaves = "-".join(s.moving_from.split("-")[:2]) != s.region
    return moving(s) and (tier is None or not tier.regional or leaves)


def copies_share(s: Settings) -> bool:
    """A move's filestore-backup: the share moves and its tier keeps backups (HIGH_SCALE_SSD has
    none: modules/filestore's precondition refuses its move at the plan, with the fixes)."""
    return moves_share(s) and backs_up(s)


def share_regional(s: Settings) -> bool:
    """A REGIONAL or ENTERPRISE share lives in the region (modules/filestore): its zone moves nothing."""
    return TIERS[s.shared_fs_tier].regional


def share_lost(s: Settings) -> str:
    """What a destroy of a share on a tier without backups loses (``tpubuild plan`` warns)."""
    return (f"filestore tier {s.shared_fs_tier} has no backups: destroying {s.filestore_name} deletes the data on "
            f"the share /{s.shared_fs_name} for good; copy what you need first")


def reads_export(s: Settings) -> bool:
    """The hosts may be made before Filestore (the slice first: vm, mig), so the build publishes
    the NFS export where they read it at boot (filestore-publish); node's legacy roots read it
    from Filestore's state."""
    return s.arch in ("vm", "mig")


def fails_over(s: Settings) -> bool:
    """The build tries the candidates in order until one grants the slice (docs/capacity.md, "The
    failover loop"): a TPU VM (vm) or a MIG (mig) with more than one candidate, not queued (a
    queued request waits in its zone by design; calendar is never in a list). On mig a stockout
    does not fail the apply (the group keeps retrying): the acquisition step waits for the group
    itself (wait_for_instances = false) and reads its errors and its resize request's state."""
    return s.arch in ("vm", "mig") and len(s.candidates) > 1 and not s.queued


#: What a refused try may leave of the slice in the state, by architecture (address prefixes): the
#: acquisition step destroys them before the next candidate (docs/capacity.md, "The failover loop"):
#: the slice, and its TTL and health-check jobs, which are regional (Cloud Scheduler), so a
#: candidate in another region would otherwise plan to replace them, which the loop refuses.
REFUSED_LEAVES: dict[str, tuple[str, ...]] = {
    "vm": ("google_tpu_v2_vm.", "module.ttl[", "module.health["),
    "mig": ("google_compute_instance_group_manager.slice[", "google_compute_instance_template.slice[",
            "google_compute_resize_request.slice[", "google_compute_resource_policy.slice[",
            "google_compute_resource_policy.slice_b[", "module.slice_ttl[", "module.slice_health["),
}


def settles_with_gcloud(s: Settings) -> bool:
    """mig's failover: the acquisition step (mig-apply) reads the group's errors and its resize
    request with gcloud, so it runs in the gcloud image, with the Terraform binary mig-plan leaves
    in the workspace (the Terraform image has no gcloud)."""
    return s.arch == "mig" and fails_over(s)


def tried(s: Settings, action: Action) -> tuple[tuple[int, Any], ...]:
    """The candidates the failover loop asks, as (index in ``s.candidates``, candidate), in order.
    A create asks every one: nothing is built yet, and the storage is made where the slice lands.
    Any later build asks only those in the zone of the first (where the slice was granted: the
    environment's zonal data is there, the dataset disk attaches only to hosts of its zone and
    Filestore keeps the checkpoints): a running slice is never moved, and a lost one (the health
    check's recovery, docs/recovery.md) fails over from mode to mode where its data is; moving
    zones is an update placed in another zone: the recovery's when its zone refuses every mode
    (TPU_RECOVERY_MOVE, ``--move-to``), or a person's (docs/capacity.md)."""
    listed = tuple(enumerate(s.candidates))
    return listed if Action(action) is Action.CREATE else tuple((i, c) for i, c in listed if c.zone == s.zone)


def queued(s: Settings) -> bool:
    return s.queued


def breaks_before_making(s: Settings) -> bool:
    """mig, TPU_REPLACE=break-before-make: a new workload policy goes on the running group, which
    Google allows only while the group has no VMs, so mig-drain empties it first (make-before-break
    puts the new policy on a second group instead, and drains nothing)."""
    return not makes_before_breaking(s)


def replacing(spec: Any, s: Settings) -> frozenset[str]:
    """The variables of catalogue entry ``spec`` whose change replaces it with values ``s``: its
    ``replaced_by``, and on the accelerator module under make-before-break its ``hosts_recreated_by``
    too (mig: what would recreate every VM of the group makes a second MIG beside it instead).
    ``builder.planning.diff`` and the capacity check (``builder.planning.capacity.beside``) read it."""
    swaps = spec.accelerator and makes_before_breaking(s)
    return spec.replaced_by | spec.hosts_recreated_by if swaps else spec.replaced_by


#: TPU_REPLACE, the steps of the module whose slice is replaced (vm's tpu, mig's mig): swap and
#: release make before break, prepare/checkpoint/resume move a MODEL's training (docs/pipeline.md).
MOVES = (ExtraStep("prepare", "apply", EARLY, moves_training), ExtraStep("swap", "apply", AFTER, makes_before_breaking),
         ExtraStep("checkpoint", "apply", AFTER, moves_training),
         ExtraStep("release", "apply", AFTER, makes_before_breaking), ExtraStep("resume", "apply", AFTER, moves_training))


def capacity_request(s: Settings) -> bool:
    """The slice waits on a capacity request that ``status`` reads: a flex-start resize request or
    a calendar-mode future reservation (docs/capacity.md)."""
    return s.provisioning in ("flex-start", "calendar")


def calendar_by_gcloud(s: Settings) -> bool:
    """Calendar mode for a generation google-beta's google_compute_future_reservation cannot
    request (its record's ``calendar.terraform``): the mig-calendar step requests it with gcloud."""
    cal = s.mig_shape.generation_record.calendar if s.provisioning == "calendar" else None
    return cal is not None and not cal.terraform


def mig_attaches_disk(s: Settings) -> bool:
    """mig: the pipeline's mig-attach step gives the running VMs the shared PD once it is seeded
    (and the health check gives it to a VM the MIG recreated), so the slice is made beside the
    seed and its instance template does not carry the disk (modules/tpu_mig's
    ``shared_pd_attached_later``). Not for calendar mode: its VMs come at the reservation's start,
    after the build, with nothing there to attach the disk, so its template carries it and its
    apply waits for the seed (docs/pipeline.md, "The scarce resource first")."""
    return s.shared_pd_attach and s.provisioning != "calendar"


def mig_attach(s: Settings) -> dict[str, Any]:
    """What the attach of the shared PD to a MIG's VMs is rendered with (templates/_mig_attach.sh.j2:
    the pipeline's mig-attach step and the health check's): the group, the disk, the device name
    startup.sh waits for (``/dev/disk/by-id/google-<device>``, modules/tpu_mig's ``pd_device``),
    whether it is Hyperdisk ML (attached read-only only in READ_ONLY_MANY), and whether the hosts
    get the disk this way at all (``attach_disk``)."""
    return {"group": s.tpu_name, "disk": s.shared_pd_name, "device": SHARED_PD_DEVICE,
            "hyperdisk": s.shared_pd_type == "hyperdisk-ml", "attach_disk": s.arch == "mig" and mig_attaches_disk(s)}


#: modules/tpu_vm: every argument of ``google_tpu_v2_vm`` but the labels and the host metadata
#: (mount point, setup script, dataset grant) forces a new TPU VM.
TPU_VM_REPLACED_BY = frozenset({"project_id", "zone", "name", "accelerator_type", "runtime_version", "network",
                                 "subnetwork", "external_ips", "preemptible", "spot", "reserved", "shared_pd_attach"})
#: modules/tpu_mig: what the workload policy and the instance template hold; a change makes a new
#: template (every VM of the group is replaced) or a new policy (the group is drained first). Under
#: make-before-break it makes a new slice instead: a second MIG beside the running one (its
#: ``wanted`` in modules/tpu_mig/main.tf is this set; tests/terraform/test_tpu_mig_slots.py compares).
SLICE_TEMPLATE = frozenset({"accelerator_type", "machine_type", "vm_count", "accelerator_topology", "topology",
                             "host_bounds", "chips_per_host_bounds", "image_project", "image_family",
                             "boot_disk_size_gb", "boot_disk_type", "external_ips", "network", "subnetwork",
                             "shared_pd_attach", "shared_pd_attached_later", "mount_point", "setup_script",
                             "provisioning", "reservation", "env_name", "labels", "max_run_hours"})


# ---- what `tpubuild plan` says each module is ----

def filestore_what(s: Settings) -> str:
    return f"Filestore {s.filestore_name} ({s.shared_fs_tier}, {s.shared_fs_capacity_gb} GiB, share /{s.shared_fs_name})"


def shared_pd_what(s: Settings) -> str:
    use = "attached to every host" if s.shared_pd_attach else "not attached"
    return f"disk {s.shared_pd_name} ({s.shared_pd_type}, {s.shared_pd_size_gb} GB, {use})"


def tpu_what(kind: str) -> Callable[[Settings], str]:
    return lambda s: f"{kind} {s.tpu_name} ({s.accelerator_type}, {s.runtime_version})"


def slice_access_what(s: Settings) -> str:
    return (f"slice access for {s.tpu_name} (service account {s.worker_service_account_id}, IAP-SSH firewall, "
            "MIG reader role)")


def slice_what(s: Settings) -> str:
    sh = s.mig_shape
    policy = f"workload policy {s.tpu_name}-{sh.topology}" if sh.accelerator_topology else "no workload policy (one VM)"
    return f"MIG {s.tpu_name} ({sh.vms} x {sh.machine_type}, {policy}, {s.provisioning})"


def slice_how(s: Settings) -> str:
    """What an apply does to a changed slice (``tpubuild plan`` adds it to an apply's line; a
    destroy's line describes only what is destroyed)."""
    return ("a change of the slice makes a second MIG beside it (make-before-break)" if makes_before_breaking(s)
            else "drained first if the topology changes, then resized to the slice")
