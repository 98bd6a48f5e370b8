"""TPU_ARCH="mig": a v5p / v6e / TPU7x slice as a Compute Engine MIG of TPU VMs.

The topology table against Google's documented shapes (written out here once more by hand from
the sources of builder/data/tpu_offers.json), config refusals, what _TPU/_MIG mean, and the resize
pipeline (guard → drain → apply → resize) loaded into the real Cloud Build ``Build`` type and
run under bash against a scripted ``gcloud``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from builder.config import load
from builder.facts import generations
from builder.facts.errors import BadInput, ConfigError
from builder.facts.topology import mig_shape, parse
from builder.planning import request
from builder.planning.plan import make_plan, module_dir
from builder.render.pipeline import render
from tests.conftest import EXAMPLES
from tests.support.pipeline import BUILTINS, step_script

V6E = EXAMPLES / "mig-v6e-16-spot.env"
TPU7X = EXAMPLES / "mig-tpu7x-128.env"

#: From the docs (tpu/docs/v5p, tpu/docs/v6e, tpu/docs/tpu7x, compute/docs/tpus/tpu-machines) and
#: Google's xpk (src/xpk/core/system_characteristics.py: v5p-32/-384/-6144, tpu7x-32...8192):
#: type → (machine type, VMs, topology). Chips = product of the topology.
DOCS = {
    "v5p-8": ("ct5p-hightpu-4t", 1, "2x2x1"), "v5p-16": ("ct5p-hightpu-4t", 2, "2x2x2"),
    "v5p-64": ("ct5p-hightpu-4t", 8, "2x4x4"), "v5p-128": ("ct5p-hightpu-4t", 16, "4x4x4"),
    "v5p-256": ("ct5p-hightpu-4t", 32, "4x4x8"), "v5p-512": ("ct5p-hightpu-4t", 64, "4x8x8"),
    "v5p-1024": ("ct5p-hightpu-4t", 128, "8x8x8"), "v5p-2048": ("ct5p-hightpu-4t", 256, "8x8x16"),
    "v5p-4096": ("ct5p-hightpu-4t", 512, "8x16x16"), "v5p-8192": ("ct5p-hightpu-4t", 1024, "16x16x16"),
    "v5p-12288": ("ct5p-hightpu-4t", 1536, "16x16x24"), "v5p-32": ("ct5p-hightpu-4t", 4, "2x2x4"),
    "v5p-384": ("ct5p-hightpu-4t", 48, "4x4x12"), "v5p-6144": ("ct5p-hightpu-4t", 768, "12x16x16"),
    "v6e-1": ("ct6e-standard-1t", 1, "1x1"), "v6e-4": ("ct6e-standard-4t", 1, "2x2"),
    "v6e-8": ("ct6e-standard-8t", 1, "2x4"), "v6e-16": ("ct6e-standard-4t", 4, "4x4"),
    "v6e-32": ("ct6e-standard-4t", 8, "4x8"), "v6e-64": ("ct6e-standard-4t", 16, "8x8"),
    "v6e-128": ("ct6e-standard-4t", 32, "8x16"), "v6e-256": ("ct6e-standard-4t", 64, "16x16"),
    "tpu7x-8": ("tpu7x-standard-4t", 1, "2x2x1"), "tpu7x-16": ("tpu7x-standard-4t", 2, "2x2x2"),
    "tpu7x-128": ("tpu7x-standard-4t", 16, "4x4x4"), "tpu7x-256": ("tpu7x-standard-4t", 32, "4x4x8"),
    "tpu7x-32": ("tpu7x-standard-4t", 4, "2x2x4"), "tpu7x-64": ("tpu7x-standard-4t", 8, "2x4x4"),
    "tpu7x-512": ("tpu7x-standard-4t", 64, "4x8x8"), "tpu7x-1024": ("tpu7x-standard-4t", 128, "8x8x8"),
    "tpu7x-2048": ("tpu7x-standard-4t", 256, "8x8x16"), "tpu7x-4096": ("tpu7x-standard-4t", 512, "8x16x16"),
    "tpu7x-8192": ("tpu7x-standard-4t", 1024, "16x16x16"),
}


@pytest.mark.parametrize("name", sorted(DOCS))
def test_shape_matches_the_docs(name: str) -> None:
    shape = mig_shape(parse(name))
    assert (shape.machine_type, shape.vms, shape.topology) == DOCS[name]


#: Every accelerator type the records offer as a MIG.
MIG_TYPES = [f"{g.prefix}-{n}" for g in generations.on_path("mig") if g.mig for n in g.mig.shapes]


@pytest.mark.parametrize("name", sorted(MIG_TYPES))
def test_every_shape_is_consistent(name: str) -> None:
    topo = parse(name)
    shape = mig_shape(topo)
    x, y, z = shape.dims
    assert x * y * z == topo.chips == shape.vms * shape.chips_per_vm
    assert shape.vms == topo.hosts
    hx, hy, hz = (int(v) for v in shape.host_bounds.split(","))
    cx, cy, cz = (int(v) for v in shape.chips_per_host_bounds.split(","))
    assert (hx * cx, hy * cy, hz * cz) == (x, y, z) and hx * hy * hz == shape.vms
    assert shape.accelerator_topology == (shape.topology if shape.vms > 1 else "")
    assert shape.image_project == "ubuntu-os-accelerator-images"
    assert shape.image_family.endswith("tpu7x" if topo.generation == "tpu7x" else "v5e-v5p-v6e")


@pytest.mark.parametrize("name", ["v4-32", "v5litepod-16", "v3-8"])
def test_generations_without_mig_are_refused(name: str) -> None:
    with pytest.raises(BadInput, match="v5p, v6e, tpu7x only"):
        mig_shape(parse(name))


def test_undocumented_shape_is_refused() -> None:
    # Every size parse() accepts for v5p/v6e/tpu7x has a row now; a size that only a future
    # record's sizes would let through must still be refused, not guessed.
    from builder.facts.topology import Topology

    with pytest.raises(BadInput, match="no documented MIG slice shape; use one of v5p-8"):
        mig_shape(Topology("v5p-24", "v5p", 12, 24, 3))


def test_every_offered_size_has_a_shape() -> None:
    assert [g.name for g in generations.on_path("mig")] == ["v5p", "v6e", "tpu7x"]
    for gen in generations.on_path("mig"):
        assert gen.mig is not None and sorted(gen.mig.shapes) == list(gen.sizes), gen.name


# ---- config ----

def _fails(make_env: Callable[..., Path], **over: str | None) -> ConfigError:
    with pytest.raises(ConfigError) as exc:
        load(make_env(V6E, **over))
    return exc.value


def test_examples_load_as_mig() -> None:
    s = load(V6E)
    assert (s.arch, s.provisioning, s.mig_shape.vms, s.runtime_version) == ("mig", "spot", 4, "")
    t = load(TPU7X)
    assert (t.mig_shape.machine_type, t.mig_shape.topology, t.provisioning) == ("tpu7x-standard-4t", "4x4x4", "reservation")


@pytest.mark.parametrize("over,key,what", [
    ({"TPU_ACCELERATOR_TYPE": "v4-32"}, "TPU_ACCELERATOR_TYPE", "v5p, v6e, tpu7x only"),
    ({"TPU_ACCELERATOR_TYPE": "v5p-24"}, "TPU_ACCELERATOR_TYPE", "not a size Cloud TPU offers"),
    ({"TPU_RESERVED": "true"}, "TPU_RESERVED", 'means reservation, but TPU_PROVISIONING is "spot"'),
    ({"TPU_RESERVATION": "my-res"}, "TPU_RESERVATION", "names a reservation but the TPU is spot"),
    ({"TPU_PROVISIONING": None, "TPU_PREEMPTIBLE": "true"}, "TPU_PREEMPTIBLE", "preemptible is not offered for v6e"),
    ({"TPU_PROVISIONING": "preemptible"}, "TPU_PROVISIONING", "preemptible is not offered for v6e"),
    ({"TPU_QUEUED": "true"}, "TPU_QUEUED", "not the Compute Engine VMs of a MIG"),
    ({"ZONE": "us-west4-a"}, "ZONE", "v6e-16 is not offered in us-west4-a"),
    ({"TPU_ACCELERATOR_TYPE": "tpu7x-8"}, "ZONE", "tpu7x-8 is not offered in us-east5-b; it is offered in us-central1-c"),
    ({"TPU_RUNTIME_VERSION": "v2-alpha-tpuv6e"}, "TPU_RUNTIME_VERSION", "have no TPU runtime"),
    ({"MIG_EXTERNAL_IP": "true"}, "MIG_EXTERNAL_IP", "TPU_EXTERNAL_IPS"),
    ({"SHARED_PD_DISK_ATTACH": "true", "SHARED_PD_DISK_TYPE": "pd-balanced"}, "SHARED_PD_DISK_TYPE",
     "v6e TPU VMs attach only Hyperdisk ML"),
    ({"SHARED_PD_DISK_ATTACH": "true", "TPU_ACCELERATOR_TYPE": "v5p-32", "ZONE": "us-east5-a",
      "SHARED_PD_DISK_TYPE": "pd-ssd"}, "SHARED_PD_DISK_TYPE", "v5p TPU VMs attach only Balanced Persistent Disk"),
    ({"SHARED_PD_DISK_ATTACH": "true", "TPU_ACCELERATOR_TYPE": "v5p-32", "ZONE": "us-east5-a",
      "SHARED_PD_DISK_TYPE": "hyperdisk-ml"}, "SHARED_PD_DISK_TYPE", "v5p TPU VMs attach only Balanced Persistent Disk"),
])
def test_bad_mig_settings_are_one_located_line(make_env: Callable[..., Path], over: dict[str, str | None],
                                               key: str, what: str) -> None:
    err = _fails(make_env, **over)
    assert err.key == key and what in str(err) and err.line


# ---- dispatch ----

def test_flags_mean_access_and_slice() -> None:
    s = load(V6E)
    assert module_dir(s, "tpu") == "modules/tpu_mig_access" and module_dir(s, "mig") == "modules/tpu_mig"
    assert make_plan(s, "update", tpu=True).modules == ("tpu",)
    assert make_plan(s, "update", mig=True).modules == ("mig",)
    both = make_plan(s, "update", tpu=True, mig=True)
    # the slice reads nothing of its access: beside it, waiting only for the account (tpu-identity)
    assert both.modules == ("tpu", "mig") and both.get("mig").after == ()
    create = make_plan(s, "create")
    # the slice first: its plan waits for nothing, its apply for its access's account only (the
    # account its VMs run as), its resize for the roles and firewall rules (tpu-apply); its attach
    # step waits for the disk (and its seed)
    assert s.shared_pd_attach and create.get("mig").after == ()
    for plan in (both, create):
        waits = {st.id: st.after for st in plan.steps}
        assert waits["tpu-identity"] == () and "tpu-identity" in waits["tpu-plan"]
        assert not [w for w in waits["mig-plan"] if w.startswith("tpu-")]
        assert [w for w in waits["mig-apply"] if w.startswith("tpu-")] == ["tpu-identity"]
        assert waits["mig-resize"] == ("mig-apply", "tpu-apply")
    assert waits["mig-attach"] == ("mig-resize", "shared_pd-apply", "shared_pd-seed")
    # scoped to the slice: its access is not applied, its account exists, nothing of tpu is waited for
    alone = {st.id: st.after for st in make_plan(s, "update", mig=True).steps}
    assert "tpu-identity" not in alone and alone["mig-apply"] == ("mig-plan", "check-capacity", "mig-prepare")
    assert make_plan(s, "destroy").modules[:2] == ("mig", "tpu")
    assert make_plan(s, "destroy", tpu=True, mig=True).modules == ("mig", "tpu")
    with pytest.raises(BadInput, match="cut off the running TPU VMs"):
        request.parse(s, "destroy", tpu=True)


# ---- the resize pipeline ----

def _build(config: dict) -> object:
    from google.cloud.devtools import cloudbuild_v1
    return cloudbuild_v1.Build.from_json(json.dumps(config))


@pytest.mark.parametrize("flags", [{"mig": True}, {}, {"tpu": True, "mig": True}])
def test_slice_steps_run_guard_drain_apply_resize(flags: dict[str, bool], make_env: Callable[..., Path]) -> None:
    """break-before-make: the running group is drained (when its topology changes), then changed."""
    s = load(make_env(V6E, TPU_REPLACE="break-before-make"))
    config = render(s, make_plan(s, "update", **flags))
    build = _build(config)
    ids = [st.id for st in build.steps]
    order = ["mig-plan", "mig-guard", "mig-drain", "mig-apply", "mig-resize"]
    assert [i for i in ids if i in order] == order
    wait = {st.id: list(st.wait_for) for st in build.steps}
    # an update that applies the dataset disk too seeds it: the slice is applied and resized beside
    # the seed, and mig-attach gives every VM the disk after both
    seeded = ["shared_pd-seed"] if "shared_pd-seed" in ids else []
    # the capacity check runs beside the guard; the drain and the apply wait for it; the apply runs
    # beside the drain and waits for its verdict unless its plan only creates (planning.plan.asks_first)
    disk = ["shared_pd-apply"] if "shared_pd-apply" in ids else []
    # with its access applied too, the apply waits for the account, the resize for the roles and firewall
    access = "tpu-apply" in ids
    assert wait["mig-drain"] == ["mig-guard", "check-capacity"]
    assert wait["mig-apply"] == ["mig-plan", "check-capacity", *(["tpu-identity"] if access else [])]
    assert '"$W/plans/mig.drain.ok"' in step_script(config["steps"][ids.index("mig-apply")], BUILTINS)
    assert wait["mig-resize"] == ["mig-apply", *(["tpu-apply"] if access else [])]
    assert wait["mig-attach"] == ["mig-resize", *disk, *seeded]
    assert "mig-attach" in wait["finalize"] and ids.index("mig-resize") < ids.index("mig-attach")
    # nothing of the drain/resize touches Filestore or the disk
    for sid in ("mig-drain", "mig-resize"):
        text = step_script(config["steps"][ids.index(sid)], BUILTINS)
        assert "filestore" not in text and "disks" not in text


def test_make_before_break_makes_a_second_group_and_drains_nothing() -> None:
    """The default on mig: apply makes the new group beside the running one, resize and attach
    bring it up, swap checks it, checkpoint/release/resume move the training (roberta) and delete
    the old group; no drain (the running group is never emptied before its replacement runs)."""
    s = load(V6E)
    assert s.replace == "make-before-break"
    config = render(s, make_plan(s, "update", mig=True))
    ids = [st.id for st in _build(config).steps]
    order = ["mig-plan", "mig-guard", "mig-apply", "mig-resize", "mig-attach", "mig-swap", "mig-checkpoint",
             "mig-release", "mig-resume"]
    assert [i for i in ids if i.startswith("mig-") and i != "mig-prepare"] == order and "mig-drain" not in ids
    wait = {st["id"]: st.get("waitFor", []) for st in config["steps"]}
    assert wait["mig-swap"] == ["mig-attach"] and wait["mig-release"] == ["mig-checkpoint"]
    assert "mig-prepare" in wait["mig-apply"]  # the move's scripts are printed before anything is made
    swap = step_script(config["steps"][ids.index("mig-swap")], BUILTINS)
    assert "list-instances" in swap and "mig-release deletes" in swap


def test_calendar_mode_stays_break_before_make() -> None:
    s = load(EXAMPLES / "mig-v6e-32-calendar.env")
    ids = [st.id for st in make_plan(s, "update", mig=True).steps]
    assert s.replace == "break-before-make" and "mig-drain" in ids and "mig-swap" not in ids


def test_no_slice_steps_without_the_slice() -> None:
    s = load(V6E)
    ids = [st["id"] for st in render(s, make_plan(s, "update", tpu=True))["steps"]]
    assert "mig-drain" not in ids and "mig-resize" not in ids
    ids = [st["id"] for st in render(s, make_plan(s, "destroy", tpu=True, mig=True))["steps"]]
    assert "mig-drain" not in ids and "mig-resize" not in ids


GCLOUD = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$STUB_DIR/calls.log"
case "$*" in
  *"managed list "*) printf '%s\\n' "${GROUP_EXISTS:-}" ;;
  *"resourcePolicies.workloadPolicy"*) printf '%s\\n' "${CURRENT_POLICY:-}" ;;
  *"value(targetSize)"*) printf '%s\\n' "${TARGET_SIZE:-4}" ;;
  *"list-instances"*) printf '%s\\n' ${INSTANCES:-} ;;
  *"wait-until"*) if [ -n "${WAIT_FAILS:-}" ]; then echo "ERROR: (gcloud) timed out" >&2; exit 1; fi ;;
esac
"""


def _run_step(tmp_path: Path, accel: str, make_env: Callable[..., Path], step_id: str, *, mode: str = "break-before-make",
              rc: int = 0, provisioning: str = "", **env: str) -> tuple[str, list[str]]:
    s = load(make_env(V6E, TPU_ACCELERATOR_TYPE=accel, TPU_REPLACE=mode,
                      **({"TPU_PROVISIONING": provisioning} if provisioning else {})))
    config = render(s, make_plan(s, "update", mig=True))
    [step] = [st for st in config["steps"] if st["id"] == step_id]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "gcloud").write_text(GCLOUD)
    (bin_dir / "gcloud").chmod(0o755)
    log = tmp_path / "calls.log"
    log.unlink(missing_ok=True)
    proc = subprocess.run(["bash", "-c", step_script(step, BUILTINS)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_DIR": str(tmp_path),
                               "WORKSPACE": str(tmp_path), **env})
    assert proc.returncode == rc, proc.stderr
    return proc.stdout + proc.stderr, log.read_text().splitlines() if log.exists() else []


def test_topology_change_drains_the_group(tmp_path: Path, make_env: Callable[..., Path]) -> None:
    """v6e-16 → v6e-64: the group runs policy tpu-v6e-slice-4x4; the new one is ...-8x8."""
    out, calls = _run_step(tmp_path, "v6e-64", make_env, "mig-drain", GROUP_EXISTS="tpu-v6e-slice",
                           CURRENT_POLICY="tpu-v6e-slice-4x4")
    assert "training is interrupted; 4 VMs are deleted now and 16 VMs recreated" in out
    resize = [c for c in calls if " resize " in f" {c} "]
    assert resize and "--size=0" in resize[0]
    assert any("wait-until" in c and "--stable" in c for c in calls)


@pytest.mark.parametrize("env", [{"GROUP_EXISTS": ""}, {"GROUP_EXISTS": "tpu-v6e-slice", "CURRENT_POLICY": "tpu-v6e-slice-8x8"}])
def test_same_topology_or_new_group_is_not_drained(tmp_path: Path, make_env: Callable[..., Path], env: dict[str, str]) -> None:
    out, calls = _run_step(tmp_path, "v6e-64", make_env, "mig-drain", **env)
    assert not [c for c in calls if "resize" in c] and "interrupted" not in out


def test_resize_sets_the_slice_size_and_waits(tmp_path: Path, make_env: Callable[..., Path]) -> None:
    """After a drain (target size 0) the bulk group grows from 0 to the slice in one resize."""
    out, calls = _run_step(tmp_path, "v6e-64", make_env, "mig-resize", TARGET_SIZE="0")
    calls = [c for c in calls if "list-instances" not in c]  # V6E is Spot: it looks for stopped VMs first
    assert "describe tpu-v6e-slice" in calls[0] and "value(targetSize)" in calls[0]
    assert "resize tpu-v6e-slice" in calls[1] and "--size=16" in calls[1]
    assert "wait-until tpu-v6e-slice" in calls[2] and "stable at 16 VMs" in out


def test_a_bulk_group_at_another_size_goes_through_zero(tmp_path: Path, make_env: Callable[..., Path]) -> None:
    """Bulk mode grows a group only from 0 (about-bulk-mode): 4 → 0, then 0 → 16."""
    out, calls = _run_step(tmp_path, "v6e-64", make_env, "mig-resize", TARGET_SIZE="4")
    sizes = [c.split("--size=")[1] for c in calls if " resize " in f" {c} "]
    assert sizes == ["0", "16"], calls
    assert "bulk mode grows a group only from 0, so it goes to 0 first" in out and "stable at 16 VMs" in out


def test_a_whole_group_is_not_resized(tmp_path: Path, make_env: Callable[..., Path]) -> None:
    out, calls = _run_step(tmp_path, "v6e-64", make_env, "mig-resize", TARGET_SIZE="16")
    assert not [c for c in calls if " resize " in f" {c} "] and "stable at 16 VMs" in out


def test_a_stopped_spot_slice_is_restarted_through_zero(tmp_path: Path, make_env: Callable[..., Path]) -> None:
    """Google's TPU Spot page: preempted VMs stop; a Spot slice restarts by deleting and recreating."""
    out, calls = _run_step(tmp_path, "v6e-64", make_env, "mig-resize", provisioning="spot", TARGET_SIZE="16",
                           INSTANCES="RUNNING TERMINATED TERMINATED RUNNING")
    sizes = [c.split("--size=")[1] for c in calls if " resize " in f" {c} "]
    assert sizes == ["0", "16"] and "2 VMs of tpu-v6e-slice stopped (Spot preemption)" in out, (calls, out)
    out, calls = _run_step(tmp_path, "v6e-64", make_env, "mig-resize", provisioning="spot", TARGET_SIZE="16",
                           INSTANCES="RUNNING RUNNING")
    assert not [c for c in calls if " resize " in f" {c} "], calls


def test_resize_of_a_second_group_resizes_the_one_apply_named(tmp_path: Path, make_env: Callable[..., Path]) -> None:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "mig.name").write_text("tpu-v6e-slice-b\n")
    out, calls = _run_step(tmp_path, "v6e-64", make_env, "mig-resize", mode="make-before-break", TARGET_SIZE="0")
    calls = [c for c in calls if "list-instances" not in c]
    assert "resize tpu-v6e-slice-b" in calls[1] and "--size=16" in calls[1]
    assert "wait-until tpu-v6e-slice-b" in calls[2] and "group tpu-v6e-slice-b is stable at 16 VMs" in out


def test_a_second_group_that_never_stabilises_leaves_the_old_one_running(tmp_path: Path,
                                                                         make_env: Callable[..., Path]) -> None:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "mig.name").write_text("tpu-v6e-slice-b\n")
    out, _ = _run_step(tmp_path, "v6e-64", make_env, "mig-resize", mode="make-before-break", rc=1, WAIT_FAILS="1",
                       TARGET_SIZE="0")
    (line,) = [x for x in out.splitlines() if x.startswith("tpubuild:")]
    assert "tpu-v6e-slice-b did not come up whole" in line and "keeps running and nothing was deleted" in line


def test_guard_announces_a_topology_change() -> None:
    from builder.planning.guard import evaluate
    doc = {"format_version": "1.2", "applyable": True, "errored": False, "resource_changes": [
        {"address": "google_compute_resource_policy.slice[0]", "type": "google_compute_resource_policy",
         "mode": "managed", "change": {"actions": ["create", "delete"], "replace_paths": [["name"]]}},
        {"address": "google_compute_instance_group_manager.slice", "type": "google_compute_instance_group_manager",
         "mode": "managed", "change": {"actions": ["update"]}},
    ]}
    decision = evaluate(doc, "mig", "update", allow_data_loss=False)
    assert decision.proceed
    assert any("training is interrupted" in w and "mig-drain" in w for w in decision.warnings)


def test_hosts_in_worker_order_and_ssh_through_iap() -> None:
    from builder.render import mig_hosts
    s = load(V6E)
    assert mig_hosts.list_argv(s)[:6] == ["gcloud", "compute", "instance-groups", "managed", "list-instances",
                                          "tpu-v6e-slice"]
    assert mig_hosts.hosts("tpu-v6e-slice-q7xd\ntpu-v6e-slice-a2bc\n\ntpu-v6e-slice-a2bc\n") == [
        "tpu-v6e-slice-a2bc", "tpu-v6e-slice-q7xd"]
    argv = mig_hosts.ssh_argv(s, "tpu-v6e-slice-a2bc", "bash -lc 'train.sh; echo $HOME'")
    assert "--tunnel-through-iap" in argv and argv[-1] == "--command=bash -lc 'train.sh; echo $HOME'"


# ---- disks (the records' shared_pd_types and mig boot_disk_type) ----

def test_shared_pd_attaches_to_v5p_and_boot_disks_follow_the_generation(make_env: Callable[..., Path]) -> None:
    from builder.inputs.tfvars import for_module

    v5p = load(make_env(V6E, TPU_ACCELERATOR_TYPE="v5p-32", ZONE="us-east5-a", SHARED_PD_DISK_ATTACH="true"))
    tv = for_module(v5p, "mig")
    assert (tv["shared_pd_attach"], tv["boot_disk_type"], tv["machine_type"]) == (True, "pd-balanced", "ct5p-hightpu-4t")
    assert for_module(load(V6E), "mig")["boot_disk_type"] == "hyperdisk-balanced"
    # the dataset disk's type left out is the record's: pd-balanced on v5p, Hyperdisk ML on v6e
    assert for_module(v5p, "shared_pd")["type"] == "pd-balanced"
    assert for_module(load(V6E), "shared_pd")["type"] == "hyperdisk-ml"
    assert for_module(load(TPU7X), "mig")["boot_disk_type"] == "hyperdisk-balanced"
