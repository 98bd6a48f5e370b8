"""The rendered pipeline of a move to another zone (docs/capacity.md, "Moving an environment to
another zone"): the copies of the old zone's storage (shared_pd-snapshot, filestore-backup) before
their plans, which pass the copy's name to modules/shared_pd and modules/filestore (``move=true``
in their tfvars, ``previous_zone`` in the slice's), the slice after the storage, its handover, and
the old zone's storage released last, each release planned, guarded and applied; the build loads
into the real cloudbuild_v1 Build type and uses no undeclared substitution, and the plan's move
section names exactly the steps that render."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.cloud.devtools.cloudbuild_v1.types import Build

from builder.config import load
from builder.config.candidates import Candidate, acting
from builder.facts.actions import Action
from builder.inputs.tfvars import for_module
from tests.conftest import EXAMPLES
from tests.support.pipeline import ancestors, step_script, unmatched_substitutions

V5P = EXAMPLES / "vm-v5p-32.env"  # a dataset disk, BASIC_SSD Filestore, roberta, make-before-break


def _moved(make_env: Callable[..., Path], cli: Any, **extra: str) -> tuple[dict[str, Any], dict[str, Any]]:
    applied = make_env(V5P, ZONE="us-east5-a,us-east5-b", **extra)
    moved = make_env(V5P, ZONE="us-east5-b,us-east5-a", **extra)
    code, out, err = cli("--values", moved, "render", "--action", "update", "--applied", applied, "--format", "json")
    assert code == 0, err
    info = json.loads(cli("--values", moved, "plan", "--action", "update", "--applied", applied, "--format", "json")[1])
    return json.loads(out), info


def test_a_move_copies_first_makes_the_slice_after_and_releases_the_old_zone_last(make_env, cli) -> None:
    build, info = _moved(make_env, cli)
    steps = {st["id"]: st for st in build["steps"]}
    # the copies are taken before the plans that read them, in the old zone, named for the plan
    assert "shared_pd-snapshot" in ancestors(build, "shared_pd-plan")
    assert "filestore-backup" in ancestors(build, "filestore-plan")
    snap = step_script(steps["shared_pd-snapshot"])
    assert "--source-disk-zone=us-east5-a" in snap and "--zones=us-east5-b" in snap and "shared_pd.move-copy" in snap
    backup = step_script(steps["filestore-backup"])
    assert "--instance-zone=us-east5-a" in backup and "--location=us-east5-b" in backup
    assert '-var="snapshot=$copy"' in step_script(steps["shared_pd-plan"])
    assert '-var="source_backup=$copy"' in step_script(steps["filestore-plan"])
    # no seed: the new disk is made from the snapshot
    assert "shared_pd-seed" not in steps
    # the slice is made in the new zone only once its storage is there
    assert {"shared_pd-apply", "filestore-apply"} <= ancestors(build, "tpu-apply")
    # the old zone's storage goes last: after the slice's handover, each release planned, guarded, applied
    for module in ("filestore", "shared_pd"):
        before = ancestors(build, f"{module}-release")
        assert {"tpu-release", "tpu-resume", f"{module}-release-plan", f"{module}-release-guard"} <= before
        assert f"{module}-release" in ancestors(build, "finalize")
        guard = step_script(steps[f"{module}-release-guard"])
        assert f'--plan-json "$W/plans/{module}-release.json"' in guard and "--allow-data-loss" not in guard
        assert "-var=release=true" in step_script(steps[f"{module}-release-plan"])
        assert f'"$W/plans/{module}-release.tfplan"' in step_script(steps[f"{module}-release"])
    assert "filestore-final-backup" in ancestors(build, "filestore-release-plan")
    assert "--instance-zone=us-east5-a" in step_script(steps["filestore-final-backup"])
    # what the plan says is what renders
    assert info["move"]["built"] and {s["step"] for s in info["move"]["steps"]} <= set(steps)
    Build.from_json(json.dumps(build), ignore_unknown_fields=False)
    assert unmatched_substitutions(build) == []


def test_the_moves_tfvars_say_move_and_the_zone_it_leaves(make_env) -> None:
    settings = load(make_env(V5P, ZONE="us-east5-b,us-east5-a"))
    moving = acting(settings, Candidate("us-east5-a", "us-east5", settings.provisioning), Action.UPDATE, "us-east5-a")
    assert moving.moving_from == "us-east5-a" and moving.zone == "us-east5-b"
    assert for_module(moving, "filestore")["move"] and for_module(moving, "shared_pd")["move"]
    assert for_module(moving, "tpu")["previous_zone"] == "us-east5-a"
    # an update that stays, a destroy, TPU_MOVE=false: nothing moves
    staying = acting(settings, Candidate("us-east5-b", "us-east5", settings.provisioning), Action.UPDATE, "us-east5-b")
    gone = acting(settings, Candidate("us-east5-a", "us-east5", settings.provisioning), Action.DESTROY)
    off = acting(load(make_env(V5P, ZONE="us-east5-b,us-east5-a", TPU_MOVE="false")),
                 Candidate("us-east5-a", "us-east5", settings.provisioning), Action.UPDATE, "us-east5-a")
    for s in (staying, gone, off):
        assert s.moving_from == "" and not for_module(s, "filestore")["move"] and for_module(s, "tpu")["previous_zone"] == ""


def test_a_regional_share_is_not_copied_and_move_off_renders_no_move(make_env, cli) -> None:
    build, info = _moved(make_env, cli, SHARED_FS_TIER="REGIONAL", SHARED_FS_CAPACITY="1024")
    ids = {st["id"] for st in build["steps"]}
    assert "shared_pd-snapshot" in ids and "shared_pd-release" in ids
    assert not {i for i in ids if i.startswith("filestore-") and ("backup" in i or "release" in i)}
    assert {s["step"] for s in info["move"]["steps"]} <= ids
    build, info = _moved(make_env, cli, TPU_MOVE="false")
    assert info["move"] is None and not {i for i in (st["id"] for st in build["steps"]) if "release-" in i}
    assert "shared_pd-snapshot" not in {st["id"] for st in build["steps"]}


def test_move_to_is_carried_into_the_build(make_env, cli) -> None:
    """--move-to (dispatch's, from the root build's _MOVE_TO): the build's own check-capacity re-reads
    values.env, so it is told the zone; the build moves there as a reorder would."""
    applied = make_env(V5P, ZONE="us-east5-a,us-east5-b")
    code, out, err = cli("--values", applied, "render", "--action", "update", "--applied", applied,
                         "--move-to", "us-east5-b", "--format", "json")
    assert code == 0, err
    build = json.loads(out)
    steps = {st["id"]: st for st in build["steps"]}
    assert "tpubuild check-capacity --beside-applied --move-to us-east5-b" in step_script(steps["check-capacity"])
    assert "--zones=us-east5-b" in step_script(steps["shared_pd-snapshot"]) and "shared_pd-release" in steps
    assert unmatched_substitutions(build) == []
    # the option places check-capacity's settings as dispatch's: a zone not in the list is bad input
    code, _, err = cli("--values", applied, "check-capacity", "--move-to", "us-central1-a")
    assert code == 2 and "--move-to: 'us-central1-a' is not a zone of the ZONE list" in err, err


def test_on_mig_the_move_is_not_rendered_and_the_guard_still_refuses(make_env, cli) -> None:
    """modules/tpu_mig's slots do not record their zone yet (docs/capacity.md, "What is built"): a
    zone change of a MIG environment renders no move (no copies, move=false) and says so."""
    failover = EXAMPLES / "mig-v6e-16-failover.env"
    applied = make_env(failover, ZONE="us-east5-b,us-east5-a")
    moved = make_env(failover, ZONE="us-east5-a,us-east5-b")
    code, out, err = cli("--values", moved, "render", "--action", "update", "--applied", applied, "--format", "json")
    assert code == 0, err
    ids = {st["id"] for st in json.loads(out)["steps"]}
    assert not {i for i in ids if i.endswith(("-snapshot", "-backup", "-release-plan"))}, ids
    info = json.loads(cli("--values", moved, "plan", "--action", "update", "--applied", applied, "--format", "json")[1])
    assert info["move"]["built"] is False and "does not render the move's steps" in info["move"]["text"]


def test_the_plan_text_names_the_rendered_steps_and_not_the_moves_own_variables(make_env, cli) -> None:
    applied = make_env(V5P, ZONE="us-east5-a,us-east5-b")
    moved = make_env(V5P, ZONE="us-east5-b,us-east5-a")
    code, text, err = cli("--values", moved, "plan", "--action", "update", "--applied", applied)
    assert code == 0, err
    assert "  filestore: final-backup → release-plan → release-guard → release\n" in text
    assert "  shared_pd: release-plan → release-guard → release\n" in text
    # move and previous_zone follow from the zone's change, which the before → after shows
    assert "move false → true" not in text and "previous_zone" not in text
    assert "filestore: zone us-east5-a → us-east5-b (moved" in text
