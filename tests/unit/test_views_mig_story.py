"""The mig views tell one story (issue: "the mig views still disagree"), each case as a user ran it:
v6e-16 applied (examples/mig-v6e-16-spot.env) and v6e-32 in the file. A destroy describes the
applied slice; a resize carries the model's resume note as on vm; ``--tpu`` says once what it
applies on mig and which flag changes the slice; a create says why it lists the handover steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.commands.compare import Previous
from builder.config.model_registry import change_notes
from builder.planning.describe import describe
from builder.planning.plan import make_plan
from tests.conftest import rewrite_env
from tests.unit.test_views_agree import _load

REPO = Path(__file__).resolve().parents[2]
SPOT = REPO / "examples" / "mig-v6e-16-spot.env"


@pytest.fixture
def resized(tmp_path: Path) -> tuple[Path, Path]:
    text = SPOT.read_text(encoding="utf-8")
    (tmp_path / "applied.env").write_text(text)
    (tmp_path / "values.env").write_text(rewrite_env(text, TPU_ACCELERATOR_TYPE="v6e-32"))
    return tmp_path / "values.env", tmp_path / "applied.env"


def test_destroy_describes_the_applied_slice(cli, resized: tuple[Path, Path]) -> None:
    values, applied = resized
    args = ("plan", "--values", values, "--action", "destroy", "--applied", applied)
    code, text, _ = cli(*args)
    assert code == 0
    info = json.loads(cli(*args, "--format", "json")[1])
    (mig,) = [o for o in info["operations"] if o["module"] == "mig"]
    assert mig["what"] == "MIG tpu-v6e-slice (4 x ct6e-standard-4t, workload policy tpu-v6e-slice-4x4, spot)"
    assert f"    destroy  mig        {mig['what']}\n" in text
    assert (info["accelerator_type"], info["hosts"], info["slice"]["vms"]) == ("v6e-16", 4, 4)
    assert "  accelerator:  v6e-16 (v6e, 16 chips), topology 4x4\n" in text
    assert "  slice:        4 x ct6e-standard-4t, spot\n" in text and "  hosts: 4 → 0, v6e-16 → none\n" in text
    assert "make-before-break" not in text and "8 x ct6e" not in text and "4x8" not in text
    # an update still says how the slice changes, on the new values
    update = cli("plan", "--values", values, "--action", "update", "--mig", "--applied", applied)[1]
    assert ("apply    mig        MIG tpu-v6e-slice (8 x ct6e-standard-4t, workload policy tpu-v6e-slice-4x8, spot); "
            "a change of the slice makes a second MIG beside it (make-before-break)") in update


def test_destroy_of_another_environment_keeps_the_file_s_values() -> None:
    """Applied values of another environment name are not what this file's destroy takes."""
    text = SPOT.read_text(encoding="utf-8")
    new = _load(rewrite_env(text, TPU_ACCELERATOR_TYPE="v6e-32"), "new.env")
    other = _load(rewrite_env(text, ENV_BUILD_NAME="other-env"), "other.env")
    info = describe(new, make_plan(new, "destroy"), previous=Previous(other, "other.env"))
    assert (info["accelerator_type"], info["hosts"]) == ("v6e-32", 8)


@pytest.mark.parametrize("arch", ["vm", "mig"])
def test_a_resize_carries_the_model_s_resume_note(arch: str) -> None:
    """The note is the model's (models/roberta keys.py ``change_notes``, through the registry), not
    the builder's: vm v3-32 → v3-128 and mig v6e-16 → v6e-32 both carry it."""
    if arch == "vm":
        text, size, scope = (REPO / "values.env").read_text(encoding="utf-8"), "v3-128", {"tpu": True}
    else:
        text, size, scope = SPOT.read_text(encoding="utf-8"), "v6e-32", {"mig": True}
    old, new = _load(text, "old.env"), _load(rewrite_env(text, TPU_ACCELERATOR_TYPE=size), "new.env")
    for mode in ("make-before-break", "break-before-make"):
        mine = _load(rewrite_env(text, TPU_ACCELERATOR_TYPE=size, TPU_REPLACE=mode), "new.env")
        notes = describe(mine, make_plan(mine, "update", **scope), previous=Previous(old, "old.env"))["notes"]
        (resume,) = change_notes(old, new)
        assert "roberta: training resumes at the next sequence" in resume and "world size" in resume
        assert notes.count(resume) == 1, (arch, mode, notes)


def test_tpu_on_mig_says_once_what_it_applies(cli, resized: tuple[Path, Path]) -> None:
    values, applied = resized
    args = ("plan", "--values", values, "--action", "update", "--tpu", "--applied", applied)
    code, text, _ = cli(*args)
    assert code == 0
    info = json.loads(cli(*args, "--format", "json")[1])
    (mig,) = [m for m in info["before_after"]["modules"] if m["module"] == "mig"]
    assert mig["status"] == "untouched"
    assert mig["note"].startswith("the slice differs from the applied values (accelerator_type, vm_count")
    assert mig["note"].endswith("and this build leaves it as applied: on mig, --tpu (_TPU=true) applies only tpu, "
                                "slice access for tpu-v6e-slice (service account tb-v6e-slice-vm, IAP-SSH firewall, "
                                "MIG reader role); --mig (_MIG=true) changes the slice")
    assert text.count("--mig (_MIG=true) changes the slice") == 1 and f"  mig: {mig['note']}\n" in text
    # the build's scope has nothing to do; the slice's change is not called done
    assert info["nothing_to_do"] is True
    assert "every module already has these values" not in text
    assert "  nothing to do in this build's scope: the modules it applies already have these values\n" in text
    assert "outside this build's scope" not in text


def test_a_module_outside_the_scope_names_the_request_that_applies_it(cli, tmp_path: Path) -> None:
    text = (REPO / "values.env").read_text(encoding="utf-8")
    (tmp_path / "applied.env").write_text(text)
    (tmp_path / "values.env").write_text(rewrite_env(text, SHARED_FS_CAPACITY="2048"))
    out = cli("plan", "--values", tmp_path / "values.env", "--action", "update", "--tpu",
              "--applied", tmp_path / "applied.env")[1]
    assert ("  filestore: differs from the applied values (capacity_gb) and this build leaves it as applied: "
            "an update without --tpu (_TPU=true) applies it\n") in out
    only = cli("plan", "--values", tmp_path / "values.env", "--action", "update", "--only", "tpu",
               "--applied", tmp_path / "applied.env")[1]
    assert "add filestore to --only to apply it" in only


@pytest.mark.parametrize("path", [REPO / "values.env", SPOT], ids=["vm", "mig"])
def test_a_create_says_why_it_lists_the_handover_steps(cli, path: Path) -> None:
    """A create renders swap → checkpoint → release → resume (a rerun after a failed create may find
    a slice running: docs/pipeline.md); plan names them, says they do nothing on a fresh create
    and why they are there, and lists the same steps as render."""
    args = ("--values", path, "--action", "create", "--applied", "none")
    info = json.loads(cli("plan", *args, "--format", "json")[1])
    rendered = json.loads(cli("render", *args, "--format", "json")[1])["steps"]
    accel = info["replacement"]["module"]
    handover = [f"{accel}-{k}" for k in ("swap", "checkpoint", "release", "resume")]
    assert [st["id"] for st in rendered] == [st["id"] for st in info["steps"]]
    assert [sid for sid in (st["id"] for st in rendered) if sid in handover] == handover
    note = info["replacement"]["text"]
    assert note.startswith(f"{accel}: {', '.join(handover)} are in every create (make-before-break): on a fresh "
                           "create they find one slice, no roberta training, and do nothing; a create that finds a "
                           "slice already running with other values")
    assert f"note: {note}\n" in cli("plan", *args)[1]
    assert info["replacement"]["overlap_minutes"] is None
