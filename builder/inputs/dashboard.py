"""The environment's Cloud Monitoring dashboard, as the JSON that ``modules/dashboard`` applies.

This is the ONE place the dashboard is made: :func:`render` returns the ``Dashboard`` resource of
the Cloud Monitoring Dashboards API (REST field names, ``mosaicLayout``) from the tiles of each
module of the architecture (its catalogue entry's ``tiles``, made in builder/catalogue/dashboard_tiles.py);
``builder.inputs.tfvars`` passes it to the module as the string ``dashboard_json``, and the module hands it to
``google_monitoring_dashboard.dashboard_json`` unchanged. Pure: no I/O, standard library only.
``tests/models/test_observe.py`` loads every rendering into the real
``google.cloud.monitoring_dashboard_v1.Dashboard`` type.

Tiles per architecture, from the metric types Google documents (the module README cites them):

=================================  ==============================  =========================================
tile                               vm / node (Cloud TPU API)       mig (Compute Engine TPU VMs)
=================================  ==============================  =========================================
TPU duty cycle per host            tpu_worker accelerator/         tpu.googleapis.com/GceTpuWorker
                                   duty_cycle (vm)                 accelerator/duty_cycle
TensorCore utilization / MXU       accelerator/tensorcore_         accelerator/tensorcore_utilization
                                   utilization (vm); tpu/mxu/
                                   utilization (node)
TensorCore idle duration           tpu/tensorcore/idle_duration    (not published for GceTpuWorker)
HBM used per host                  accelerator/memory_used (vm)    accelerator/memory_used
host CPU, memory, network          tpu.googleapis.com/cpu, memory, compute.googleapis.com/instance/cpu,
                                   network (tpu_worker)            memory (agent), network (gce_instance)
Filestore throughput               file.googleapis.com/nfs/server/read_bytes_count, write_bytes_count
shared-PD throughput               node: the MIG workers'          compute.googleapis.com/instance/disk/
                                   compute.googleapis.com/         read_bytes_count, write_bytes_count
                                   instance/disk/...; vm: none     (device shared-pd)
                                   (TPU VM disks publish none)
training step rate                 the log-based metric ``step_rate_metric`` (module output), from the
                                   hosts' ``tpubuild-train`` log lines
=================================  ==============================  =========================================

Verification (modules/dashboard/README.md, "Verification of the metric names"): the tpu_worker
metrics are confirmed in Google's TPU monitoring docs; GceTpuWorker, the Filestore, Compute Engine
disk and Ops Agent memory names are NOT confirmed from the docs we could read.

Decisions:

* Per host means grouped by the resource's worker label (``worker_id`` on TPU VMs) or by the
  Compute Engine ``instance_name``; the filters name only environment-level names
  (``tpu-<env>``, ``worker-<env>``, ``nfs-<env>``; the mig slice's instances are ``tpu-<env>-xxxx``),
  so a resize never changes the dashboard.
* ``node`` (legacy) shows what a TPU Node publishes (tpu_worker with ``node_id`` = the TPU name:
  MXU, idle duration, host CPU/memory/network) plus its worker MIG's Compute Engine VMs.
* ``mig``: the accelerator metrics of a Compute Engine TPU VM are on the monitored resource
  ``tpu.googleapis.com/GceTpuWorker`` (labels ``resource_container``, ``location``,
  ``worker_id``), which names no instance: those tiles are filtered to the project and zone, so two
  slices in one zone share them. The host tiles are per instance of the MIG.
"""

from __future__ import annotations

import json
from typing import Any

from builder.catalogue import modules as catalogue
from builder.catalogue.dashboard_tiles import STEP_METRIC_PREFIX, Names, step_metric_name
from builder.config import model_registry

__all__ = ["STEP_METRIC_PREFIX", "TRAIN_LOG", "console_url", "for_settings", "render", "step_label",
           "step_log_filter", "step_metric_name", "step_word", "to_json"]

#: Width of the mosaic grid (the API's 48 columns) and of one tile (two per row).
COLUMNS = 48
TILE_WIDTH = 24
TILE_HEIGHT = 16
#: The log (``logName`` suffix) that the hosts write training progress to: the syslog tag of
#: models/roberta/lib.sh send_train_steps and the Ops Agent receiver id in env_setup/scripts/startup.sh.
TRAIN_LOG = "tpubuild-train"
ARCHS = catalogue.ARCHS


def step_log_filter(project: str, env: str, word: str) -> str:
    """The log entries counted as training steps: the progress lines with the selected model's
    step word ``word`` (its keys.py ``STEP_WORD``, builder/config/model_registry.py ``DECLARED``) that
    the hosts send to syslog tagged ``tpubuild-train`` and prefixed ``[tpubuild_env=<env>]``
    (each model's train script does: models/*/train.sh); rsyslog files them in
    /var/log/tpubuild-train.log and the Ops Agent's files receiver ``tpubuild-train`` ships that
    file as the log ``projects/<project>/logs/tpubuild-train`` (env_setup/scripts/startup.sh).
    The line is matched in ``textPayload`` or ``jsonPayload.message``: Google's Ops Agent docs we
    could read do not say which of the two an unparsed files-receiver line lands in."""
    tag = f"[tpubuild_env={env}]"
    def has(text: str) -> str:
        return f'(textPayload:"{text}" OR jsonPayload.message:"{text}")'
    return f'logName="projects/{project}/logs/{TRAIN_LOG}" AND {has(tag)} AND {has(word)}'


def step_word(settings: Any) -> str:
    """The step word of the model ``settings`` selects (builder/config/model_registry.py ``DECLARED``;
    with no model, the word ``tpubuild run`` scripts print)."""
    return model_registry.declared(settings.repo_root, settings.model, "STEP_WORD")


def step_label(settings: Any) -> str:
    """How the step metric's description names the lines it counts (modules/dashboard
    ``step_label``): the selected model's keys.py ``STEP_LABEL``, else its step word. Roberta's,
    ``fairseq train_inner``, keeps the description every environment applied before models were
    plug-ins, so those plan no change."""
    label = model_registry.declared(settings.repo_root, settings.model, "STEP_LABEL")
    return label if label is not None else step_word(settings)


def render(*, arch: str, project: str, zone: str, env: str, tpu: str, mig: str, filestore: str,
           shared_pd: bool, labels: dict[str, str] | None = None, recovery: bool = False) -> dict[str, Any]:
    """The dashboard of one environment (REST JSON of ``google.monitoring.dashboard.v1.Dashboard``)."""
    if arch not in ARCHS:
        raise ValueError(f"{arch!r} is not an architecture; use one of {', '.join(ARCHS)}")
    names = Names(project=project, zone=zone, env=env, tpu=tpu, mig=mig, filestore=filestore, shared_pd=shared_pd,
                  recovery=recovery)
    # each module's own tiles (its catalogue entry's ``tiles``): the TPU's first, then the hosts',
    # the data's, the step rate (the dashboard's own) last
    tiles = [t for spec in catalogue.shown(arch) if spec.tiles for t in spec.tiles(names)]
    per_row = COLUMNS // TILE_WIDTH
    placed = [
        {"xPos": (i % per_row) * TILE_WIDTH, "yPos": (i // per_row) * TILE_HEIGHT, "width": TILE_WIDTH,
         "height": TILE_HEIGHT, "widget": w}
        for i, w in enumerate(tiles)
    ]
    return {
        "displayName": f"tpubuild {env}",
        "labels": dict(labels or {}),
        "mosaicLayout": {"columns": COLUMNS, "tiles": placed},
    }


def for_settings(settings: Any) -> dict[str, Any]:
    """:func:`render` with the names of ``settings`` (a :class:`builder.config.Settings`)."""
    return render(arch=settings.arch, project=settings.project_id, zone=settings.zone, env=settings.env_name,
                  tpu=settings.tpu_name, mig=settings.mig_name, filestore=settings.filestore_name,
                  shared_pd=bool(settings.shared_pd_attach), labels=dict(settings.labels),
                  recovery=bool(settings.recovery))


def to_json(dashboard: dict[str, Any]) -> str:
    """Stable, compact JSON (the module's input; Terraform compares it after normalising)."""
    return json.dumps(dashboard, sort_keys=True, separators=(",", ":"))


def console_url(project: str, dashboard_id: str) -> str:
    """The Cloud console page of a dashboard (``dashboard_id``: the last part of its name)."""
    return f"https://console.cloud.google.com/monitoring/dashboards/custom/{dashboard_id}?project={project}"
