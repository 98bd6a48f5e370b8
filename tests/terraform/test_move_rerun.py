"""A move to another zone killed between the new zone's storage apply and the release, then run
again (docs/capacity.md, "Moving an environment to another zone"; docs/safety.md, "Kill it anywhere,
run it again"): the rendered copy step (shared_pd-snapshot, filestore-backup) run under bash with a
gcloud that answers as the project would, its copy passed to the real module's plan as the rendered
plan step passes it, the real guard on each plan, real Terraform through the stand-in provider.

The first build copies, makes the new zone's share and disk beside the old ones and dies before the
release; the old zone's are untouched. The rerun finds the new zone's resources, so its copy step
takes no second copy and its plan changes nothing; its release deletes only the old zone's, which the
guard lets go because the kept copy was made from the first build's backup or snapshot. Nothing is
lost, nothing is made twice."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from builder.config.candidates import Candidate, at
from builder.facts.records import replace
from builder.inputs import tfvars
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.support.pipeline import moving_settings, step_env, step_script
from tests.support.slots import apply, changes, guard, plan
from tests.support.terraform import Terraform, Workspace, standin_terraform

pytestmark = pytest.mark.slow

#: plan module → (the copy step, the variable the plan passes the copy in, the resource type)
MOVED = {"filestore": ("filestore-backup", "source_backup", "google_filestore_instance"),
         "shared_pd": ("shared_pd-snapshot", "snapshot", "google_compute_disk")}

#: gcloud as the project answers the copy step: the old zone holds the resource; the new zone holds
#: it only once a build made it there ($NEW_MADE); a create succeeds.
GCLOUD = """#!/usr/bin/env bash
case " $* " in
  *" list "*) case " $* " in *"$NEW_ZONE"*) [ -n "$NEW_MADE" ] && echo made ;; *) echo running ;; esac ;;
esac
exit 0
"""


MODULE_DIRS = {"filestore": "modules/filestore", "shared_pd": "modules/shared_pd"}


@pytest.fixture(scope="module")
def tf() -> Terraform:
    return standin_terraform()


def _copy(tmp: Path, step: dict[str, Any], module: str, new_zone: str, made: bool) -> str:
    """Run the rendered copy step; what it leaves for the plan (plans/<module>.move-copy)."""
    ws, bindir = tmp / f"ws-{module}-{made}", tmp / "bin"
    (ws / "plans").mkdir(parents=True)
    bindir.mkdir(exist_ok=True)
    (bindir / "gcloud").write_text(GCLOUD)
    (bindir / "gcloud").chmod(0o755)
    env = {**os.environ, **step_env(step), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "WORKSPACE": str(ws),
           "NEW_ZONE": new_zone, "NEW_MADE": "1" if made else "", "HOME": str(tmp)}
    proc = subprocess.run(["bash", "-c", step_script(step)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return (ws / "plans" / f"{module}.move-copy").read_text().strip()


@pytest.mark.parametrize("module", sorted(MOVED))
def test_a_move_killed_before_the_release_finishes_on_rerun_without_loss(tf: Terraform, tmp_path: Path,
                                                                         module: str) -> None:
    copy_step, var, rtype = MOVED[module]
    moving = moving_settings()
    old = at(replace(moving, moving_from="", move_to=""), Candidate(moving.moving_from, moving.region,
                                                                    moving.provisioning))
    steps = {st["id"]: st for st in render(moving, make_plan(moving, "update"))["steps"]}
    before, after = tfvars.for_module(old, module), tfvars.for_module(moving, module)
    assert (before["zone"], before["move"], after["zone"], after["move"]) == (
        moving.moving_from, False, moving.zone, True)
    assert f'-var="{var}=$copy"' in step_script(steps[f"{module}-plan"])
    work = Workspace(tmp_path / "ws").module(MODULE_DIRS[module], module, before)
    tf.init(work)
    plan(tf, work, before, "create")
    apply(tf, work, "create")

    # the first build: the copy, the new zone's resource beside the old one (the guard sees no delete) ...
    first = _copy(tmp_path, steps[copy_step], module, moving.zone, made=False)
    assert first and (module != "filestore" or first.startswith(f"projects/{moving.project_id}/locations/"))
    made = plan(tf, work, {**after, var: first}, "make")
    assert sorted(changes(made, rtype).values()) == ["create", "no-op"]
    assert guard(tmp_path, made, module).returncode == 0
    out = apply(tf, work, "make")
    assert len(out["slots"]) == 2  # ... and it dies here: the old zone's is untouched

    # the rerun: no second copy, a plan that changes nothing, then the release
    assert _copy(tmp_path, steps[copy_step], module, moving.zone, made=True) == ""
    again = plan(tf, work, {**after, var: ""}, "again")
    assert set(changes(again, rtype).values()) == {"no-op"}
    assert guard(tmp_path, again, module).returncode == 0
    apply(tf, work, "again")
    released = plan(tf, work, {**after, var: "", "release": True}, "release")
    assert sorted(changes(released, rtype).values()) == ["delete", "no-op"]
    said = guard(tmp_path, released, module)
    assert said.returncode == 0 and "MOVED" in said.stdout and first in said.stdout, (said.stdout, said.stderr)
    out = apply(tf, work, "release")
    [(slot, kept)] = out["slots"].items()
    assert kept.get("zone", kept.get("location")) == moving.zone and kept[var] == first
