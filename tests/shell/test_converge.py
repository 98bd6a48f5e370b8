"""Kill it anywhere, run it again: every pipeline, rendered by the real ``render``, is
stopped after each of its steps and inside each of its ``terraform apply`` s (the state lock left
held, the first change made), then submitted again from the start as a new build; the world the
rerun leaves must equal the one an uninterrupted build leaves (resources, Terraform states,
applied snapshot, environment lock, TTL schedule, training, attachments, seed), no data holder may
be deleted outside destroy, and no second slice may be left billing.

The stop points come from the rendered steps (tests/support/converge.py), so a step another change
adds is covered as soon as it renders. One uninterrupted reference run per pipeline is shared by
its stop points (``_reference``). The last test prints the count (pipelines, stop points,
converged), which tests/shell/conftest.py repeats in the session's summary.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from builder.facts.capacity_errors import classify
from tests.support import converge
from tests.support import converge_refusals as refusals
from tests.support.converge import Pipeline, Stop, World

VM_BIGGER = (("TPU_ACCELERATOR_TYPE", "v4-64"),)
MIG_BIGGER = (("TPU_ACCELERATOR_TYPE", "v6e-32"),)
BBM = (("TPU_REPLACE", "break-before-make"),)

PIPELINES = (
    Pipeline("vm-create", "vm", "create"),
    Pipeline("vm-update-mbb", "vm", "update", tpu=True, start="vm-create", values=VM_BIGGER, training=True),
    Pipeline("vm-update-bbm", "vm", "update", tpu=True, start="vm-create", values=VM_BIGGER + BBM, training=True),
    Pipeline("vm-destroy", "vm", "destroy", start="vm-create"),
    Pipeline("vm-auto", "vm", "auto", start="vm-create", values=VM_BIGGER, training=True),
    Pipeline("mig-create", "mig", "create"),
    Pipeline("mig-update-mbb", "mig", "update", mig=True, start="mig-create", values=MIG_BIGGER, training=True),
    Pipeline("mig-update-bbm", "mig", "update", mig=True, start="mig-create", values=MIG_BIGGER + BBM, training=True),
    Pipeline("mig-destroy", "mig", "destroy", start="mig-create"),
    Pipeline("mig-auto", "mig", "auto", start="mig-create", values=MIG_BIGGER, training=True),
)
BY_NAME = {p.name: p for p in PIPELINES}
CASES = [(p, stop) for p in PIPELINES for stop in converge.stop_points(p.config()[1])]
RESULTS: dict[tuple[str, str], bool] = {}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("converge")


@dataclass
class Reference:
    """The uninterrupted run of a pipeline: the world it starts from, a copy of the world after each
    of its steps (a build stopped after step i left exactly that), the build, and what it leaves."""

    start: World
    after: list[World]
    build: converge.Build
    outcome: dict[str, Any]
    reruns: dict[str, bool]  # a stopped world's fingerprint → whether its rerun converged


_REFERENCES: dict[str, Reference] = {}


def _start(pipeline: Pipeline, root: Path, name: str) -> World:
    """A copy of the world ``pipeline`` starts from (its ``start``'s reference end), under ``name``."""
    if not pipeline.start:
        return World.empty(root / name)
    ref = _reference(BY_NAME[pipeline.start], root)
    world = ref.after[-1].copy(root / name)
    world.builds[ref.build.id] = {"status": converge.FINISHED_OK, "finished": ""}
    if pipeline.training:
        (world.root / "training").write_text(BY_NAME[pipeline.start].config()[0].tpu_name)
    (world.root / "events").write_text("")
    return world


def _reference(pipeline: Pipeline, root: Path) -> Reference:
    """The uninterrupted run of ``pipeline`` (once per module), with a copy of the world after each step."""
    if pipeline.name not in _REFERENCES:
        start = _start(pipeline, root, f"{pipeline.name}-start")
        world = start.copy(root / f"{pipeline.name}-reference")
        after: list[World] = []
        build = converge.start_build(world, pipeline)
        for i in range(len(build.steps)):
            proc = build.step(i)
            assert proc.returncode == 0, (build.steps[i]["id"], proc.stdout[-1500:], proc.stderr[-1500:])
            after.append(world.copy(root / f"{pipeline.name}-after-{i}"))
        build.finish(converge.FINISHED_OK)
        _REFERENCES[pipeline.name] = Reference(start, after, build, converge.outcome(world), {})
    return _REFERENCES[pipeline.name]


@pytest.mark.slow  # the file's uninterrupted runs: it starts early (tests/README.md)
def test_references_end_where_the_pipeline_says(root: Path) -> None:
    """The uninterrupted runs: create makes one slice and the data holders, attached and seeded;
    update moves the training to the bigger slice and leaves it alone; destroy keeps copies."""
    for pipeline in PIPELINES:
        ref = _reference(pipeline, root)
        out, settings = ref.outcome, pipeline.config()[0]
        live = converge.slices_live(ref.after[-1], settings)
        assert out["state_locks"] == [] and out["env_lock"] == [], pipeline.name
        assert out["applied"]["action"] == ("update" if pipeline.action == "auto" else pipeline.action)
        if pipeline.action == "destroy":
            assert live == [] and out["ttl"] is None and sorted(out["copies_of"]), pipeline.name
            continue
        assert len(live) == 1 and out["resources"][live[0]] == settings.accelerator_type, pipeline.name
        assert out["seeded"] == [settings.shared_pd_name] and out["ttl"] is not None
        moves = any(st["id"].endswith("-resume") for st in pipeline.config()[1]["steps"])
        if pipeline.training:  # make-before-break moves the training; break-before-make stops it
            assert out["training"] == (live[0] if moves else None), pipeline.name


def test_the_safety_page_says_what_the_rerun_does_after_every_step() -> None:
    """docs/safety.md's table has a row for every step of every pipeline here (a new step fails this
    until the page says what a rerun after it does)."""
    text = (REPO / "docs" / "safety.md").read_text()
    table = text[text.index("## Kill it anywhere, run it again"):text.index("## Exit codes")]
    whole = ("tpubuild-image", "check-capacity", "finalize", "shared_pd-seed", "shared_pd-snapshot",
             "filestore-backup")
    for pipeline in PIPELINES:
        for st in pipeline.config()[1]["steps"]:
            token = st["id"] if st["id"] in whole else "<m>-" + st["id"].split("-", 1)[1]
            assert f"`{token}`" in table, (pipeline.name, st["id"])


def _data_deleted(world: World, settings: Any) -> list[str]:
    data = {settings.filestore_name, settings.shared_pd_name}
    return [e for e in converge.events(world) if e.startswith("deleted ") and e.split()[1] in data]


def stopped(pipeline: Pipeline, stop: Stop, root: Path) -> World:
    """The world a build of ``pipeline`` stopped at ``stop`` leaves (its build finished)."""
    ref = _reference(pipeline, root)
    name = f"{pipeline.name}-{stop.id}"
    if not stop.inside:
        world = ref.after[stop.index].copy(root / name)
        world.builds[ref.build.id] = {"status": "CANCELLED", "finished": converge._now()}
        return world
    world = (ref.after[stop.index - 1] if stop.index else ref.start).copy(root / name)
    if not stop.index:
        build = converge.start_build(world, pipeline)
    else:
        build = converge.moved(ref.build, world)
    assert build.step(stop.index, die_in_apply=True).returncode == 137
    build.finish("FAILURE")
    return world


@pytest.mark.parametrize(("pipeline", "stop"), CASES, ids=[f"{p.name}-{s.id}" for p, s in CASES])
def test_stopped_anywhere_and_run_again_converges(pipeline: Pipeline, stop: Stop, root: Path) -> None:
    ref = _reference(pipeline, root)
    settings = pipeline.config()[0]
    RESULTS[(pipeline.name, stop.id)] = False
    world = stopped(pipeline, stop, root)
    if stop.inside:
        assert converge.outcome(world)["state_locks"], "the apply died holding its state lock"
    seen = json.dumps(converge.outcome(world), sort_keys=True)
    if seen not in ref.reruns:  # the rerun depends on the world alone: one rerun per distinct world
        ref.reruns[seen] = False
        again = converge.run_build(world, pipeline)
        failed = {k: (p.stdout[-1500:], p.stderr[-1500:]) for k, p in again.items() if p.returncode != 0}
        assert not failed, failed
        assert converge.outcome(world) == ref.outcome
        assert len(converge.slices_live(world, settings)) <= 1
        if pipeline.action != "destroy":
            assert _data_deleted(world, settings) == []
        ref.reruns[seen] = True
    assert ref.reruns[seen], "the same world's rerun failed above"
    RESULTS[(pipeline.name, stop.id)] = True


@pytest.mark.parametrize("pipeline", [p for p in PIPELINES if p.action != "destroy" and p.start and
                                      p.config()[0].replace == "make-before-break"], ids=lambda p: p.name)
def test_status_shows_both_slices_and_their_cost_while_the_overlap_waits(pipeline: Pipeline, root: Path) -> None:
    """Every stop point that leaves two slices live (the make-before-break overlap): what ``status``
    says of it (builder/cloud/interrupted.py, from the lock as ``submit --wait`` marks it and the
    slices status reads), and the rerun leaves one slice (test_stopped_anywhere_... above)."""
    from builder.cloud import interrupted

    settings = pipeline.config()[0]
    overlap = [stop for p, stop in CASES if p is pipeline
               and len(converge.slices_live(_reference(pipeline, root).after[stop.index], settings)) == 2]
    assert overlap, "make-before-break has an overlap"
    for stop in overlap:
        world = _reference(pipeline, root).after[stop.index]
        live = {n: (world.root / "res" / n).read_text() for n in converge.slices_live(world, settings)}
        asked = next(n for n, accel in live.items() if accel == settings.accelerator_type)
        report = {"terraform": {"lock": {"build_id": "build-001", "action": "update", "state": "stale",
                                         "outcome": "CANCELLED", "failed_step": stop.step,
                                         "scope": {"tpu": pipeline.tpu, "mig": pipeline.mig}}},
                  # as status reads them: the asked slice first; on mig a group's type is not read, but
                  # its workload policy names the topology
                  "tpu": {"name": asked, "policy": f"{asked}-{settings.mig_shape.topology}" if settings.arch == "mig"
                          else "", "slices": [{"name": n, "accelerator_type": live[n] if settings.arch == "vm" else ""}
                                              for n in sorted(live, key=lambda n: n != asked)]}}
        lines = interrupted.lines(interrupted.read(settings, report))
        flags = " --tpu" if pipeline.tpu else " --mig" if pipeline.mig else ""  # auto: a plain update
        assert f"finish the job: tpubuild submit --action update{flags} --wait" in lines[0], lines
        old = next(n for n in live if n != asked)
        prices = [interrupted.slice_hourly(settings, live[n]) for n in (asked, old)]
        other = f"{live[old]}, ${prices[1]:,.2f}/h" if settings.arch == "vm" else "price unknown"
        assert all(prices) and lines[1].startswith(f"  billing    2 slices: {asked} ({live[asked]}, ${prices[0]:,.2f}/h) + "
                                                    f"{old} ({other}) = "), lines
        # the release deletes the old slice, and the prices say where they come from (the catalogue or the
        # bundled snapshot, with its date: builder/catalogue/price_source.py)
        assert re.search(rf"deletes {old} \(list prices from (the bundled snapshot|the Cloud Billing Catalog).*\d{{4}}-\d\d-\d\d",
                         lines[1]), lines


REFUSED = [(p, kind) for p in PIPELINES for kind in refusals.kinds(p.action, p.config()[1]["steps"])]
#: every pipeline concurrently in the rendered order; in its reverse where no refused schedule reruns it so
CONCURRENT = ([(p, False) for p in PIPELINES] +
              [(p, True) for p in PIPELINES if not refusals.kinds(p.action, p.config()[1]["steps"])])
SCHEDULES: dict[tuple[str, str], bool] = {}


def _converged(world: World, pipeline: Pipeline, ref: Reference) -> None:
    settings = pipeline.config()[0]
    assert converge.outcome(world) == ref.outcome
    assert len(converge.slices_live(world, settings)) <= 1
    if pipeline.action != "destroy":
        assert _data_deleted(world, settings) == []


@pytest.mark.parametrize(("pipeline", "kind"), REFUSED, ids=[f"{p.name}-{k}" for p, k in REFUSED])
def test_refused_at_the_first_try_and_run_again_converges(pipeline: Pipeline, kind: str, root: Path) -> None:
    """Google says no at the first try: the quota at the capacity check, a stockout at the slice's
    create, the new slice not READY when the swap looks (its wait ends at once here). The build, its
    steps run concurrently as Cloud Build runs them, fails at that step, in Google's words; run again
    (concurrently, the ready steps started in the reverse order), it ends where the uninterrupted run does."""
    ref, settings = _reference(pipeline, root), pipeline.config()[0]
    SCHEDULES[(pipeline.name, f"refused-{kind}")] = False
    world = ref.start.copy(root / f"{pipeline.name}-refused-{kind}")
    said = refusals.refusal(settings, kind)
    if kind == "stockout":
        assert classify(said["text"]) == "stockout", said  # as builder/facts/capacity_errors.py reads Google
    refusals.queue(world.root, said)
    first = converge.start_build(world, pipeline)
    assert converge.run_concurrently(first)[0] == "FAILURE"
    failed = sorted(k for k, proc in first.done.items() if proc.returncode != 0)
    slice_module = "tpu" if settings.arch == "vm" else "mig"
    assert failed == [{"quota": "check-capacity", "stockout": f"{slice_module}-apply",
                       "not-ready": f"{slice_module}-swap"}[kind]], failed
    if kind != "not-ready":
        assert said["text"] in first.done[failed[0]].stderr
    assert refusals.pending(world.root) == [], "the refusal was said"
    again = converge.start_build(world, pipeline)
    assert converge.run_concurrently(again, reverse=True)[0] == converge.FINISHED_OK, {
        k: p.stderr[-1500:] for k, p in again.done.items() if p.returncode}
    _converged(world, pipeline, ref)
    SCHEDULES[(pipeline.name, f"refused-{kind}")] = True


@pytest.mark.parametrize(("pipeline", "reverse"), CONCURRENT,
                         ids=[f"{p.name}-{'reverse' if r else 'forward'}" for p, r in CONCURRENT])
def test_steps_run_concurrently_converge(pipeline: Pipeline, reverse: bool, root: Path) -> None:
    """The DAG as Cloud Build runs it: every step whose waitFor steps passed starts at once (the slice's
    apply beside its guard, the plans beside the image), in the rendered order or its reverse; the build
    ends where the one-at-a-time reference does."""
    ref = _reference(pipeline, root)
    order = "reverse" if reverse else "forward"
    SCHEDULES[(pipeline.name, f"concurrent-{order}")] = False
    world = ref.start.copy(root / f"{pipeline.name}-concurrent-{order}")
    build = converge.start_build(world, pipeline)
    status, most = converge.run_concurrently(build, reverse=reverse)
    assert status == converge.FINISHED_OK, {k: p.stderr[-1500:] for k, p in build.done.items() if p.returncode}
    assert most >= 2, "no two steps ran at once"
    # the slice's apply runs beside its gates (the real guard; on mig also the drain): a replacing plan
    # (break-before-make) waits for their verdict, a plan that only creates does not; destroy applies after its guards
    waited = [k for k, p in build.done.items() if k.endswith("-apply") and "let the plan through" in p.stdout]
    bbm = pipeline.action == "update" and pipeline.config()[0].replace == "break-before-make"
    assert bool(waited) == bbm, waited
    _converged(world, pipeline, ref)
    SCHEDULES[(pipeline.name, f"concurrent-{order}")] = True


def test_the_stand_ins_say_no(root: Path) -> None:
    """A command no stand-in models fails loudly (exit 3, one line naming it), and the real guard
    refuses the stand-in terraform's plan that replaces a data holder (as Terraform writes its JSON)."""
    world = World.empty(root / "say-no")
    build = converge.start_build(world, BY_NAME["vm-create"])
    settings = BY_NAME["vm-create"].config()[0]

    def run(*argv: str, cwd: Path = world.root) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, env=build.env, cwd=cwd, capture_output=True, text=True, timeout=60)

    for argv in (("gcloud", "compute", "instances", "delete", "vm-1"), ("tpubuild", "destroy-everything"),
                 ("docker", "run", "x"), ("gcloud", "storage", "mv", "gs://a", "gs://b")):
        proc = run(*argv)
        assert proc.returncode == 3 and "is not modelled" in proc.stderr and proc.stderr.count("\n") == 1, argv
    state = world.root / "tf" / "filestore" / "state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"serial": 1, "resources": {settings.filestore_name: "another tier"}}))
    modules = Path(build.env["WORKSPACE"]) / "modules" / "filestore"
    assert run("terraform", "plan", "-input=false", "-out=p.tfplan", cwd=modules).returncode == 0
    plan = json.loads((modules / "p.tfplan.show").read_text())
    assert [(c["address"], c["change"]["actions"]) for c in plan["resource_changes"]] == [
        ("google_filestore_instance.this", ["delete", "create"])]
    guard = run("tpubuild", "guard", "--plan-json", str(modules / "p.tfplan.show"), "--module", "filestore",
                "--action", "update")
    assert guard.returncode == 2 and "google_filestore_instance.this would be replaced" in guard.stderr, guard
    assert "_ALLOW_DATA_LOSS=true" in guard.stderr


def test_count(request: pytest.FixtureRequest) -> None:
    """The count CI's log shows (tests/shell/conftest.py prints it again at the end of the session)."""
    worlds = sum(len(r.reruns) for r in _REFERENCES.values())
    line = (f"convergence: {len({p for p, _ in RESULTS})} pipelines, {len(RESULTS)} stop points "
            f"({worlds} distinct stopped worlds rerun), {sum(RESULTS.values())} converged; "
            f"{len(SCHEDULES)} concurrent schedules ({len(REFUSED)} refused at the first try), "
            f"{sum(SCHEDULES.values())} converged")
    converge.report(request, "tpubuild/converge-summary", line, {**RESULTS, **SCHEDULES},
                    CASES + REFUSED + CONCURRENT)
