"""The typed, validated settings of one environment, and the names derived from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builder.config.candidates import MOVES_ON, Candidate
from builder.config.replace import moves_training
from builder.facts.records import field, record
from builder.facts.topology import MigShape, Topology, mig_shape


def _env_name(template: str) -> property:
    """A name derived from PROJECT_ID and ENV_BUILD_NAME, read like any property of Settings:
    ``template`` with ``{project}`` and ``{env}`` filled in."""
    return property(lambda s: template.format(project=s.project_id, env=s.env_name), doc=f"``{template}``")


@record
class Settings:
    source: Path
    env_name: str
    project_id: str
    zone: str
    region: str
    arch: str
    accelerator_type: str
    runtime_version: str
    topology: Topology
    tpu_cidr_block: str
    tpu_preemptible: bool
    tpu_spot: bool
    tpu_reserved: bool
    provisioning: str
    reservation: str
    max_run_hours: int
    calendar_start: str
    calendar_days: int
    queued: bool
    queued_valid_for: str
    tpu_external_ips: bool
    network: str
    subnetwork: str
    mount_point: str
    gcs_dataset: str
    machine_type: str
    gce_image_version: str
    source_image_family: str
    source_image_project: str
    boot_disk_size_gb: int
    mig_setup_script: str
    mig_seed_data_prep_script: str
    mig_external_ip: bool
    shared_fs_name: str
    shared_fs_capacity_gb: int
    shared_fs_tier: str
    shared_pd_attach: bool
    shared_pd_size_gb: int
    shared_pd_type: str
    shared_pd_restore: str
    model: str
    model_options: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    #: key → the keys whose values ``${KEY}`` put into its value (so a problem is blamed on its root)
    refs: dict[str, frozenset[str]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    zone_check: str = "error"  # TPU_ZONE_CHECK: "warn" turns the zone-table refusal into a warning
    build_service_account: str = ""  # BUILD_SERVICE_ACCOUNT; see builder_service_account
    env_ttl_hours: int = 0
    protected: bool = False  # ENV_PROTECTED: its GitOps apply trigger needs an approval (builder/inputs/gitops.py)
    replace: str = "break-before-make"  # TPU_REPLACE, resolved (builder/config/replace.py)
    move: bool = True  # TPU_MOVE: a zone change moves the environment make-before-break (builder/planning/move.py)
    move_to: str = ""  # --move-to ZONE: the environment is placed there whatever the granted place (candidates.move_to)
    #: the zone an update moves the environment from (candidates.acting; '' none): the pipeline renders the move
    moving_from: str = ""
    recovery_mode: str = ""  # TPU_RECOVERY as written; see recovery
    recovery_max_tries: int = 3
    recovery_move_mode: str = ""  # TPU_RECOVERY_MOVE as written; see recovery_move
    #: ZONE × TPU_PROVISIONING, zone by zone, mode by mode (builder/config/candidates.py); ``zone``,
    #: ``region`` and ``provisioning`` are the first one's
    candidates: tuple[Candidate, ...] = ()

    # ---- derived names: computed here once so every stage agrees ----
    @property
    def hosts(self) -> int:
        return self.topology.hosts

    state_bucket = _env_name("{project}-{env}-tf-backend")
    dataset_bucket = _env_name("{project}-{env}-dataset")
    tpu_name = _env_name("tpu-{env}")
    filestore_name = _env_name("nfs-{env}")
    shared_pd_name = _env_name("pd-{env}")
    mig_name = _env_name("worker-{env}")
    workspace_prefix = _env_name("workspace/{env}")
    #: the Artifact Registry repository of the tpubuild builder image (builder/catalogue/builder_image.py)
    image_repository = _env_name("tpubuild-{env}")

    @property
    def recovery(self) -> bool:
        """TPU_RECOVERY: whether the health check (builder/inputs/recovery.py, modules/health) recreates a
        lost slice. Unset, it is on for spot and preemptible slices on vm and mig, where Google
        takes the slice away by design, and off for every other capacity mode: on-demand and
        reservation slices are rarely lost, a flex-start or calendar slice ends when its capacity
        does, and a queued (TPU_QUEUED) slice is requested by the pipeline's tpu-queue step."""
        if self.recovery_mode:
            return self.recovery_mode == "auto"
        return (self.provisioning in ("spot", "preemptible") and self.arch in ("vm", "mig")
                and not (self.arch == "vm" and self.queued))

    @property
    def recovery_move(self) -> bool:
        """TPU_RECOVERY_MOVE: whether a recovery whose zone grants the slice in no mode of the list
        moves the environment to the next zone of ``ZONE`` (builder/inputs/recovery.py ``moves``;
        docs/recovery.md, "A recovery that moves"). Unset, it is on wherever it can be: with
        :attr:`recovery`, TPU_MOVE on, an architecture that moves (``MOVES_ON``) and candidates in more than one zone (a queued slice waits in its zone);
        ``false`` keeps every recovery in the zone that granted the slice."""
        zones = {c.zone for c in self.candidates}
        return (self.recovery and self.move and self.arch in MOVES_ON and self.recovery_move_mode != "false"
                and len(zones) > 1 and not self.queued)

    @property
    def reaches_hosts(self) -> bool:
        """Whether builds log in to the hosts (IAP SSH, as ``tpubuild train`` does): the health
        build relaunches training (:attr:`recovery`), and a make-before-break update with a MODEL
        moves the training to the new slice (builder/config/replace.py ``moves_training``)."""
        return self.recovery or moves_training(self)

    @property
    def worker_service_account_id(self) -> str:
        """account_id of the hosts' service account, created by modules/tpu_vm or
        modules/tpu_mig_access (``tb-<env>-vm``); 6-30 characters as ENV_BUILD_NAME is at most 24.
        A node environment's workers had ``tb-<env>-wk``: its state names it, and a destroy of
        modules/mig deletes it without being told (destroy only)."""
        return f"tb-{self.env_name}-vm"

    @property
    def worker_service_account(self) -> str:
        return self.service_account_email(self.worker_service_account_id)

    @property
    def seeder_service_account_id(self) -> str:
        """account_id of the shared-PD seeder VM's service account, created by modules/shared_pd
        (``tb-<env>-sd``): it exists before the seed step on a first create, the hosts' does not."""
        return f"tb-{self.env_name}-sd"

    @property
    def seeder_service_account(self) -> str:
        return self.service_account_email(self.seeder_service_account_id)

    def service_account_email(self, account_id: str) -> str:
        """The email Google gives a service account created in this project (PROJECT_ID has no
        domain prefix, so it is always ``<id>@<project>.iam.gserviceaccount.com``)."""
        return f"{account_id}@{self.project_id}.iam.gserviceaccount.com"

    @property
    def builder_service_account_id(self) -> str:
        """account_id of the account builds run as when BUILD_SERVICE_ACCOUNT is empty
        (``tb-<env>-cb``, created by ``tpubuild initialize``); "" when one is named."""
        return "" if self.build_service_account else f"tb-{self.env_name}-cb"

    @property
    def builder_service_account(self) -> str:
        """The email the root build, every pipeline and the trigger run as."""
        return self.build_service_account or self.service_account_email(self.builder_service_account_id)

    @property
    def builder_service_account_resource(self) -> str:
        """The ``serviceAccount`` value of a Build or BuildTrigger."""
        return f"projects/{self.project_id}/serviceAccounts/{self.builder_service_account}"

    @property
    def plan_service_account_id(self) -> str:
        """account_id of the read-only account the pull-request plan builds run as (``tb-<env>-pl``,
        created by ``tpubuild initialize``; builder/cloud/iam.py ``PLAN_ROLES``): a pull request's
        code never runs as the builder account (docs/cloud.md, "The trigger pair")."""
        return f"tb-{self.env_name}-pl"

    @property
    def plan_service_account(self) -> str:
        return self.service_account_email(self.plan_service_account_id)

    @property
    def labels(self) -> dict[str, str]:
        return {"tpubuild-env": self.env_name, "managed-by": "tpubuild"}

    @property
    def repo_root(self) -> Path:
        """The folder holding values.env; repo-relative paths (scripts, models) resolve here. For an
        environment of a repository (``environments/<name>/values.env``, builder/config/environments.py)
        it is that repository, as in the build, where the file is packed as the root values.env."""
        folder = self.source.resolve().parent
        if folder.parent.name == "environments" and (folder.parent.parent / "modules").is_dir():
            return folder.parent.parent
        return folder

    def line_of(self, key: str) -> int | None:
        return self.lines.get(key)

    # ---- TPU_ARCH="mig": the slice as a Compute Engine MIG of TPU VMs ----
    @property
    def mig_shape(self) -> MigShape:
        """Machine type, VM count and workload-policy topology of the slice (builder/facts/topology.py)."""
        return mig_shape(self.topology)
