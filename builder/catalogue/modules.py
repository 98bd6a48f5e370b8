"""The module catalogue: every fact about a Terraform module, once.

A *plan module* is what a build applies or destroys as one Terraform state
(``gs://<state bucket>/<ENV_BUILD_NAME>/<plan module>``): ``filestore``, ``shared_pd``, ``tpu``,
``mig`` and ``dashboard``. Behind a plan module stands one Terraform directory per architecture
(``tpu`` is ``modules/tpu_vm`` on vm, ``modules/tpu_mig_access`` on mig, ``modules/tpu_node`` on
node). One :class:`ModuleSpec` per (plan module, directory) says:

* ``archs``: the architectures it belongs to; the order of :data:`CATALOGUE` is create's order;
* ``after``: the plan modules it reads through ``terraform_remote_state`` and so is created after
  (``tests/unit/test_modules_catalogue.py`` derives them from the ``.tf`` files and compares; a
  destroy-only root reads nothing any more and keeps what it read, for the destroy order);
* ``reads_applied``: plan modules whose state it reads only when there (with ``defaults``), so not
  created after: the slice is asked for first (docs/pipeline.md, "The slice first");
* ``destroy_before``: plan modules it must be destroyed *before* beyond the reverse of ``after``
  (the legacy node order: the TPU Node goes before the share and the disk);
* ``keys``: the values.env keys that feed it (GitOps ``auto`` re-applies it when one changes);
* ``apply_timeout``: seconds its ``<module>-apply`` step may take; ``apply_minutes``: how long it
  usually takes (the estimate builder/catalogue/durations.py gives ``tpubuild plan`` and the critical path);
* ``holds_data``: destroying or replacing it loses data (the guard's and the diff's concern);
* ``hosts``: its machines are the training hosts (boot with env_setup, attach the shared PD);
* ``boot``: the repository folders its machines run at boot (GitOps ``auto`` re-applies it when
  they change); a folder inside another module's ``boot`` folder belongs to that module only;
* ``destroy_only``: a legacy root (node) that declares no resources: only ``terraform plan
  -destroy`` runs there (``modules/_shared/destroy_only.tf``), so no key and no boot folder feeds it;
* ``what``: the one-line description ``tpubuild plan`` shows; ``how``: what an apply does to a change of it;
* ``accelerator``: its resources are the TPU chips (the slice): before → after names the
  accelerator from it, and stopping or replacing it stops training;
* ``prices``: what it is billed for by the hour, as ``builder.catalogue.cost`` price items (``tpu``: the
  chips; ``worker_vms``: node's worker VMs; ``filestore``; ``disk``); nothing listed, nothing billed;
* ``replaced_by``: its Terraform variables whose change replaces its main resource (the
  provider's ForceNew); ``hosts_recreated_by``: those whose change keeps the module but recreates
  every host (a new instance template); ``drained_by``: those of them that drain the slice first
  (a new workload policy); ``resized_by``: those that add or remove hosts while the others keep
  running; ``grows``: the size variable that grows in place and replaces when it shrinks. Any
  other variable changes in place (``builder.planning.diff`` reads them; the guard checks the real plan);
* ``training``: destroying or replacing it stops the training (the hosts or what they run on);
* ``wanted``/``unwanted_why``: a module that only some values use: create and update apply it
  only when ``wanted(settings)``, and ``tpubuild plan`` says why not (``unwanted_why``) otherwise. Destroy
  always includes it (an older environment may have it; destroying a module that does not exist
  does nothing). The shared PD is created only for hosts that attach it: ``SHARED_PD_DISK_ATTACH``
  is how values.env asks for the disk (docs/modules.md);
* ``data_resources``: the resource types holding its data that a destroy of it deletes on purpose
  (after its ``snapshot``/``backup`` step), with what goes away: the guard lets a destroy delete
  these and refuses to delete any other data holder without ``_ALLOW_DATA_LOSS``; ``lost``: what
  ``tpubuild plan`` warns when a destroy takes it with no such step first;
* ``training_resources``: the resource types whose replacement or deletion stops the training on
  them, and ``replace_warning``, what the guard announces when a create/update replaces one;
  ``slice_resource``: the type that is one whole slice (a second one: the guard's DOUBLE BILLING);
* ``status``: its rows in ``tpubuild status`` (:class:`StatusPart`); ``state_link``: the output
  of its state that ``status`` shows as a link (the dashboard's ``console_url``);
* ``steps``: its steps beyond plan → guard → apply (:class:`ExtraStep`); ``snapshot``: what an
  apply of it starts from ('' none, ``latest`` the newest, which its restore step names);
* ``scoped``: the scope flags name it (``--tpu``/``--mig``, ``_TPU``/``_MIG``);
* ``tiles``: the maker of its dashboard tiles (builder/catalogue/dashboard_tiles.py);
* ``summary``: what ``tpubuild validate`` says of the hosts it makes (the hosts module's);
* ``ttl``: its Terraform calls ``modules/ttl`` (the TTL's Scheduler job lives and dies with it),
  so the TTL's destroy is scoped to it;
* ``identity``: the Terraform address of the hosts' service account in its root, which its
  ``identity`` step (BEFORE its plan) creates alone, so that a module that runs hosts as it need
  not wait for the rest; ``identity_from``: the plan modules whose ``identity`` step makes the
  account this module's hosts run as (it derives the email, reading no state of theirs): its apply
  waits for that step, and its first step after the apply for their apply (the roles, the firewall
  rules), so nothing reaches the hosts before those exist (docs/pipeline.md, "The slice first");
* ``resources``: the Terraform resource types its directory declares, its child modules' included
  (a destroy-only root: those its state holds); builder/catalogue/permissions.py says which role
  creates each, and ``initialize`` grants the builder account their union (builder/cloud/iam.py);
* ``region_service``: the regional service (a key of builder/planning/egress.py ``SERVICES``) that must
  be offered in REGION for it to be made there; check-capacity's regional-availability preflight reads it;
* ``zone_free``: whether these values' resources ignore the zone (a regional share); ``move_copy``: what a
  zone move copies (builder/planning/move_steps.py): the copy's step kind, the variable taking it, "final".

Everything else is derived here: the module list, create and destroy DAGs and the destroy order
per architecture (:func:`modules`, :func:`create_after`, :func:`destroy_after`,
:func:`destroy_order`), the Terraform directory (:func:`spec`), the hosts module
(:func:`hosts_module`), the guard's resource tables (:data:`DESTROYED_ON_PURPOSE`,
:data:`TRAINING_RESOURCES`). ``builder.planning.plan``, ``builder.inputs.tfvars``, ``builder.planning.guard``,
``builder.planning.diff``, ``builder.planning.auto``, ``builder.render.pipeline``, ``builder.inputs.dashboard``, ``tpubuild status``
and ``tpubuild plan`` read them from here; tests/unit/test_module_branches.py fails on code that branches on a name.

Adding a module is one entry in :data:`CATALOGUE` plus its own files (``modules/<dir>/``, its inputs in
builder/inputs/tfvars.py; docs/architecture.md has a worked example). Pure, standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from builder.catalogue import dashboard_tiles as dash
from builder.catalogue import status_rows as rows
from builder.catalogue.permissions import HOST_FIREWALL, HOST_IDENTITY, SCHEDULED
from builder.catalogue.module_parts import (AFTER, ASKS, BEFORE, BESIDE, GATE, INTERRUPTS, MOVES, SLICE_TEMPLATE, TPU_VM_REPLACED_BY,
                                  STORAGE, ExtraStep, StatusPart, backs_up, breaks_before_making, copies_share, moving, calendar_by_gcloud,
                                  capacity_request, filestore_what, reads_export, mig_attaches_disk, queued, runtime, share_lost, share_regional,
                                  shared_pd_what, slice_access_what, slice_how, slice_shape, slice_what, tpu_what)
from builder.facts.records import record

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


ARCHS: tuple[str, ...] = ("vm", "mig", "node")

# ---- the values.env keys that feed the modules (auto re-applies a module when one changes) ----

#: The TPU itself: what it is, how it is paid for and how long it lives (the TTL's scheduler job is
#: a child module of the TPU's, or of the slice's on mig).
TPU_KEYS = ("TPU_ACCELERATOR_TYPE", "TPU_PYTORCH_VERSION", "TPU_RUNTIME_VERSION", "TPU_CIDR_BLOCK",
            "TPU_PREEMPTIBLE", "TPU_SPOT", "TPU_RESERVED", "TPU_EXTERNAL_IPS",
            "TPU_PROVISIONING", "TPU_RESERVATION", "TPU_QUEUED", "TPU_QUEUED_VALID_FOR", "TPU_ZONE_CHECK",
            "ENV_TTL_HOURS")
#: The Compute Engine VMs of a MIG (node's workers, mig's TPU VMs).
MIG_KEYS = ("MACHINE_TYPE", "GCE_IMAGE_VERSION", "SOURCE_IMAGE_FAMILY", "SOURCE_IMAGE_PROJECT", "BOOT_DISK_SIZE_GB",
            "MIG_EXTERNAL_IP")
#: Read at boot by every host, or told to them (metadata, attached disk, endpoints), or granted to
#: them (the hosts' service account reads GCS_DATASET's bucket).
HOST_KEYS = ("MIG_SETUP_SCRIPT", "MOUNT_POINT", "SHARED_FS", "SHARED_FS_TIER", "SHARED_PD_DISK_ATTACH",
             "SHARED_PD_DISK_TYPE", "GCS_DATASET")
FILESTORE_KEYS = ("SHARED_FS", "SHARED_FS_CAPACITY", "SHARED_FS_TIER")
SHARED_PD_KEYS = ("SHARED_PD_DISK_ATTACH", "SHARED_PD_DISK_SIZE", "SHARED_PD_DISK_TYPE", "SHARED_PD_RESTORE",
                  "GCS_DATASET", "MIG_SEED_DATA_PREP_SCRIPT")


@record
class ModuleSpec:
    """One Terraform directory as one plan module of some architectures (the module docstring
    says what each field means)."""

    name: str
    tfdir: str
    archs: tuple[str, ...]
    what: Callable[[Settings], str]
    how: Callable[[Settings], str] | None = None
    after: tuple[str, ...] = ()
    reads_applied: tuple[str, ...] = ()
    destroy_before: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    apply_timeout: int = 3600
    apply_minutes: float = 1.0
    holds_data: bool = False
    hosts: bool = False
    boot: tuple[str, ...] = ()
    destroy_only: bool = False
    accelerator: bool = False
    prices: tuple[str, ...] = ()
    replaced_by: frozenset[str] = frozenset()
    hosts_recreated_by: frozenset[str] = frozenset()
    drained_by: frozenset[str] = frozenset()
    resized_by: frozenset[str] = frozenset()
    grows: str = ""
    training: bool = False
    wanted: Callable[[Settings], bool] | None = None
    unwanted_why: str = ""
    data_resources: tuple[tuple[str, str], ...] = ()
    lost: Callable[[Settings], str] | None = None
    training_resources: tuple[str, ...] = ()
    slice_resource: str = ""
    replace_warning: str = INTERRUPTS
    status: tuple[StatusPart, ...] = ()
    state_link: str = ""
    steps: tuple[ExtraStep, ...] = ()
    snapshot: Callable[[Settings], str] | None = None
    scoped: bool = False
    tiles: Callable[[dash.Names], list[dict[str, Any]]] | None = None
    ttl: bool = False
    summary: Callable[[Settings], str] | None = None
    identity: str = ""
    identity_from: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    region_service: str = ""
    zone_free: Callable[[Settings], bool] | None = None
    move_copy: tuple[str, ...] = ()

    def is_wanted(self, settings: Settings) -> bool:
        """Whether create and update apply this module with these values (``wanted``)."""
        return self.wanted is None or self.wanted(settings)


#: Every module, in create's order (ties in a DAG stage keep this order).
CATALOGUE: tuple[ModuleSpec, ...] = (
    ModuleSpec("filestore", "modules/filestore", ARCHS, filestore_what, keys=FILESTORE_KEYS, holds_data=True,
               apply_minutes=8.0,  # "several minutes" (Filestore docs); ~8 measured for BASIC_HDD
               prices=("filestore",), grows="capacity_gb", resources=("google_filestore_instance",),
               region_service="filestore", zone_free=share_regional, move_copy=("backup", "source_backup", "final"),
               replaced_by=frozenset({"project_id", "region", "zone", "name", "tier", "share_name", "network"}),
               data_resources=(("google_filestore_instance", "the Filestore share (checkpoints and preprocessed data)"),),
               status=(StatusPart("filestore", rows.filestore_row),), lost=share_lost,
               steps=(ExtraStep("backup", "destroy", BEFORE, backs_up), ExtraStep("backup", "apply", BEFORE, copies_share),
                      ExtraStep("publish", "apply", AFTER, reads_export)),
               tiles=dash.filestore_tiles),
    ModuleSpec("shared_pd", "modules/shared_pd", ARCHS, shared_pd_what, keys=SHARED_PD_KEYS, apply_timeout=1800,
               apply_minutes=0.5, move_copy=("snapshot", "snapshot"),  # a disk: seconds
               holds_data=True, boot=("env_setup/seeder",),  # the seeder VM's script
               prices=("disk",), grows="size_gb", resources=("google_compute_disk", *HOST_IDENTITY),
               replaced_by=frozenset({"project_id", "zone", "name", "type", "snapshot"}),
               wanted=lambda s: s.shared_pd_attach,
               unwanted_why="no host attaches it (SHARED_PD_DISK_ATTACH=false)",
               data_resources=(("google_compute_disk", "the shared persistent disk (the dataset)"),),
               steps=(ExtraStep("restore", "apply", BEFORE, lambda s: s.shared_pd_restore == "latest"),
                      ExtraStep("snapshot", "destroy", BEFORE), ExtraStep("snapshot", "apply", BEFORE, moving),
                      ExtraStep("seed", "apply", BESIDE, lambda s: s.shared_pd_attach and bool(s.gcs_dataset) and not moving(s))),
               snapshot=lambda s: s.shared_pd_restore),
    ModuleSpec("tpu", "modules/tpu_vm", ("vm",), tpu_what("TPU VM"), reads_applied=STORAGE, destroy_before=STORAGE,
               apply_minutes=5.0,  # a TPU VM create: typically 3-5 minutes (Cloud TPU docs)
               keys=TPU_KEYS + HOST_KEYS, hosts=True, boot=("env_setup",),
               accelerator=True, prices=("tpu",), training=True, replaced_by=TPU_VM_REPLACED_BY,
               training_resources=("google_tpu_v2_vm", "google_tpu_v2_queued_resource"),
               slice_resource="google_tpu_v2_vm",
               status=(StatusPart("tpu", rows.tpu_row), StatusPart("queued", rows.queued_row, queued)),
               # queue/unqueue: TPU_QUEUED; attach: the disk once seeded; swap/release/MOVES: TPU_REPLACE
               steps=(ExtraStep("unqueue", "destroy", BEFORE, queued), ExtraStep("queue", "apply", AFTER, queued),
                      ExtraStep("attach", "apply", AFTER, lambda s: s.shared_pd_attach), *MOVES),
               scoped=True, tiles=dash.tpu_vm_tiles, ttl=True, summary=runtime,
               resources=("google_tpu_v2_vm", *HOST_IDENTITY, *HOST_FIREWALL, *SCHEDULED)),
    # mig: tpu = the slice's access (identity, firewall, MIG reader role); mig = the slice (docs/pipeline.md)
    ModuleSpec("tpu", "modules/tpu_mig_access", ("mig",), slice_access_what, keys=("GCS_DATASET",), scoped=True,
               apply_minutes=1.0,  # an account, a custom role, firewall rules: seconds each
               training=True, replaced_by=frozenset({"project_id", "name", "service_account_id"}),
               # the account first (tpu-identity), so that the slice need not wait for the rest
               identity="module.slice_identity.google_service_account.this",
               steps=(ExtraStep("identity", "apply", BEFORE),),
               resources=("google_project_iam_custom_role", *HOST_IDENTITY, *HOST_FIREWALL)),
    # node (legacy, destroy only): Google Cloud stopped creating TPU Nodes on 2025-04-25
    ModuleSpec("tpu", "modules/tpu_node", ("node",), tpu_what("TPU Node"), destroy_before=STORAGE,
               apply_minutes=5.0,
               destroy_only=True, training_resources=("google_tpu_node",),
               accelerator=True, prices=("tpu",), training=True, replaced_by=frozenset({"project_id", "zone"}),
               status=(StatusPart("tpu", rows.tpu_row),), scoped=True, tiles=dash.tpu_node_tiles,
               resources=("google_tpu_node",)),
    # the slice's hosts run as its access's account (identity_from), derived, not read from its state
    ModuleSpec("mig", "modules/tpu_mig", ("mig",), slice_what, slice_how, reads_applied=STORAGE, identity_from=("tpu",),
               apply_minutes=2.0,  # the group and its template; its VMs come up in mig-resize
               destroy_before=(*STORAGE, "tpu"), keys=TPU_KEYS + MIG_KEYS + HOST_KEYS, hosts=True, boot=("env_setup",),
               accelerator=True, prices=("tpu",), training=True, replaced_by=frozenset({"project_id", "zone", "name"}),
               hosts_recreated_by=SLICE_TEMPLATE, drained_by=frozenset({"accelerator_topology", "topology"}),
               # a new workload policy is a new topology: every VM of the MIG is recreated
               training_resources=("google_compute_resource_policy",),
               slice_resource="google_compute_instance_group_manager",
               replace_warning="the slice's topology changes: training is interrupted; every VM of the MIG is "
                               "deleted (mig-drain) and recreated (mig-resize)",
               status=(StatusPart("slice", rows.slice_row), StatusPart("capacity", rows.capacity_row, capacity_request)),
               # drain: break-before-make only; attach: the disk, once seeded; then as on vm (docs/pipeline.md)
               steps=(ExtraStep("drain", "apply", GATE, breaks_before_making),
                      ExtraStep("calendar", "apply", ASKS, calendar_by_gcloud), ExtraStep("resize", "apply", AFTER),
                      ExtraStep("attach", "apply", AFTER, mig_attaches_disk), *MOVES),
               scoped=True, tiles=dash.slice_tiles, ttl=True, summary=slice_shape,
               resources=("google_compute_instance_group_manager", "google_compute_instance_template",
                          "google_compute_resource_policy",
                          "google_compute_future_reservation", *SCHEDULED)),
    # one worker per TPU host, which read the TPU's, the share's and the disk's states
    ModuleSpec("mig", "modules/mig", ("node",), lambda s: f"MIG {s.mig_name} ({s.hosts} x {s.machine_type})",
               after=("filestore", "shared_pd", "tpu"), hosts=True, destroy_only=True, apply_minutes=2.0,
               prices=("worker_vms",), training=True, replaced_by=frozenset({"project_id", "zone"}),
               status=(StatusPart("mig", rows.workers_row),), scoped=True, tiles=dash.worker_tiles,
               summary=runtime,  # the TPU Node's runtime; its state: workers, their account, role, firewall
               resources=("google_compute_instance_group_manager", "google_compute_instance_template",
                          "google_project_iam_custom_role", *HOST_IDENTITY, *HOST_FIREWALL)),
    ModuleSpec("dashboard", "modules/dashboard", ARCHS, apply_timeout=600, apply_minutes=0.5,
               what=lambda s: f"Cloud Monitoring dashboard and step-rate metric of {s.env_name} (modules/dashboard)",
               state_link="console_url", tiles=dash.step_tiles,
               resources=("google_logging_metric", "google_monitoring_dashboard")),
)

#: Which module a full destroy takes first when several are free to go (hosts, access, data, dashboard);
#: :func:`destroy_order` keeps the destroy DAG's order whatever this says; a module missing here goes last.
DESTROY_SEQUENCE: tuple[str, ...] = ("mig", "tpu", "filestore", "shared_pd", "dashboard")

#: Every plan module name, in create's order.
NAMES: tuple[str, ...] = tuple(dict.fromkeys(s.name for s in CATALOGUE))


def specs(arch: str) -> tuple[ModuleSpec, ...]:
    """The modules of ``arch``, in create's order."""
    return tuple(s for s in CATALOGUE if arch in s.archs)


def modules(arch: str) -> tuple[str, ...]:
    """The plan modules of ``arch``, in create's order."""
    return tuple(s.name for s in specs(arch))


def spec(arch: str, module: str) -> ModuleSpec | None:
    """The spec of plan module ``module`` on ``arch`` (None: not a module of that architecture)."""
    return next((s for s in specs(arch) if s.name == module), None)


def hosts_module(arch: str) -> str:
    """The plan module whose machines are the hosts (boot with env_setup, train): vm's TPU VMs, mig's and node's MIG."""
    return next(s.name for s in specs(arch) if s.hosts)


def accelerator_module(arch: str) -> str:
    """The plan module whose resources are the TPU chips: the TPU VM or Node, the slice's MIG on mig."""
    return next(s.name for s in specs(arch) if s.accelerator)


def create_after(arch: str) -> dict[str, tuple[str, ...]]:
    """What each module of ``arch`` waits for when it is created."""
    return {s.name: s.after for s in specs(arch)}


def _destroy_edges(arch: str) -> dict[str, set[str]]:
    """module → the modules destroyed before it: created after it (reading it), or ``destroy_before`` it."""
    mine = specs(arch)
    return {s.name: {o.name for o in mine if s.name in o.after or s.name in o.destroy_before} for s in mine}


def destroy_after(arch: str) -> dict[str, tuple[str, ...]]:
    """What each module of ``arch`` waits for when it is destroyed, reduced to the nearest."""
    edges = _destroy_edges(arch)
    order = destroy_order(arch)
    out: dict[str, tuple[str, ...]] = {}
    for name in order:
        deps = edges[name]
        # keep the nearest: drop a dependency that another dependency already waits for
        reach = {d: _reach(d, edges) for d in deps}
        out[name] = tuple(m for m in order if m in deps and not any(m in reach[o] for o in deps if o != m))
    return out


def _reach(name: str, edges: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(edges[name])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(edges[m])
    return seen


def destroy_order(arch: str) -> tuple[str, ...]:
    """The order of a full destroy of ``arch``: a topological order of the destroy DAG that, among
    the modules free to go, takes them in :data:`DESTROY_SEQUENCE`'s order (a module not listed
    there goes after the listed ones, in create's order)."""
    edges = _destroy_edges(arch)
    create = modules(arch)

    def rank(m: str) -> tuple[int, int]:
        listed = DESTROY_SEQUENCE.index(m) if m in DESTROY_SEQUENCE else len(DESTROY_SEQUENCE)
        return listed, create.index(m)

    out: list[str] = []
    while len(out) < len(create):
        free = [m for m in create if m not in out and edges[m] <= set(out)]
        out.append(min(free, key=rank))
    return tuple(out)


def modules_for_key(key: str, arch: str) -> frozenset[str]:
    """The plan modules of ``arch`` a change of ``key`` must re-apply."""
    return frozenset(s.name for s in specs(arch) if key in s.keys)


def holds_data(module: str) -> bool:
    """Whether destroying or replacing plan module ``module`` loses data (on any architecture)."""
    return any(s.holds_data for s in CATALOGUE if s.name == module)


#: The plan modules that hold data (Filestore, the shared PD), in create's order.
DATA_MODULES: tuple[str, ...] = tuple(n for n in NAMES if holds_data(n))


#: Resource type → what a destroy of its module deletes on purpose (the entries' ``data_resources``).
DESTROYED_ON_PURPOSE: dict[str, str] = {t: what for s in CATALOGUE for t, what in s.data_resources}
#: Resource type → what the guard announces when a create/update replaces it (``training_resources``);
#: the types that are one whole slice each (``slice_resource``).
TRAINING_RESOURCES: dict[str, str] = {t: s.replace_warning for s in CATALOGUE for t in s.training_resources}
SLICE_RESOURCES: frozenset[str] = frozenset(s.slice_resource for s in CATALOGUE if s.slice_resource)
#: The plan modules the scope flags name (``--tpu``/``--mig``, ``_TPU``/``_MIG``), in create's order.
SCOPED: tuple[str, ...] = tuple(n for n in NAMES if any(s.scoped for s in CATALOGUE if s.name == n))


def in_scope(*, tpu: bool, mig: bool) -> frozenset[str]:
    """The plan modules the scope flags name: each flag is spelt as its module (``--tpu``, ``--mig``)."""
    return frozenset(m for m in SCOPED if {"tpu": tpu, "mig": mig}.get(m))


def shown(arch: str) -> tuple[ModuleSpec, ...]:
    """The modules of ``arch`` in the order ``status`` and the dashboard show them: what trains
    first (the entries with ``training_resources``), then in destroy order (the hosts, the data,
    the dashboard last)."""
    by_name = {s.name: s for s in specs(arch)}
    return tuple(sorted((by_name[m] for m in destroy_order(arch)), key=lambda s: not s.training_resources))


def ttl_scope(arch: str) -> dict[str, bool]:
    """The scope flags (:data:`SCOPED` → on) of the TTL's destroy on ``arch``: only the module
    that holds the TTL's job. ValueError where no module holds one (node has no TTL)."""
    holders = {s.name for s in specs(arch) if s.ttl}
    if not holders:
        raise ValueError(f"the {arch} architecture has no TTL")
    return {m: m in holders for m in SCOPED}


def extra_steps(settings: Settings, module: str, op: str) -> tuple[ExtraStep, ...]:
    """The steps ``op`` (apply|destroy) of ``module`` runs beyond plan → guard → apply, in order."""
    found = spec(settings.arch, module)
    return tuple(x for x in found.steps if x.op == op and x.when(settings)) if found else ()
