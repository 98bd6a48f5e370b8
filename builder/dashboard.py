"""The environment's Cloud Monitoring dashboard, as the JSON that ``modules/dashboard`` applies.

This is the ONE place the dashboard is made: :func:`render` returns the ``Dashboard`` resource of
the Cloud Monitoring Dashboards API (REST field names, ``mosaicLayout``), ``builder.tfvars``
passes it to the module as the string ``dashboard_json``, and the module hands it to
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
  (``tpu-<env>``, ``worker-<env>``, ``nfs-<env>``), so a resize never changes the dashboard.
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

#: Width of the mosaic grid (the API's 48 columns) and of one tile (two per row).
COLUMNS = 48
TILE_WIDTH = 24
TILE_HEIGHT = 16
#: The log (``logName`` suffix) that the hosts write training progress to: the syslog tag of
#: models/roberta/lib.sh send_train_steps and the Ops Agent receiver id in env_setup/scripts/startup.sh.
TRAIN_LOG = "tpubuild-train"
#: The log-based metric the module creates (``logging.googleapis.com/user/<name>``).
STEP_METRIC_PREFIX = "tpubuild_train_steps_"
ARCHS = ("vm", "node", "mig")


def step_metric_name(env: str) -> str:
    """The log-based metric's name: one per environment (``-`` is not allowed, ``_`` is)."""
    return STEP_METRIC_PREFIX + env.replace("-", "_")


def step_log_filter(project: str, env: str) -> str:
    """The log entries counted as training steps: fairseq's ``train_inner`` progress lines that
    the hosts send to syslog tagged ``tpubuild-train`` and prefixed ``[tpubuild_env=<env>]``
    (models/roberta/lib.sh ``send_train_steps``); rsyslog files them in
    /var/log/tpubuild-train.log and the Ops Agent's files receiver ``tpubuild-train`` ships that
    file as the log ``projects/<project>/logs/tpubuild-train`` (env_setup/scripts/startup.sh).
    The line is matched in ``textPayload`` or ``jsonPayload.message``: Google's Ops Agent docs we
    could read do not say which of the two an unparsed files-receiver line lands in."""
    tag = f"[tpubuild_env={env}]"
    def has(text: str) -> str:
        return f'(textPayload:"{text}" OR jsonPayload.message:"{text}")'
    return f'logName="projects/{project}/logs/{TRAIN_LOG}" AND {has(tag)} AND {has("train_inner")}'


def _series(filter_: str, aligner: str, group_by: list[str], reducer: str) -> dict[str, Any]:
    aggregation: dict[str, Any] = {"alignmentPeriod": "60s", "perSeriesAligner": aligner}
    if group_by:
        aggregation["crossSeriesReducer"] = reducer
        aggregation["groupByFields"] = group_by
    return {"timeSeriesFilter": {"filter": filter_, "aggregation": aggregation}}


def _chart(title: str, datasets: list[tuple[str, str, list[str], str, str]], label: str) -> dict[str, Any]:
    """An xyChart widget; each dataset is (filter, aligner, groupBy, reducer, legend template)."""
    return {
        "title": title,
        "xyChart": {
            "dataSets": [
                {"timeSeriesQuery": _series(f, a, g, r), "plotType": "LINE", "legendTemplate": legend,
                 "minAlignmentPeriod": "60s"}
                for f, a, g, r, legend in datasets
            ],
            "timeshiftDuration": "0s",
            "yAxis": {"label": label, "scale": "LINEAR"},
        },
    }


def _metric(metric: str, resource: str, *extra: str) -> str:
    return " AND ".join([f'metric.type="{metric}"', f'resource.type="{resource}"', *extra])


def _tpu_tiles(arch: str, project: str, zone: str, tpu: str) -> list[dict[str, Any]]:
    """TPU tiles (duty cycle / TensorCore, HBM) and, for vm/node, the TPU hosts' own metrics."""
    if arch == "mig":
        res = "tpu.googleapis.com/GceTpuWorker"
        where = [f'resource.label.resource_container="{project}"', f'resource.label.location="{zone}"']
        per = ["resource.label.worker_id"]
        return [
            _chart("TPU duty cycle per worker (%)", [(_metric("tpu.googleapis.com/accelerator/duty_cycle", res, *where),
                                                      "ALIGN_MEAN", per, "REDUCE_MEAN", "${resource.labels.worker_id}")], "%"),
            _chart("TensorCore utilization per worker (%)",
                   [(_metric("tpu.googleapis.com/accelerator/tensorcore_utilization", res, *where), "ALIGN_MEAN", per,
                     "REDUCE_MEAN", "${resource.labels.worker_id}")], "%"),
            _chart("HBM used per worker", [(_metric("tpu.googleapis.com/accelerator/memory_used", res, *where),
                                            "ALIGN_MEAN", per, "REDUCE_SUM", "${resource.labels.worker_id}")], "bytes"),
        ]
    res = "tpu_worker"
    where = [f'resource.label.node_id="{tpu}"', f'resource.label.zone="{zone}"']
    per = ["resource.label.worker_id"]
    legend = "worker ${resource.labels.worker_id}"

    def tile(title: str, metric: str, aligner: str, reducer: str, label: str) -> dict[str, Any]:
        return _chart(title, [(_metric(metric, res, *where), aligner, per, reducer, legend)], label)

    tiles = []
    if arch == "vm":
        tiles += [
            tile("TPU duty cycle per host (%)", "tpu.googleapis.com/accelerator/duty_cycle", "ALIGN_MEAN",
                 "REDUCE_MEAN", "%"),
            tile("TensorCore utilization per host (%)", "tpu.googleapis.com/accelerator/tensorcore_utilization",
                 "ALIGN_MEAN", "REDUCE_MEAN", "%"),
            tile("HBM used per host", "tpu.googleapis.com/accelerator/memory_used", "ALIGN_MEAN", "REDUCE_SUM",
                 "bytes"),
        ]
    else:  # node: what the TPU Node's workers publish
        tiles.append(tile("MXU utilization per TPU worker (%)", "tpu.googleapis.com/tpu/mxu/utilization",
                          "ALIGN_MEAN", "REDUCE_MEAN", "%"))
    tiles += [
        tile("TensorCore idle duration per host", "tpu.googleapis.com/tpu/tensorcore/idle_duration", "ALIGN_MAX",
             "REDUCE_MAX", "s"),
    ]
    if arch == "vm":  # the TPU VM is the host: its CPU, memory and network are the hosts'
        tiles += [
            tile("Host CPU utilization (%)", "tpu.googleapis.com/cpu/utilization", "ALIGN_MEAN", "REDUCE_MEAN", "%"),
            tile("Host memory used", "tpu.googleapis.com/memory/usage", "ALIGN_MEAN", "REDUCE_SUM", "bytes"),
            _chart("Host network (bytes/s)", [
                (_metric("tpu.googleapis.com/network/received_bytes_count", res, *where), "ALIGN_RATE", per,
                 "REDUCE_SUM", "in worker ${resource.labels.worker_id}"),
                (_metric("tpu.googleapis.com/network/sent_bytes_count", res, *where), "ALIGN_RATE", per,
                 "REDUCE_SUM", "out worker ${resource.labels.worker_id}"),
            ], "bytes/s"),
        ]
    return tiles


def _gce_tiles(project: str, zone: str, prefix: str, disk_device: str) -> list[dict[str, Any]]:
    """Host tiles of Compute Engine VMs whose names start with ``prefix`` (a MIG's instances)."""
    where = [f'resource.label.project_id="{project}"', f'resource.label.zone="{zone}"',
             f'metric.label.instance_name=starts_with("{prefix}")']
    per = ["metric.label.instance_name"]
    legend = "${metric.labels.instance_name}"

    def q(metric: str, *extra: str) -> str:
        return _metric(metric, "gce_instance", *where, *extra)

    tiles = [
        _chart("Host CPU utilization", [(q("compute.googleapis.com/instance/cpu/utilization"), "ALIGN_MEAN", per,
                                         "REDUCE_MEAN", legend)], "ratio"),
        _chart("Host memory used (Ops Agent)", [(
            _metric("agent.googleapis.com/memory/percent_used", "gce_instance", *where[:2],
                    'metric.label.state="used"'), "ALIGN_MEAN", ["resource.label.instance_id"], "REDUCE_MEAN",
            "${resource.labels.instance_id}")], "%"),
        _chart("Host network (bytes/s)", [
            (q("compute.googleapis.com/instance/network/received_bytes_count"), "ALIGN_RATE", per, "REDUCE_SUM",
             "in ${metric.labels.instance_name}"),
            (q("compute.googleapis.com/instance/network/sent_bytes_count"), "ALIGN_RATE", per, "REDUCE_SUM",
             "out ${metric.labels.instance_name}"),
        ], "bytes/s"),
    ]
    if disk_device:
        disk = f'metric.label.device_name="{disk_device}"'
        tiles.append(_chart("Shared PD throughput (bytes/s)", [
            (q("compute.googleapis.com/instance/disk/read_bytes_count", disk), "ALIGN_RATE", per, "REDUCE_SUM",
             "read ${metric.labels.instance_name}"),
            (q("compute.googleapis.com/instance/disk/write_bytes_count", disk), "ALIGN_RATE", per, "REDUCE_SUM",
             "write ${metric.labels.instance_name}"),
        ], "bytes/s"))
    return tiles


def _filestore_tile(project: str, filestore: str) -> dict[str, Any]:
    where = [f'resource.label.project_id="{project}"', f'resource.label.instance_name="{filestore}"']
    return _chart("Filestore throughput (bytes/s)", [
        (_metric("file.googleapis.com/nfs/server/read_bytes_count", "filestore_instance", *where), "ALIGN_RATE",
         [], "REDUCE_NONE", "read"),
        (_metric("file.googleapis.com/nfs/server/write_bytes_count", "filestore_instance", *where), "ALIGN_RATE",
         [], "REDUCE_NONE", "write"),
    ], "bytes/s")


def _step_tile(env: str) -> dict[str, Any]:
    metric = f"logging.googleapis.com/user/{step_metric_name(env)}"
    return _chart("Training steps per second (log lines, every --log-interval updates)", [
        (f'metric.type="{metric}"', "ALIGN_RATE", [], "REDUCE_NONE", "logged steps")], "1/s")


def render(*, arch: str, project: str, zone: str, env: str, tpu: str, mig: str, filestore: str,
           shared_pd: bool, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The dashboard of one environment (REST JSON of ``google.monitoring.dashboard.v1.Dashboard``)."""
    if arch not in ARCHS:
        raise ValueError(f"{arch!r} is not an architecture; use one of {', '.join(ARCHS)}")
    tiles = _tpu_tiles(arch, project, zone, tpu)
    if arch == "node":
        tiles += _gce_tiles(project, zone, mig, "shared-pd" if shared_pd else "")
    elif arch == "mig":
        tiles += _gce_tiles(project, zone, mig, "shared-pd" if shared_pd else "")
    tiles += [_filestore_tile(project, filestore), _step_tile(env)]
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
                  shared_pd=bool(settings.shared_pd_attach), labels=dict(settings.labels))


def to_json(dashboard: dict[str, Any]) -> str:
    """Stable, compact JSON (the module's input; Terraform compares it after normalising)."""
    return json.dumps(dashboard, sort_keys=True, separators=(",", ":"))


def console_url(project: str, dashboard_id: str) -> str:
    """The Cloud console page of a dashboard (``dashboard_id``: the last part of its name)."""
    return f"https://console.cloud.google.com/monitoring/dashboards/custom/{dashboard_id}?project={project}"
