"""benchmarks/critical_path.py: its figures follow the rendered graphs (not timings)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from builder.config import load
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, REPO

_spec = importlib.util.spec_from_file_location("critical_path", REPO / "benchmarks" / "critical_path.py")
critical_path = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(critical_path)


def test_the_quota_is_known_before_anything_billed_and_the_seed_holds_only_the_apply():
    s = load(EXAMPLES / "vm-v4-32.env")  # a vm slice with a dataset to seed
    config = render(s, make_plan(s, "create"))
    now, old = critical_path.figures(config, s), critical_path.figures(critical_path.before(config, s.arch), s)
    assert now["quota"] <= now["billed"] < old["quota"]
    old_plan = next(st for st in critical_path.before(config, s.arch)["steps"] if st["id"] == "tpu-plan")
    assert "shared_pd-seed" in old_plan["waitFor"] and "check-capacity" not in str(critical_path.before(config, s.arch))
    assert now["tpu"] <= old["tpu"] and now["train"] <= old["train"]
    # the TPU is made beside the seed (tpu-attach gives it the disk): it exists before the seed ends
    seed_end = critical_path.times(config, s)["shared_pd-seed"][1]
    assert now["tpu"] < seed_end <= old["tpu"]


def test_a_generation_without_a_known_quota_learns_it_at_the_apply(capsys):
    s = load(REPO / "values.env")  # v3: no quota in its record
    config = render(s, make_plan(s, "create"))
    now = critical_path.figures(config, s)
    assert now["quota"] == now["tpu"]
    assert critical_path.main(["--values", str(EXAMPLES / "vm-v4-32.env"), "--actions", "create,destroy"]) == 0
    out = capsys.readouterr().out
    assert "vm-v4-32.env" in out and "destroy" in out and " -> " in out


def test_the_mig_slice_is_made_beside_the_seed():
    """mig-attach gives the MIG's VMs the disk: the slice exists, resized, before the seed ends, and
    training waits for the seed and the attach only."""
    s = load(EXAMPLES / "mig-v6e-16-spot.env")
    assert s.shared_pd_attach and s.gcs_dataset
    config = render(s, make_plan(s, "create"))
    now, t = critical_path.figures(config, s), critical_path.times(config, s)
    assert now["tpu"] < t["mig-resize"][1] < t["shared_pd-seed"][1] < t["mig-attach"][1] <= now["train"]


@pytest.mark.parametrize("example", ["mig-v6e-16-spot.env", "mig-v6e-32-calendar.env"])
def test_the_mig_path_knows_its_capacity_at_the_check(example):
    """Compute Engine's quota (mig.quota in the record), or the calendar-mode request the slice consumes."""
    s = load(EXAMPLES / example)
    config = render(s, make_plan(s, "create"))
    now = critical_path.figures(config, s)
    # the slice's apply, the first billed step, waits for the check: it starts as the check ends
    assert now["quota"] == critical_path.times(config, s)["check-capacity"][1] <= now["billed"] < now["tpu"]


@pytest.mark.parametrize("values", [*sorted(EXAMPLES.glob("*.env")), REPO / "values.env"], ids=lambda p: p.name)
def test_the_slice_is_asked_for_within_two_minutes_of_the_start(values):
    """The slice first: on both architectures and every provisioning mode (a calendar request's
    step, a queued TPU VM's, or the slice's apply): under 2 minutes from the build's start, and
    earlier than Filestore's apply ends (the slice does not wait for the storage)."""
    s = load(values)
    config = render(s, make_plan(s, "create"))
    now, old = critical_path.figures(config, s), critical_path.figures(critical_path.slice_later(config, s.arch), s)
    assert now["slice"] is not None and now["slice"] < 2.0 <= old["slice"]
    t = critical_path.times(config, s)
    assert "filestore-apply" not in t or now["slice"] < t["filestore-apply"][1]


#: The graphs rendered just before "the slice first" (tests/data/critical_path/generate.py).
OLD = json.loads((REPO / "tests" / "data" / "critical_path" / "before_slice_first.json").read_text())


@pytest.mark.parametrize("values", sorted(OLD["graphs"]), ids=lambda v: v.rsplit("/", 1)[-1])
def test_before_the_slice_first_is_the_graph_as_it_was_rendered(values):
    """The slice column's ``before`` (today's graph with the slice first undone, per the file's
    architecture) is the slice's ask on the graph the pipeline really had then, scored with today's
    minutes: on mig the access module's ``tpu-plan`` never waited for the storage (a lookup across
    architectures gave it the vm slice's waits, 3.0 minutes too many)."""
    s = load(REPO / values)
    config = render(s, make_plan(s, "create"))
    then = critical_path.figures({"steps": OLD["graphs"][values]}, s)
    assert critical_path.figures(critical_path.slice_later(config, s.arch), s)["slice"] == then["slice"]


def test_the_mig_figures_before_the_slice_first():
    """The figures the issue scored by hand on those goldens: 12.5 on mig, 16.5 and 18.5 with a
    calendar request (its step waited for the slice's apply)."""
    got = {}
    for name in ("mig-v6e-16-spot", "mig-v6e-32-calendar", "mig-tpu7x-8-calendar", "vm-v6e-16"):
        s = load(EXAMPLES / f"{name}.env")
        got[name] = critical_path.figures(critical_path.slice_later(render(s, make_plan(s, "create")), s.arch), s)["slice"]
    assert got == {"mig-v6e-16-spot": 12.5, "mig-v6e-32-calendar": 16.5, "mig-tpu7x-8-calendar": 18.5, "vm-v6e-16": 12.5}


def test_an_update_counts_the_slice_apply_waiting_for_its_verdict():
    """On an update the slice's apply runs beside its guard but waits inside the step for the verdict:
    the model counts that wait (``verdicts``), so the slice is asked for no earlier than its guard ends."""
    s = load(EXAMPLES / "vm-v6e-16.env")
    config = render(s, make_plan(s, "update"))
    t, t_create = critical_path.times(config, s, verdicts=True), critical_path.times(config, s)
    assert "tpu-guard" not in next(st for st in config["steps"] if st["id"] == "tpu-apply")["waitFor"]
    assert t["tpu-apply"][0] >= t["tpu-guard"][1] > t_create["tpu-apply"][0]
    rows = {(name, action): new for name, action, _old, new in critical_path.rows([EXAMPLES / "vm-v6e-16.env"], ["update"])}
    assert rows[("vm-v6e-16.env", "update")]["slice"] == t["tpu-apply"][0]
