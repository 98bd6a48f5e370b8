"""Settings → the variables of one Terraform module, as a dict written to ``<module>.tfvars.json``.

``for_module(settings, module)`` returns exactly the variables that ``modules/<dir>/variables.tf``
declares, every one of them (even those with a default), so the file fully describes what is
applied; ``tests/unit/test_tfvars.py`` fails when either side adds, renames or drops one.
``all_for(settings)`` does it for every plan module of the settings' architecture.

Plan module → Terraform directory comes from the module catalogue (``builder.catalogue.modules``); each
directory's variables come from the function registered for it with ``@inputs("modules/<dir>")``.
States live in ``gs://<state_bucket>/<ENV_BUILD_NAME>/<plan module>``; the modules created after
others read those outputs from there, which is why they take ``state_bucket`` and ``env_name``.

Decisions recorded here:

* Every name comes from :class:`Settings` (``tpu_name``, ``filestore_name``, ...), the service
  accounts' ids too: ``worker_service_account_id`` (``tb-<env>-vm``, the hosts of vm and mig)
  and ``seeder_service_account_id`` (``tb-<env>-sd``, created by shared_pd for the seeder VM).
  The pipeline passes the matching emails from the same properties.
* ``dataset_bucket`` is the bucket of GCS_DATASET (empty when unset): the workers get
  ``roles/storage.objectViewer`` on it and on nothing else.
* ``shared_pd.snapshot``: SHARED_PD_RESTORE=<name> sets it; ``latest`` leaves it empty here and
  the pipeline resolves the newest snapshot and passes ``-var snapshot=NAME`` *after*
  ``-var-file`` (the later option wins).
* ``setup_script`` is MIG_SETUP_SCRIPT as a repo-relative path; a path written relative to
  ``models/`` becomes ``models/<path>``. A script that does not exist is an error here, because
  here it is used.
* ``reserved`` goes to the vm module only: ``google_tpu_node`` (provider 6.50) has no reserved
  scheduling, so config refuses TPU_RESERVED with the node architecture before anything gets here.
* The node architecture's roots (``modules/tpu_node``, ``modules/mig``) are destroy only: they get
  ``project_id`` and ``zone``, nothing of the TPU Node or its workers (docs/modules.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from builder.catalogue import modules as catalogue
from builder.catalogue.module_parts import fails_over, mig_attaches_disk, moves_share, moving
from builder.config.candidates import at
from builder.config.offers import MAX_RUN_HOURS, calendar_name
from builder.config.scripts import repo_script
from builder.config.settings import Settings
from builder.facts.errors import BadInput
from builder.facts.records import replace
from builder.inputs import dashboard, recovery, ttl

#: Terraform directory → the function that gives its variables; :func:`inputs` fills it.
INPUTS: dict[str, Callable[[Settings], dict[str, Any]]] = {}


def inputs(tfdir: str) -> Callable[[Callable[[Settings], dict[str, Any]]], Callable[[Settings], dict[str, Any]]]:
    """Register the function that gives the variables of the Terraform directory ``tfdir`` (a
    root module of :data:`builder.catalogue.modules.CATALOGUE`)."""
    def register(fn: Callable[[Settings], dict[str, Any]]) -> Callable[[Settings], dict[str, Any]]:
        INPUTS[tfdir] = fn
        return fn
    return register


def dataset_bucket(gcs_dataset: str) -> str:
    """``gs://bucket/path/*`` → ``bucket``; empty stays empty."""
    if not gcs_dataset:
        return ""
    return gcs_dataset.removeprefix("gs://").split("/", 1)[0]


def service_account_id(settings: Settings) -> str:
    """The hosts' service account id (``Settings.worker_service_account_id``)."""
    return settings.worker_service_account_id


def setup_script(settings: Settings) -> str:
    """MIG_SETUP_SCRIPT as a repo-relative path ('' when unset); an error when it does not exist."""
    rel = settings.mig_setup_script
    return repo_script(settings, "MIG_SETUP_SCRIPT", rel) if rel else ""


def _common(s: Settings) -> dict[str, Any]:
    return {"project_id": s.project_id, "zone": s.zone, "labels": dict(s.labels)}


@inputs("modules/filestore")
def _filestore(s: Settings) -> dict[str, Any]:
    return {
        **_common(s), "region": s.region, "name": s.filestore_name, "tier": s.shared_fs_tier,
        "share_name": s.shared_fs_name, "capacity_gb": s.shared_fs_capacity_gb, "network": s.network,
        "env_name": s.env_name, "state_bucket": s.state_bucket, "move": moves_share(s), "release": False,
        "source_backup": "",  # a move's: filestore-plan passes the backup filestore-backup took
    }


@inputs("modules/shared_pd")
def _shared_pd(s: Settings) -> dict[str, Any]:
    restore = s.shared_pd_restore
    return {
        **_common(s), "name": s.shared_pd_name, "type": s.shared_pd_type, "size_gb": s.shared_pd_size_gb,
        "snapshot": "" if restore in ("", "latest") else restore,
        "env_name": s.env_name, "state_bucket": s.state_bucket,
        "seeder_service_account_id": s.seeder_service_account_id,
        "dataset_bucket": dataset_bucket(s.gcs_dataset), "move": moving(s), "release": False,
    }


@inputs("modules/tpu_node")
@inputs("modules/mig")
def _destroy_only(s: Settings) -> dict[str, Any]:
    """The legacy node roots are destroy only (modules/_shared/destroy_only.tf): the provider's
    project and zone are all a ``terraform plan -destroy`` of their state needs."""
    return {"project_id": s.project_id, "zone": s.zone}


@inputs("modules/tpu_vm")
def _tpu_vm(s: Settings) -> dict[str, Any]:
    return {
        **_common(s), "env_name": s.env_name, "state_bucket": s.state_bucket,
        "service_account_id": service_account_id(s), "network": s.network, "subnetwork": s.subnetwork,
        "shared_pd_attach": s.shared_pd_attach, "mount_point": s.mount_point,
        "dataset_bucket": dataset_bucket(s.gcs_dataset), "setup_script": setup_script(s),
        "name": s.tpu_name, "accelerator_type": s.accelerator_type,
        "runtime_version": s.runtime_version, "external_ips": s.tpu_external_ips,
        "preemptible": s.tpu_preemptible, "spot": s.tpu_spot, "reserved": s.tpu_reserved,
        "queued": s.queued, "make_before_break": s.replace == "make-before-break", "release": False,  # tpu-release passes -var=release=true
        "previous_zone": s.moving_from,  # a move to another zone: the applied snapshot's granted zone
        **_ttl(s), **_health(s),
    }


def _ttl(s: Settings) -> dict[str, Any]:
    """modules/ttl's inputs, through the TPU module (builder/inputs/ttl.py renders the build)."""
    body = json.dumps(ttl.build_request(s), sort_keys=True, separators=(",", ":")) if s.env_ttl_hours else ""
    return {"ttl_hours": s.env_ttl_hours, "ttl_build_body": body}


def _health(s: Settings) -> dict[str, Any]:
    """modules/health's inputs, through the slice's module (builder/inputs/recovery.py renders the build)."""
    body = json.dumps(recovery.build_request(s), sort_keys=True, separators=(",", ":")) if s.recovery else ""
    return {"health_build_body": body, "health_schedule": recovery.SCHEDULE}


@inputs("modules/tpu_mig_access")
def _tpu_mig_access(s: Settings) -> dict[str, Any]:
    """mig architecture, plan module tpu: the slice's identity and network access."""
    return {
        "project_id": s.project_id, "env_name": s.env_name, "state_bucket": s.state_bucket,
        "service_account_id": service_account_id(s), "network": s.network, "name": s.tpu_name,
        "dataset_bucket": dataset_bucket(s.gcs_dataset),
    }


@inputs("modules/tpu_mig")
def _tpu_mig(s: Settings) -> dict[str, Any]:
    """mig architecture, plan module mig: workload policy, instance template and the MIG."""
    shape = s.mig_shape
    return {
        **_common(s), "env_name": s.env_name, "state_bucket": s.state_bucket, "network": s.network,
        # the account the VMs run as, made by plan module tpu (its tpu-identity step): its email is
        # derived, not read from that module's state, so the slice need not wait for it
        "service_account_id": service_account_id(s),
        "subnetwork": s.subnetwork, "shared_pd_attach": s.shared_pd_attach, "mount_point": s.mount_point,
        "shared_pd_attached_later": mig_attaches_disk(s),  # the pipeline's mig-attach step gives the VMs the disk
        "setup_script": setup_script(s), "name": s.tpu_name, "accelerator_type": s.accelerator_type,
        "machine_type": shape.machine_type, "vm_count": shape.vms,
        "accelerator_topology": shape.accelerator_topology, "topology": shape.topology,
        "host_bounds": shape.host_bounds, "chips_per_host_bounds": shape.chips_per_host_bounds,
        "image_project": shape.image_project, "image_family": shape.image_family,
        "boot_disk_size_gb": s.boot_disk_size_gb, "boot_disk_type": shape.boot_disk_type,
        "external_ips": s.tpu_external_ips,
        "provisioning": s.provisioning, "reservation": s.reservation,
        "max_run_hours": s.max_run_hours or MAX_RUN_HOURS,
        "make_before_break": s.replace == "make-before-break", "release": False,  # mig-release passes -var=release=true
        # a failover's acquisition step waits for the group and reads its errors (docs/capacity.md)
        "wait_for_instances": not fails_over(s),
        **_calendar(s), **_ttl(s), **_health(s),
    }


def _calendar(s: Settings) -> dict[str, Any]:
    """Calendar mode: the request's name, window and chips; its vm_family only where google-beta's
    google_compute_future_reservation takes it (else the mig-calendar step asks with gcloud)."""
    shape = s.mig_shape
    facts = shape.generation_record.calendar if s.provisioning == "calendar" else None
    if facts is None:
        return {"calendar": None}
    return {"calendar": {"name": calendar_name(s.tpu_name), "start": s.calendar_start, "days": s.calendar_days,
                         "chips": shape.vms * shape.chips_per_vm, "vm_family": facts.vm_family if facts.terraform else ""}}


@inputs("modules/dashboard")
def _dashboard(s: Settings) -> dict[str, Any]:
    """The dashboard JSON is rendered by builder.inputs.dashboard (the one place it is made)."""
    return {
        "project_id": s.project_id, "env_name": s.env_name,
        "dashboard_json": dashboard.to_json(dashboard.for_settings(s)),
        "step_metric_name": dashboard.step_metric_name(s.env_name),
        "step_log_filter": dashboard.step_log_filter(s.project_id, s.env_name, dashboard.step_word(s)),
        "step_label": dashboard.step_label(s),
    }


def for_module(settings: Settings, module: str) -> dict[str, Any]:
    """Exactly the variables of the Terraform module behind plan module ``module``."""
    spec = catalogue.spec(settings.arch, module)
    if spec is None:
        modules = catalogue.modules(settings.arch)
        raise BadInput(f"{module!r} is not a Terraform module of the {settings.arch} architecture; "
                       f"use one of {', '.join(modules)}")
    return INPUTS[spec.tfdir](settings)


def all_for(settings: Settings, *, scripts: bool = True) -> dict[str, dict[str, Any]]:
    """``{plan module: variables}`` for every plan module of the settings' architecture.
    ``scripts=False`` (a destroy: no host boots and no seeder runs) leaves MIG_SETUP_SCRIPT and
    MIG_SEED_DATA_PREP_SCRIPT out (``setup_script`` is ''), unresolved: a seed-era file's paths,
    which no longer exist, do not stop its destroy."""
    if not scripts:
        settings = replace(settings, mig_setup_script="", mig_seed_data_prep_script="")
    return {module: for_module(settings, module) for module in catalogue.modules(settings.arch)}


def by_candidate(settings: Settings) -> dict[str, dict[str, Any]]:
    """``{"candidates/<i>/<plan module>": variables}``: every plan module's variables as if the
    ``i``-th candidate (builder/config/candidates.py) were the first, for a build that fails over
    (``builder.catalogue.module_parts.fails_over``; none otherwise). The acquisition step copies the granted
    candidate's over ``tfvars/<module>.tfvars.json``, so every later step reads the granted place
    from the workspace (docs/capacity.md, "The failover loop")."""
    if not fails_over(settings):
        return {}
    return {f"candidates/{i}/{module}": values for i, place in enumerate(settings.candidates)
            for module, values in all_for(at(settings, place)).items()}
