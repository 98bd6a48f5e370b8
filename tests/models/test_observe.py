"""Watching a run: the dashboard (real monitoring_dashboard_v1 types), `tpubuild profile` and
`tpubuild logs --metrics` (real gcloud parsing), models/xla_observe.py under REAL torch_xla on CPU
(TPUBUILD_XLA_PYTHON: a Python with torch_xla 2.9.0; required in CI)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from builder.config import load
from builder.config import model_registry
from builder.inputs import dashboard, tfvars
from builder.render import observe
from tests.conftest import EXAMPLES, REPO, SHIPPED, require

VM = EXAMPLES / "vm-v4-32.env"
HELPER = REPO / "models" / "xla_observe.py"


def _render(arch: str, shared_pd: bool = True) -> dict:
    return dashboard.render(arch=arch, project="my-tpu-project", zone="us-central2-b", env="e1", tpu="tpu-e1",
                            mig="worker-e1", filestore="nfs-e1", shared_pd=shared_pd, labels={"managed-by": "tpubuild"})


def _metrics(d: dict) -> set[str]:
    text = json.dumps(d)
    return {m.split('\\"')[0] for m in text.split('metric.type=\\"')[1:]}


@pytest.mark.parametrize("arch", dashboard.ARCHS)
def test_dashboard_loads_into_the_real_type(arch: str) -> None:
    from google.cloud import monitoring_dashboard_v1 as mon

    d = mon.Dashboard.from_json(dashboard.to_json(_render(arch)))  # unknown fields raise
    tiles = d.mosaic_layout.tiles
    assert len(tiles) >= 6 and all(t.widget.xy_chart.data_sets for t in tiles)
    assert all(t.x_pos + t.width <= d.mosaic_layout.columns for t in tiles)
    assert len({(t.x_pos, t.y_pos) for t in tiles}) == len(tiles), "tiles do not overlap"


def test_dashboard_a_corrupted_field_is_refused_by_the_real_type() -> None:
    from google.cloud import monitoring_dashboard_v1 as mon

    bad = _render("vm")
    bad["mosaicLayout"]["tiles"][0]["widget"]["xyChart"]["dataSet"] = []
    with pytest.raises(Exception):
        mon.Dashboard.from_json(json.dumps(bad))


def test_each_architecture_gets_its_own_tiles() -> None:
    vm, node, mig = (_metrics(_render(a)) for a in ("vm", "node", "mig"))
    assert {"tpu.googleapis.com/accelerator/duty_cycle", "tpu.googleapis.com/accelerator/memory_used",
            "tpu.googleapis.com/cpu/utilization", "file.googleapis.com/nfs/server/read_bytes_count"} <= vm
    assert not any(m.startswith("compute.googleapis.com/instance/disk") for m in vm), "TPU VM disks publish none"
    assert "tpu.googleapis.com/tpu/mxu/utilization" in node and "tpu.googleapis.com/accelerator/duty_cycle" not in node
    assert "compute.googleapis.com/instance/disk/read_bytes_count" in node | mig
    assert 'GceTpuWorker' in json.dumps(_render("mig")) and 'GceTpuWorker' not in json.dumps(_render("vm"))
    assert "compute.googleapis.com/instance/disk/read_bytes_count" not in _metrics(_render("mig", shared_pd=False))
    assert f"logging.googleapis.com/user/{dashboard.step_metric_name('e1')}" in vm & node & mig


def test_mig_host_tiles_watch_the_instances_of_the_slice_mig() -> None:
    """On mig the hosts are the instances of the slice's MIG, named after its base_instance_name
    (modules/tpu_mig: its slot's name, var.name or var.name-b, the two groups make-before-break
    alternates); the host tiles filter on the prefix var.name, which both share, not on another MIG's."""
    s = load(EXAMPLES / "mig-v6e-16-spot.env")
    base = tfvars.for_module(s, "mig")["name"]
    main = (REPO / "modules/tpu_mig/main.tf").read_text()
    assert "base_instance_name = each.value.name" in main and 'slice_name = local.target == "a" ? var.name : "${var.name}-b"' in main
    text = json.dumps(dashboard.for_settings(s))
    prefixes = {p.split('\\"')[0] for p in text.split('instance_name=starts_with(\\"')[1:]}
    assert prefixes == {base}, prefixes


def test_tfvars_carry_the_rendered_dashboard_and_a_resize_keeps_it(make_env) -> None:
    s = load(VM)
    v = tfvars.for_module(s, "dashboard")
    assert json.loads(v["dashboard_json"]) == dashboard.for_settings(s)
    assert "tpu-v4-pod" in v["dashboard_json"] and v["step_metric_name"] == "tpubuild_train_steps_v4_pod"
    small = tfvars.for_module(load(make_env(VM, TPU_ACCELERATOR_TYPE="v4-32")), "dashboard")
    big = tfvars.for_module(load(make_env(VM, TPU_ACCELERATOR_TYPE="v4-128")), "dashboard")
    assert small == big


def test_render_and_plan_show_the_dashboard_module(cli) -> None:
    code, out, err = cli("plan", "--values", str(VM))
    assert code == 0, err
    assert "dashboard" in out
    code, out, err = cli("render", "--values", str(VM), "--format", "json")
    assert code == 0, err
    ids = [st["id"] for st in json.loads(out)["steps"]]
    assert {"dashboard-plan", "dashboard-guard", "dashboard-apply"} <= set(ids)
    assert any("modules/dashboard" in a for st in json.loads(out)["steps"] for a in st["args"])


# ---------------------------------------------------------------- commands, real gcloud

#: roberta's declaration (models/roberta/keys.py): where its helper is on the hosts
ROBERTA_CODE = model_registry.declared(None, "roberta", "CODE_DIR")


def _target(iap: bool = True) -> observe.Target:
    return observe.Target(arch="vm", project="my-tpu-project", zone="us-central2-b", tpu="tpu-e1", env="e1",
                          iap=iap, hosts=4, accelerator="v4-32", mount_point="/mnt/common", code_dir=ROBERTA_CODE)


@pytest.mark.parametrize("iap", [True, False])
def test_every_gcloud_line_parses_in_real_gcloud(gcloud, iap: bool) -> None:
    t = _target(iap)
    lines = [*observe.profile_commands(t, 2, 5000, "20261123T000000Z", "b-tf-backend", "/tmp/x"),
             observe.metrics_command(t, "/mnt/common/nfs_share/logs/e1/roberta")]
    for argv in lines:
        parsed = gcloud.parse(argv)
        assert parsed.ok, parsed.why()


def test_profile_reaches_the_live_slot_and_the_hint_names_both(cli) -> None:
    """vm: the capture and the copy back first find which of the slice's two slots exists (a
    make-before-break update alternates them, models/hosts.py), then address it; the TensorBoard
    hint, printed for the user to type, names both."""
    from builder.config.model_registry import hosts

    reach = hosts().for_arch("vm", "my-tpu-project", "us-central2-b", True, 4, tpu_name="tpu-e1", mig_name="",
                             slots=("tpu-e1", "tpu-e1-b"))
    t = observe.Target(arch="vm", project="my-tpu-project", zone="us-central2-b", tpu="tpu-e1", env="e1", iap=True,
                       hosts=4, accelerator="v4-32", mount_point="/mnt/common", code_dir=ROBERTA_CODE,
                       extra={"reach": reach})
    capture, back, upload = observe.profile_commands(t, 2, 5000, "20261123T000000Z", "b-tf-backend", "/tmp/x")
    for argv in (capture, back):
        assert argv[:2] == ["bash", "-c"] and "gcloud compute tpus tpu-vm list" in argv[2]
        assert "case \"$tpubuild_slice\" in tpu-e1|tpu-e1-b)" in argv[2]
    assert ' ssh "$TPUBUILD_TPU" ' in capture[2] and "--worker=2" in capture[2]
    assert ' "$TPUBUILD_TPU":/mnt/common/nfs_share/profiles/e1/20261123T000000Z /tmp/x ' in back[2]
    assert upload[:3] == ["gcloud", "storage", "cp"]
    hints = observe.open_hints(t, 2, "20261123T000000Z", "b-tf-backend")
    assert " tpu-vm ssh TPU " in hints[3] and "--worker=0" in hints[3]
    assert hints[4] == "  TPU is whichever of tpu-e1, tpu-e1-b exists (tpubuild status shows it)"
    code, out, err = cli("profile", "--values", str(VM), "--dry-run")
    assert code == 0 and "tpu-v4-pod|tpu-v4-pod-b)" in out, err


def test_profile_dry_run_and_paths(cli) -> None:
    code, out, err = cli("profile", "--values", str(VM), "--host", "3", "--duration", "1500ms", "--dry-run")
    assert code == 0, err
    assert "--worker=3" in out and "--duration-ms 1500" in out and "--port 9012" in out
    assert "/mnt/common/nfs_share/profiles/v4-pod/" in out and "gs://my-tpu-project-v4-pod-tf-backend/profiles/v4-pod/" in out
    assert observe.parse_duration("2m") == 120_000 and observe.parse_duration("10") == 10_000


# ---------------------------------------------------------------- real torch_xla on CPU

TINY = '''
import sys, time
import torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.profiler as xp
import torch_xla.distributed.xla_multiprocessing as xmp

def _mp_fn(index, steps):
    dev = torch_xla.device()
    model = torch.nn.Linear(16, 4).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(steps):
        with xp.StepTrace("train", step_num=i):
            loss = model(torch.randn(8, 16, device=dev)).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
        if i % 50 == 0:
            print("step", i, loss.item(), flush=True)   # .item(): an aten:: CPU fallback
        time.sleep(0.02)

if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(int(sys.argv[1]),), nprocs=1)
'''


def _xla_python() -> str:
    py = os.environ.get("TPUBUILD_XLA_PYTHON", "")
    require("torch_xla (TPUBUILD_XLA_PYTHON)", bool(py) and Path(py).exists(),
            "a venv with torch==2.9.0 and torch_xla==2.9.0; set TPUBUILD_XLA_PYTHON to its python")
    return py


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_profiler_server_capture_and_metrics_report_under_real_torch_xla(tmp_path: Path) -> None:
    py = _xla_python()
    (tmp_path / "tiny.py").write_text(TINY)
    port = _free_port()
    report = tmp_path / "logs" / "host-0.metrics.txt"
    env = {**os.environ, "PJRT_DEVICE": "CPU", "TPUBUILD_PROFILER_PORT": str(port),
           "TPUBUILD_METRICS_REPORT": str(report), "TPUBUILD_METRICS_WARMUP": "1"}
    log = open(tmp_path / "train.log", "w")
    train = subprocess.Popen([py, str(HELPER), str(tmp_path / "tiny.py"), "100000"], env=env, stdout=log,
                             stderr=subprocess.STDOUT)
    try:
        import time
        deadline = time.time() + 240
        while "step 50" not in (tmp_path / "train.log").read_text():
            assert train.poll() is None and time.time() < deadline, (tmp_path / "train.log").read_text()
            time.sleep(1)
        assert f"profiler server on port {port}" in (tmp_path / "train.log").read_text()
        logdir = tmp_path / "nfs_share" / "profiles" / "e1" / "20261123T000000Z"
        cap = subprocess.run([py, str(HELPER), "capture", "--port", str(port), "--duration-ms", "2000",
                              "--logdir", str(logdir)], env={**os.environ, "PJRT_DEVICE": "CPU"},
                             capture_output=True, text=True, timeout=240)
        assert cap.returncode == 0, cap.stderr[-2000:]
        traces = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
        assert traces and traces[0].stat().st_size > 0, "TensorBoard's plugins/profile/<run>/ layout"
        while not observe.warmup_ready(report):
            assert time.time() < deadline
            time.sleep(1)
    finally:
        train.terminate()
        train.wait(timeout=60)
        log.close()
    # the warm-up snapshot is the real report format; the parser reads it
    warm = report.with_name("host-0.metrics.warmup.txt").read_text()
    parsed = observe.parse_report(warm)
    assert observe.compiles(parsed) >= 1
    assert "aten::_local_scalar_dense" in observe.fallbacks(parsed)
    files = {"host-0.metrics.txt": warm, "host-0.metrics.warmup.txt": warm}
    lines = observe.summarise(files)
    assert lines[0].startswith("host 0:") and "0 after warm-up" in lines[0]
    assert any("aten::_local_scalar_dense" in ln for ln in lines)


@pytest.mark.slow
def test_capture_without_a_running_training_says_so_in_one_line(tmp_path: Path) -> None:
    py = _xla_python()
    cap = subprocess.run([py, str(HELPER), "capture", "--port", str(_free_port()), "--duration-ms", "1000",
                          "--logdir", str(tmp_path / "p")], capture_output=True, text=True, timeout=120)
    assert cap.returncode == 3
    assert len(cap.stderr.strip().splitlines()) == 1 and "no training is running" in cap.stderr


def test_summary_of_reports_across_hosts() -> None:
    last = "Metric: CompileTime\n  TotalSamples: 9\nCounter: UncachedCompile\n  Value: 9\nCounter: aten::nonzero\n  Value: 4\n"
    warm = "Counter: UncachedCompile\n  Value: 7\n"
    dump = ("==> /x/host-0.metrics.txt\n" + last + "==> /x/host-0.metrics.warmup.txt\n" + warm
            + "==> /x/host-1.metrics.txt\n" + last)
    lines = observe.summarise(observe.split_dump(dump))
    assert lines[0] == "host 0: 9 compiles (2 after warm-up); 4 CPU fallback calls in 1 op(s)"
    assert lines[1].startswith("host 1: 9 compiles (warm-up snapshot not taken yet)")
    assert lines[-1] == "  aten::nonzero: 8 on 2 host(s)"
    assert "no metrics report yet" in observe.summarise({})[0]


def test_recovery_adds_a_logs_tile_of_the_health_build_that_loads_into_the_real_type() -> None:
    """TPU_RECOVERY: the dashboard shows the health build's own lines (builder/inputs/recovery.py's log
    prefix, the one every line of its scripts starts with)."""
    from google.cloud import monitoring_dashboard_v1 as mon

    from builder.inputs import recovery

    on = dashboard.render(arch="vm", project="my-tpu-project", zone="us-central2-b", env="e1", tpu="tpu-e1",
                          mig="worker-e1", filestore="nfs-e1", shared_pd=True, recovery=True)
    d = mon.Dashboard.from_json(dashboard.to_json(on))
    [logs] = [t.widget.logs_panel for t in d.mosaic_layout.tiles if t.widget.logs_panel.filter]
    assert recovery.log_prefix("e1") in logs.filter and list(logs.resource_names) == ["projects/my-tpu-project"]
    assert len(d.mosaic_layout.tiles) == len(_render("vm")["mosaicLayout"]["tiles"]) + 1
