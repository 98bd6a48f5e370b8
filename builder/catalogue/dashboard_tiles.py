"""The tiles of the environment's dashboard, one maker per catalogue entry (pure, standard library).

builder/inputs/dashboard.py lays the tiles out; each :class:`builder.catalogue.modules.ModuleSpec` names the
maker of its own tiles in ``tiles`` (the TPU hosts', the Filestore share's, the step rate's), which
takes the environment's :class:`Names`. The metric types and why each filter is what it is:
builder/inputs/dashboard.py's docstring.
"""

from __future__ import annotations

from typing import Any

from builder.config.recovery import log_prefix
from builder.facts.records import record

#: The log-based metric the module creates (``logging.googleapis.com/user/<name>``).
STEP_METRIC_PREFIX = "tpubuild_train_steps_"
#: The Compute Engine device name of the shared PD on the hosts that attach it.
SHARED_PD_DEVICE = "shared-pd"


@record
class Names:
    """What the tiles filter on: the environment's project, zone and resource names, and whether
    the hosts attach the shared PD."""

    project: str
    zone: str
    env: str
    tpu: str
    mig: str
    filestore: str
    shared_pd: bool
    recovery: bool = False  # TPU_RECOVERY: the health check's log gets a tile


def step_metric_name(env: str) -> str:
    """The log-based metric's name: one per environment (``-`` is not allowed, ``_`` is)."""
    return STEP_METRIC_PREFIX + env.replace("-", "_")


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


def _tpu_worker(n: Names) -> Any:
    """A tile maker over the Cloud TPU API's ``tpu_worker`` resource of the TPU, per worker."""
    res = "tpu_worker"
    where = [f'resource.label.node_id="{n.tpu}"', f'resource.label.zone="{n.zone}"']
    per = ["resource.label.worker_id"]
    legend = "worker ${resource.labels.worker_id}"

    def tile(title: str, metric: str, aligner: str, reducer: str, label: str) -> dict[str, Any]:
        return _chart(title, [(_metric(metric, res, *where), aligner, per, reducer, legend)], label)

    return tile, res, where, per


def _idle(tile: Any) -> dict[str, Any]:
    return tile("TensorCore idle duration per host", "tpu.googleapis.com/tpu/tensorcore/idle_duration", "ALIGN_MAX",
                "REDUCE_MAX", "s")


def tpu_vm_tiles(n: Names) -> list[dict[str, Any]]:
    """modules/tpu_vm: duty cycle, TensorCore, HBM and idle time per host, and as the TPU VM is the
    host, its CPU, memory and network."""
    tile, res, where, per = _tpu_worker(n)
    return [
        tile("TPU duty cycle per host (%)", "tpu.googleapis.com/accelerator/duty_cycle", "ALIGN_MEAN",
             "REDUCE_MEAN", "%"),
        tile("TensorCore utilization per host (%)", "tpu.googleapis.com/accelerator/tensorcore_utilization",
             "ALIGN_MEAN", "REDUCE_MEAN", "%"),
        tile("HBM used per host", "tpu.googleapis.com/accelerator/memory_used", "ALIGN_MEAN", "REDUCE_SUM",
             "bytes"),
        _idle(tile),
        tile("Host CPU utilization (%)", "tpu.googleapis.com/cpu/utilization", "ALIGN_MEAN", "REDUCE_MEAN", "%"),
        tile("Host memory used", "tpu.googleapis.com/memory/usage", "ALIGN_MEAN", "REDUCE_SUM", "bytes"),
        _chart("Host network (bytes/s)", [
            (_metric("tpu.googleapis.com/network/received_bytes_count", res, *where), "ALIGN_RATE", per,
             "REDUCE_SUM", "in worker ${resource.labels.worker_id}"),
            (_metric("tpu.googleapis.com/network/sent_bytes_count", res, *where), "ALIGN_RATE", per,
             "REDUCE_SUM", "out worker ${resource.labels.worker_id}"),
        ], "bytes/s"),
    ]


def tpu_node_tiles(n: Names) -> list[dict[str, Any]]:
    """modules/tpu_node (legacy): what a TPU Node's workers publish (MXU, idle time)."""
    tile = _tpu_worker(n)[0]
    return [tile("MXU utilization per TPU worker (%)", "tpu.googleapis.com/tpu/mxu/utilization",
                 "ALIGN_MEAN", "REDUCE_MEAN", "%"), _idle(tile)]


def slice_tiles(n: Names) -> list[dict[str, Any]]:
    """modules/tpu_mig: the accelerator metrics of the slice's Compute Engine TPU VMs
    (``GceTpuWorker``, which names no instance: filtered to the project and zone), then the host
    tiles of the MIG's instances, which are named after the slice (``base_instance_name``, the TPU's
    name) and not after the node architecture's worker MIG."""
    res = "tpu.googleapis.com/GceTpuWorker"
    where = [f'resource.label.resource_container="{n.project}"', f'resource.label.location="{n.zone}"']
    per = ["resource.label.worker_id"]
    return [
        _chart("TPU duty cycle per worker (%)", [(_metric("tpu.googleapis.com/accelerator/duty_cycle", res, *where),
                                                  "ALIGN_MEAN", per, "REDUCE_MEAN", "${resource.labels.worker_id}")], "%"),
        _chart("TensorCore utilization per worker (%)",
               [(_metric("tpu.googleapis.com/accelerator/tensorcore_utilization", res, *where), "ALIGN_MEAN", per,
                 "REDUCE_MEAN", "${resource.labels.worker_id}")], "%"),
        _chart("HBM used per worker", [(_metric("tpu.googleapis.com/accelerator/memory_used", res, *where),
                                        "ALIGN_MEAN", per, "REDUCE_SUM", "${resource.labels.worker_id}")], "bytes"),
        *_gce_tiles(n.project, n.zone, n.tpu, SHARED_PD_DEVICE if n.shared_pd else ""),
    ]


def worker_tiles(n: Names) -> list[dict[str, Any]]:
    """modules/mig (legacy node): the host tiles of the worker MIG's instances."""
    return _gce_tiles(n.project, n.zone, n.mig, SHARED_PD_DEVICE if n.shared_pd else "")


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


def filestore_tiles(n: Names) -> list[dict[str, Any]]:
    """modules/filestore: the share's read and write throughput."""
    where = [f'resource.label.project_id="{n.project}"', f'resource.label.instance_name="{n.filestore}"']
    return [_chart("Filestore throughput (bytes/s)", [
        (_metric("file.googleapis.com/nfs/server/read_bytes_count", "filestore_instance", *where), "ALIGN_RATE",
         [], "REDUCE_NONE", "read"),
        (_metric("file.googleapis.com/nfs/server/write_bytes_count", "filestore_instance", *where), "ALIGN_RATE",
         [], "REDUCE_NONE", "write"),
    ], "bytes/s")]


def step_tiles(n: Names) -> list[dict[str, Any]]:
    """modules/dashboard: the training step rate, from its log-based metric."""
    metric = f"logging.googleapis.com/user/{step_metric_name(n.env)}"
    tiles = [_chart("Training steps per second (log lines, every --log-interval updates)", [
        (f'metric.type="{metric}"', "ALIGN_RATE", [], "REDUCE_NONE", "logged steps")], "1/s")]
    if n.recovery:  # the health build's own lines: when, why, down time and its cost (docs/recovery.md)
        tiles.append({"title": "Recoveries (TPU_RECOVERY health check)", "logsPanel": {
            "filter": f'resource.type="build" AND textPayload:"{log_prefix(n.env)}"',
            "resourceNames": [f"projects/{n.project}"]}})
    return tiles
