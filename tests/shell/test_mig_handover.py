"""Make-before-break with a MODEL on the Compute Engine path (TPU_ARCH="mig"): the build moves the
training from the running MIG to the second one, across a size change (v6e-16, 4 VMs → v6e-32, 8
VMs). The rendered steps run in the build's order, each under its image's shell: ``mig-prepare``
(the real ``tpubuild stop --probe``, ``tpubuild stop`` and ``tpubuild train roberta`` print the
scripts), ``mig-apply`` (the second group beside the first), ``mig-resize``, ``mig-swap``,
``mig-checkpoint`` (on the OLD group, whose size is not values.env's: the scripts take its own
VMs, models/slots.py), ``mig-release`` and ``mig-resume`` (on every VM of the new group).
Terraform and gcloud are stand-ins that keep a journal of which VM each ssh reached; the host
scripts find the groups themselves (models/hosts.py, TPUBUILD_SLICE picking the old one).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from builder.config import load_text
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, REPO
from tests.support.pipeline import step_script
from tests.support import swap_steps

OLD, NEW = "tpu-v6e-slice", "tpu-v6e-slice-b"
SIZES = {OLD: 4, NEW: 8}
ORDER = ("mig-prepare", "mig-apply", "mig-resize", "mig-swap", "mig-checkpoint", "mig-release", "mig-resume")
VALUES = (EXAMPLES / "mig-v6e-16-spot.env").read_text().replace(
    'TPU_ACCELERATOR_TYPE="v6e-16"', 'TPU_ACCELERATOR_TYPE="v6e-32"').replace(
    'SHARED_PD_DISK_ATTACH="true"', 'SHARED_PD_DISK_ATTACH="false"')

TERRAFORM = swap_steps.slot_terraform(OLD, NEW)

#: gcloud (swap_steps.handover_gcloud): `list` prints the live groups, `list-instances G` G's VMs
#: (G-0000...) or their states; a host's slice is its group.
GCLOUD = swap_steps.handover_gcloud("""sizes = {"tpu-v6e-slice": 4, "tpu-v6e-slice-b": 8}
if argv[:4] == ["compute", "instance-groups", "managed", "list"]:
    print("\\n".join(live))
    sys.exit(0)
if argv[:4] == ["compute", "instance-groups", "managed", "list-instances"]:
    group = argv[4]
    if group not in live:
        print(f"ERROR: (gcloud) NOT_FOUND: {group}", file=sys.stderr)
        sys.exit(1)
    status = any("instanceStatus" in a for a in argv)
    print("\\n".join("RUNNING NONE" if status else f"{group}-{i:04d}" for i in range(sizes[group])))
    sys.exit(0)
""", slice_of='target.rsplit("-", 1)[0]', group="compute")


@pytest.fixture(scope="module")
def steps() -> dict[str, tuple[str, str]]:
    settings = load_text(VALUES, EXAMPLES / "mig-v6e-16-spot.env")
    assert settings.replace == "make-before-break" and settings.model == "roberta" and settings.hosts == 8
    config = render(settings, make_plan(settings, "update", mig=True))
    by_id = {st["id"]: st for st in config["steps"]}
    assert [by_id[sid]["waitFor"] for sid in ORDER[3:]] == [["mig-resize"], ["mig-swap"], ["mig-checkpoint"],
                                                            ["mig-release"]]
    return {sid: (by_id[sid]["entrypoint"], step_script(by_id[sid])) for sid in ORDER}


def _sandbox(tmp: Path, *, training: bool) -> dict[str, str]:
    env = swap_steps.handover_sandbox(tmp, "mig", "tpu_mig", TERRAFORM, GCLOUD, values=VALUES, old=OLD)
    if training:
        Path(env["JOURNAL_DIR"], f"training-{OLD}").write_text("")
    return env


def _run(steps: dict[str, tuple[str, str]], env: dict[str, str], **extra: str
         ) -> tuple[dict[str, subprocess.CompletedProcess[str]], list[str]]:
    return swap_steps.run_in_workspace(steps, ORDER, env, **extra)


_events = swap_steps.events


def test_training_moves_from_the_old_group_of_4_to_the_new_group_of_8(steps, tmp_path: Path) -> None:
    done, journal = _run(steps, _sandbox(tmp_path, training=True), STANDIN_CKPT_AFTER="2")
    assert [p.returncode for p in done.values()] == [0] * len(ORDER), {k: p.stderr for k, p in done.items()}
    old_vms = [f"{OLD}-{i:04d}" for i in range(4)]
    new_vms = [f"{NEW}-{i:04d}" for i in range(8)]
    assert _events(journal) == [f"created {NEW}", *(f"stopped on {vm}" for vm in old_vms), f"deleted {OLD}",
                                *(f"launched on {vm}" for vm in new_vms)]
    # the probe reached the old group's worker 0 only, and the stop came after its checkpoint moved
    assert {line for line in journal if line.startswith("probe ")} == {f"probe {OLD}-0000"}
    assert "wrote a checkpoint" in done["mig-checkpoint"].stdout
    assert "every VM of tpu-v6e-slice-b runs (8 of 8)" in done["mig-swap"].stdout
    assert "resumed on the new slice" in done["mig-resume"].stdout


def test_nothing_training_on_the_old_group_no_stop_no_resume(steps, tmp_path: Path) -> None:
    done, journal = _run(steps, _sandbox(tmp_path, training=False))
    assert [p.returncode for p in done.values()] == [0] * len(ORDER), {k: p.stderr for k, p in done.items()}
    assert _events(journal) == [f"created {NEW}", f"deleted {OLD}"]
    assert "not training" in done["mig-checkpoint"].stdout and "nothing to resume" in done["mig-resume"].stdout
