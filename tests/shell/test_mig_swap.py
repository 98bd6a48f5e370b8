"""Make-before-break on the Compute Engine path (TPU_ARCH="mig", TPU_REPLACE's default there) as the
rendered steps run it: ``mig-apply`` (creates the second MIG beside the running one and leaves the
slots for the next steps), ``mig-resize`` (waits until the new group is stable), ``mig-swap`` (every
VM of the new group runs) and ``mig-release`` (deletes the old group), each under its image's shell,
with stand-ins for terraform and gcloud that keep a journal of what happened to which group.

Happy path: create new → new stable → new whole → old deleted, in that order. A new group that
never becomes whole, or never stable: the build stops with one ``tpubuild:`` line on stderr, and the
old group is never touched. A create that fails (no capacity): mig-apply fails with one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builder.config import load_text
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES
from tests.support import swap_steps
from tests.support.pipeline import step_script

TERRAFORM = swap_steps.slot_terraform("tpu-v6e-slice", "tpu-v6e-slice-b",
                                   "Error: Error waiting for Creating InstanceGroupManager: ZONE_RESOURCE_POOL_EXHAUSTED")
#: gcloud: the new group lists STANDIN_RUNNING (8 unless told) VMs RUNNING with nothing under way;
#: its wait-until fails when STANDIN_UNSTABLE is set (mig-resize's look for stopped Spot VMs, which
#: reads the status alone, finds none).
GCLOUD = swap_steps.gcloud(r"""case "$*" in
  *"wait-until tpu-v6e-slice-b"*)
    if [ -n "${STANDIN_UNSTABLE:-}" ]; then echo "ERROR: (gcloud.compute.instance-groups.managed.wait-until) Timeout while waiting for group to become stable." >&2; exit 1; fi
    echo "tpu-v6e-slice-b is stable" >> "$JOURNAL_DIR/journal" ;;
  *"list-instances tpu-v6e-slice-b"*currentAction*)
    for _ in $(seq 1 "${STANDIN_RUNNING-8}"); do echo "RUNNING NONE"; done
    echo "STAGING CREATING"
    echo "tpu-v6e-slice-b has ${STANDIN_RUNNING-8} running" >> "$JOURNAL_DIR/journal" ;;
  *delete*) echo "deleted by gcloud" >> "$JOURNAL_DIR/journal" ;;
esac
""")
ORDER = ("mig-apply", "mig-resize", "mig-swap", "mig-release")


@pytest.fixture(scope="module")
def steps() -> dict[str, tuple[str, str]]:
    """v6e-16 → v6e-32 on mig-v6e-16-spot.env with MODEL empty and no dataset disk, rendered."""
    text = (EXAMPLES / "mig-v6e-16-spot.env").read_text()
    text = text.replace('TPU_ACCELERATOR_TYPE="v6e-16"', 'TPU_ACCELERATOR_TYPE="v6e-32"')
    text = text.replace('MODEL="roberta"', 'MODEL=""').replace('SHARED_PD_DISK_ATTACH="true"', 'SHARED_PD_DISK_ATTACH="false"')
    settings = load_text(text, EXAMPLES / "mig-v6e-16-spot.env")
    assert settings.replace == "make-before-break" and settings.hosts == 8 and not settings.model
    config = render(settings, make_plan(settings, "update", mig=True))
    by_id = {st["id"]: st for st in config["steps"]}
    assert [by_id[sid]["waitFor"] for sid in ORDER[1:]] == [["mig-apply"], ["mig-resize"], ["mig-swap"]]
    assert "mig-drain" not in by_id
    return {sid: (by_id[sid]["entrypoint"], step_script(by_id[sid])) for sid in ORDER}


def _sandbox(tmp: Path) -> dict[str, str]:
    return swap_steps.sandbox(tmp, "mig", "tpu_mig", TERRAFORM, GCLOUD)


def _run(steps: dict[str, tuple[str, str]], env: dict[str, str], **extra: str) -> tuple[list[Any], list[str]]:
    return swap_steps.run(steps, ORDER, env, **extra)


def test_happy_path_creates_waits_whole_then_deletes_the_old_group(steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _sandbox(tmp_path))
    assert [p.returncode for p in done] == [0, 0, 0, 0], [p.stderr for p in done]
    events = [line for line in journal if line.startswith(("created", "deleted")) or line.endswith(("stable", "running"))]
    assert events == ["created tpu-v6e-slice-b", "tpu-v6e-slice-b is stable", "tpu-v6e-slice-b has 8 running",
                      "deleted tpu-v6e-slice"]
    assert "made beside tpu-v6e-slice" in done[2].stdout and "mig-release deletes tpu-v6e-slice next" in done[2].stdout
    assert (tmp_path / "workspace" / "plans" / "mig.old").read_text() == "tpu-v6e-slice\n"
    assert "only tpu-v6e-slice-b is left" in done[3].stdout
    # the old group is only ever deleted by the release apply, never resized or drained
    assert not any("tpu-v6e-slice " in f"{line} " for line in journal if line.startswith("gcloud"))


def test_a_new_group_never_whole_leaves_the_old_running_and_fails_with_one_line(
        steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _sandbox(tmp_path), STANDIN_RUNNING="5", TPUBUILD_SWAP_WAIT_S="0")
    assert [p.returncode for p in done] == [0, 0, 1], "the build stops at mig-swap"
    (line,) = done[2].stderr.splitlines()
    assert line.startswith("tpubuild: mig: group tpu-v6e-slice-b has 5 of 8 VMs running")
    assert "tpu-v6e-slice keeps running with its training and nothing was deleted" in line
    assert not any(j.startswith("deleted") or "release" in j for j in journal), journal


def test_a_new_group_never_stable_fails_mig_resize_with_one_line(steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _sandbox(tmp_path), STANDIN_UNSTABLE="1")
    assert [p.returncode for p in done] == [0, 1], "the build stops at mig-resize"
    ours = [line for line in done[1].stderr.splitlines() if line.startswith("tpubuild:")]
    assert len(ours) == 1 and "group tpu-v6e-slice-b did not come up whole" in ours[0]
    assert "keeps running and nothing was deleted" in ours[0]
    assert not any(j.startswith("deleted") for j in journal)


def test_a_create_that_fails_deletes_nothing_and_says_so_in_one_line(steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _sandbox(tmp_path), STANDIN_APPLY_FAILS="1")
    assert [p.returncode for p in done] == [1]
    ours = [line for line in done[0].stderr.splitlines() if line.startswith("tpubuild:")]
    assert len(ours) == 1 and "nothing was deleted" in ours[0]
    assert not any(j.startswith("deleted") for j in journal) and not (tmp_path / "journal" / "slots.json").exists()
