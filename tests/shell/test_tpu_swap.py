"""Make-before-break (TPU_REPLACE) as the rendered steps run it: ``tpu-apply`` (creates the new slice
beside the old one and leaves the slots for the next steps), ``tpu-swap`` (the new slice is READY)
and ``tpu-release`` (deletes the old one), each under its image's shell (``sh`` for the Terraform
image's steps under BusyBox, bash for gcloud's), with stand-ins for terraform and gcloud that keep a journal of
what happened to which slice.

Happy path: create new → new READY → old deleted, in that order. A new slice that never becomes
READY: the build stops at tpu-swap with one line on stderr, and the old slice is never touched.
A create that fails (no capacity): tpu-apply fails with tpubuild's one line, and nothing is deleted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builder.config import load_text
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import REPO, SHIPPED
from tests.support import swap_steps
from tests.support.pipeline import step_env, step_script

TERRAFORM = swap_steps.slot_terraform("tpu-old", "tpu-new",
                                   "Error: creating TPU VM tpu-new: there is no more capacity in the zone")
#: gcloud: the new slice's state is STANDIN_STATE (READY unless told).
GCLOUD = swap_steps.gcloud(r"""case "$*" in
  *"tpu-vm describe tpu-new"*) echo "${STANDIN_STATE-READY}"; echo "tpu-new is ${STANDIN_STATE-READY}" >> "$JOURNAL_DIR/journal" ;;
  *delete*) echo "deleted by gcloud" >> "$JOURNAL_DIR/journal" ;;
esac
""")


@pytest.fixture(scope="module")
def steps() -> dict[str, tuple[str, str]]:
    """The shipped v3-32 → v3-128 story with MODEL empty, rendered: tpu-apply, tpu-swap and tpu-release by
    id (with a MODEL the build also moves the training: tests/shell/test_tpu_handover.py)."""
    text = SHIPPED.read_text().replace('TPU_ACCELERATOR_TYPE="v3-32"', 'TPU_ACCELERATOR_TYPE="v3-128"')
    text = text.replace('MODEL="roberta"', 'MODEL=""')
    settings = load_text(text, REPO / SHIPPED.name)
    assert settings.replace == "make-before-break"
    config = render(settings, make_plan(settings, "update", tpu=True))
    by_id = {st["id"]: st for st in config["steps"]}
    # the swap follows the apply (through tpu-attach, which gives the new slice the dataset disk)
    assert by_id["tpu-swap"]["waitFor"] == ["tpu-attach"] and by_id["tpu-attach"]["waitFor"][0] == "tpu-apply"
    assert by_id["tpu-release"]["waitFor"] == ["tpu-swap"]
    assert not step_env(by_id["tpu-swap"])  # gcloud steps take no env
    return {sid: (by_id[sid]["entrypoint"], step_script(by_id[sid])) for sid in ("tpu-apply", "tpu-swap", "tpu-release")}


def _sandbox(tmp: Path) -> dict[str, str]:
    return swap_steps.sandbox(tmp, "tpu", "tpu_vm", TERRAFORM, GCLOUD)


def _run(steps: dict[str, tuple[str, str]], env: dict[str, str], **extra: str) -> tuple[list[Any], list[str]]:
    return swap_steps.run(steps, ("tpu-apply", "tpu-swap", "tpu-release"), env, **extra)


def test_happy_path_creates_then_waits_ready_then_deletes_the_old(steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _sandbox(tmp_path))
    assert [p.returncode for p in done] == [0, 0, 0], [p.stderr for p in done]
    events = [line for line in journal if line in ("created tpu-new", "tpu-new is READY", "deleted tpu-old")]
    assert events == ["created tpu-new", "tpu-new is READY", "deleted tpu-old"]
    assert "tpu-release deletes tpu-old next" in done[1].stdout and "starts nothing" in done[1].stdout
    assert "only tpu-new is left" in done[2].stdout
    assert not any("delete" in line for line in journal if line.startswith("gcloud"))


@pytest.mark.parametrize("state", ["CREATING", "", "UNHEALTHY"])
def test_a_new_slice_never_ready_leaves_the_old_running_and_fails_with_one_line(
        steps: dict[str, tuple[str, str]], tmp_path: Path, state: str) -> None:
    done, journal = _run(steps, _sandbox(tmp_path), STANDIN_STATE=state, TPUBUILD_SWAP_WAIT_S="0")
    assert [p.returncode for p in done] == [0, 1], "the build stops at tpu-swap"
    (line,) = done[1].stderr.splitlines()
    assert line.startswith("tpubuild: tpu: tpu-new is ") and "not READY; tpu-old keeps running" in line
    assert "nothing was deleted" in line
    assert not any("delete" in j or "release" in j for j in journal), journal
    assert json.loads(Path(tmp_path / "journal" / "slots.json").read_text()) == \
        {"a": {"name": "tpu-old"}, "b": {"name": "tpu-new"}}


def test_a_create_that_fails_deletes_nothing_and_says_so_in_one_line(steps: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    done, journal = _run(steps, _sandbox(tmp_path), STANDIN_APPLY_FAILS="1")
    assert [p.returncode for p in done] == [1]
    ours = [line for line in done[0].stderr.splitlines() if line.startswith("tpubuild:")]
    assert len(ours) == 1 and "did not become READY" in ours[0] and "nothing was deleted" in ours[0]
    assert not any("delete" in j for j in journal) and not (tmp_path / "journal" / "slots.json").exists()
