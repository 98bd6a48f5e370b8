"""Make-before-break with a MODEL (TPU_REPLACE): the build moves the training with the slice. The
rendered steps run in the build's order, each under its image's shell: ``tpu-prepare`` (the builder
image: the real ``tpubuild stop --probe``, ``tpubuild stop`` and ``tpubuild train roberta`` print the
scripts), ``tpu-apply`` (the new slot beside the old), ``tpu-swap``, ``tpu-checkpoint`` (on the old
slot: wait for the next checkpoint, stop), ``tpu-release`` (delete the old), ``tpu-resume`` (launch
on the new one). Terraform and gcloud are stand-ins that keep a journal of what happened to which
slice: which TPU VM each ssh reached (the scripts find it themselves: models/hosts.py, with
TPUBUILD_SLICE picking the old slot while both exist).

(a) training on the old slice: a new checkpoint, then the stop on the old one, the delete, the launch
on the new one, in that order; (b) nothing training: no wait, no stop, no launch; (c) no checkpoint
within the wait: stopped anyway, with one line saying what may be lost; (d) the launch fails: one
line naming ``tpubuild train roberta``, exit 1, after the old slice was deleted (its checkpoint is
on Filestore); (e) a probe that cannot reach the old slice fails tpu-checkpoint with one line: nothing is
deleted.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from builder.config import load_text
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import REPO, SHIPPED
from tests.support.pipeline import step_script
from tests.support import swap_steps

OLD, NEW = "tpu-tpu-dev1", "tpu-tpu-dev1-b"
ORDER = ("tpu-prepare", "tpu-apply", "tpu-swap", "tpu-checkpoint", "tpu-release", "tpu-resume")

TERRAFORM = swap_steps.slot_terraform(OLD, NEW)

#: gcloud (swap_steps.handover_gcloud): list prints the live TPU VMs; describe says READY; a host is
#: its TPU VM.
GCLOUD = swap_steps.handover_gcloud("""if "list" in argv:
    print("\\n".join(live))
    sys.exit(0)
if "describe" in argv:
    print("READY")
    sys.exit(0)
""", slice_of="target", group="compute.tpus.tpu-vm")


@pytest.fixture(scope="module")
def steps() -> dict[str, tuple[str, str]]:
    """The shipped v3-32 → v3-128 story (MODEL=roberta), rendered: the six steps by id."""
    text = SHIPPED.read_text().replace('TPU_ACCELERATOR_TYPE="v3-32"', 'TPU_ACCELERATOR_TYPE="v3-128"')
    settings = load_text(text, REPO / SHIPPED.name)
    assert settings.replace == "make-before-break" and settings.model == "roberta"
    config = render(settings, make_plan(settings, "update", tpu=True))
    by_id = {st["id"]: st for st in config["steps"]}
    # prepare from the build's start (off the critical path), before anything is made; the checkpoint
    # between the swap and the release; resume last
    assert by_id["tpu-prepare"]["waitFor"] == ["tpubuild-image"]
    assert by_id["tpu-apply"]["waitFor"] == ["tpu-plan", "check-capacity", "tpu-prepare"]  # beside its guard
    assert by_id["tpu-checkpoint"]["waitFor"] == ["tpu-swap"] and by_id["tpu-release"]["waitFor"] == ["tpu-checkpoint"]
    assert by_id["tpu-resume"]["waitFor"] == ["tpu-release"]
    assert by_id["tpu-prepare"]["name"].endswith(":" + by_id["tpu-guard"]["name"].rsplit(":", 1)[1])  # builder image
    return {sid: (by_id[sid]["entrypoint"], step_script(by_id[sid])) for sid in ORDER}


def _sandbox(tmp: Path) -> dict[str, str]:
    """The build's /workspace holds the source: values.env asks for the v3-128."""
    values = SHIPPED.read_text().replace('TPU_ACCELERATOR_TYPE="v3-32"', 'TPU_ACCELERATOR_TYPE="v3-128"')
    return swap_steps.handover_sandbox(tmp, "tpu", "tpu_vm", TERRAFORM, GCLOUD, values=values, old=OLD)


def _run(steps: dict[str, tuple[str, str]], env: dict[str, str], **extra: str
         ) -> tuple[dict[str, subprocess.CompletedProcess[str]], list[str]]:
    return swap_steps.run_in_workspace(steps, ORDER, env, **extra)


_events = swap_steps.events


def _training(tmp: Path) -> dict[str, str]:
    env = _sandbox(tmp)
    Path(env["JOURNAL_DIR"], f"training-{OLD}").write_text("")
    return env


def test_training_waits_for_a_checkpoint_stops_on_the_old_then_resumes_on_the_new(
        steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _training(tmp_path), STANDIN_CKPT_AFTER="2")
    assert [p.returncode for p in done.values()] == [0] * len(ORDER), {k: p.stderr for k, p in done.items()}
    assert _events(journal) == [f"created {NEW}", f"stopped on {OLD}", f"deleted {OLD}", f"launched on {NEW}"]
    # the stop came after the checkpoint moved: the third probe (the first saw 1000, the second 1000)
    assert journal.index(f"stopped on {OLD}") > [i for i, line in enumerate(journal) if line == f"probe {OLD}"][2]
    assert all(line == f"probe {OLD}" for line in journal if line.startswith("probe "))
    assert "wrote a checkpoint" in done["tpu-checkpoint"].stdout
    assert (tmp_path / "workspace" / "plans" / "tpu.training").read_text() == "running\n"
    assert "resumed on the new slice" in done["tpu-resume"].stdout
    assert "tpu-checkpoint stops roberta" in done["tpu-swap"].stdout


def test_nothing_training_no_wait_no_stop_no_resume(steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _sandbox(tmp_path), TPUBUILD_DRAIN_WAIT_S="3600", TPUBUILD_DRAIN_POLL_S="3600")
    assert [p.returncode for p in done.values()] == [0] * len(ORDER), {k: p.stderr for k, p in done.items()}
    assert _events(journal) == [f"created {NEW}", f"deleted {OLD}"]
    assert [line for line in journal if line.startswith("probe ")] == [f"probe {OLD}"]
    assert "not training" in done["tpu-checkpoint"].stdout
    assert "nothing to resume" in done["tpu-resume"].stdout


def test_no_checkpoint_within_the_wait_stops_anyway_and_says_what_is_lost(
        steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _training(tmp_path), STANDIN_CKPT_AFTER="1000", TPUBUILD_DRAIN_WAIT_S="0")
    assert [p.returncode for p in done.values()] == [0] * len(ORDER)
    assert _events(journal) == [f"created {NEW}", f"stopped on {OLD}", f"deleted {OLD}", f"launched on {NEW}"]
    (line,) = [x for x in done["tpu-checkpoint"].stdout.splitlines() if "no new checkpoint" in x]
    assert "stopping it anyway: up to the " in line and "s since its last checkpoint of training is lost" in line
    assert "TPUBUILD_DRAIN_WAIT_S" in line


def test_a_launch_that_fails_fails_the_build_with_one_line(steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _training(tmp_path), STANDIN_LAUNCH_FAILS="1")
    assert [p.returncode for p in done.values()] == [0, 0, 0, 0, 0, 1]
    ours = [x for x in done["tpu-resume"].stderr.splitlines() if x.startswith("tpubuild: tpu:")]
    assert len(ours) == 1 and "run tpubuild train roberta" in ours[0] and "after 2 tries" in ours[0]
    assert "launched on" not in "\n".join(journal)


def test_a_probe_that_cannot_reach_the_old_slice_deletes_nothing(
        steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _training(tmp_path), STANDIN_PROBE_FAILS="1")
    assert [p.returncode for p in done.values()] == [0, 0, 0, 1], "the build stops at tpu-checkpoint"
    ours = [x for x in done["tpu-checkpoint"].stderr.splitlines() if x.startswith("tpubuild: tpu:")]
    assert len(ours) == 1 and f"{OLD} keeps running with its training and nothing was deleted" in ours[0]
    assert _events(journal) == [f"created {NEW}"]
    assert not any("release=true" in line for line in journal)
