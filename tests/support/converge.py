"""The convergence harness (tests/shell/test_converge*.py): a pipeline rendered by the
real ``render``, its steps run in the build's order under their image's shell against the
stand-in world of tests/support/converge_standins.py, stopped anywhere, then submitted again.

* :func:`stop_points` comes from the rendered steps alone: after every step, and inside every
  step whose script runs ``terraform apply`` (the apply dies after its first change, its state
  lock held). A step added to the pipeline is covered without touching the harness.
* :func:`run_build` is one build: a fresh /workspace (the submitted source: values.env, tfvars,
  the modules' folders), the dispatch (the environment lock, taken over from a finished build,
  and the Terraform state locks that build left, broken by ``builder.cloud.lock.left_by``), then
  the steps until one fails or the stop point.
* :func:`outcome` is the world a build left, in the terms the issue compares: the resources, the
  Terraform states, the applied snapshot, the environment lock, the TTL schedule, the training
  and the copies (snapshots and backups) by what they copy.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from builder.catalogue import modules as catalogue
from builder.cloud import lock
from builder.config import load_text
from builder.config.offers import bulk_mode
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, REPO, rewrite_env
from tests.support import converge_refusals as refusals
from tests.support.converge_gcloud import GCLOUD
from tests.support import converge_standins as standins
from tests.support.pipeline import step_env, step_script
from tests.support.swap_steps import shell

FINISHED_OK = "SUCCESS"


@dataclass(frozen=True)
class Pipeline:
    """One action on one architecture: ``start`` names the pipeline whose end state it starts from
    ('' an empty project), ``values`` the values.env keys it changes."""

    name: str
    arch: str
    action: str
    tpu: bool = False
    mig: bool = False
    start: str = ""
    values: tuple[tuple[str, str], ...] = ()
    training: bool = False  # the model trains on the slice when the pipeline starts

    def text(self) -> str:
        base = (EXAMPLES / ("vm-v4-32.env" if self.arch == "vm" else "mig-v6e-16-spot.env")).read_text()
        return rewrite_env(base, **dict(self.values))

    def config(self) -> tuple[Any, dict[str, Any]]:
        """The values and the rendered pipeline (``auto``: what builder.planning.auto decides against the
        example as applied, the values its ``start`` pipeline applied)."""
        return _config(self)


@lru_cache(maxsize=None)
def _config(pipeline: Pipeline) -> tuple[Any, dict[str, Any]]:
    from builder.planning.auto import decide, plan_for

    settings = load_text(pipeline.text(), EXAMPLES / f"{pipeline.name}.env")
    if pipeline.action != "auto":
        return settings, render(settings, make_plan(settings, pipeline.action, tpu=pipeline.tpu, mig=pipeline.mig))
    applied = load_text(Pipeline(pipeline.start, pipeline.arch, "create").text(), EXAMPLES / "applied.env")
    decision = decide(settings, applied, plan_modules=make_plan(settings, "create").modules)
    plan = plan_for(settings, decision)
    assert plan is not None, decision
    return settings, render(settings, plan)


@dataclass(frozen=True)
class Stop:
    """Where a build stops: after step ``index`` of the rendered order, or inside it (its
    ``terraform apply`` dies holding the state lock)."""

    index: int
    step: str
    inside: bool = False

    @property
    def id(self) -> str:
        return f"{'in' if self.inside else 'after'}-{self.step}"


def order(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps in the order one worker may run them: the rendered order, which lists every step
    after the steps it waits for (checked)."""
    seen: set[str] = set()
    for st in config["steps"]:
        assert all(w == "-" or w in seen for w in st["waitFor"]), st["id"]
        seen.add(st["id"])
    return list(config["steps"])


def stop_points(config: dict[str, Any]) -> list[Stop]:
    out = []
    for i, st in enumerate(order(config)):
        if "terraform apply" in step_script(st):
            out.append(Stop(i, st["id"], inside=True))
        out.append(Stop(i, st["id"]))
    return out


@dataclass
class World:
    root: Path
    builds: dict[str, dict[str, str]] = field(default_factory=dict)
    count: int = 0

    @classmethod
    def empty(cls, root: Path) -> World:
        for d in ("res", "desired", "tf", "gcs", "bin"):
            (root / d).mkdir(parents=True, exist_ok=True)
        python = f'#!/bin/sh\nexec "$STANDIN_PYTHON" -S "$STANDIN_WORLD/bin/{{}}.py" "$@"\n'
        for name, text in (("terraform", standins.TERRAFORM_SH), ("terraform.py", standins.TERRAFORM),
                           ("gcloud", python.format("gcloud")), ("gcloud.py", GCLOUD),
                           ("tpubuild", standins.TPUBUILD_SH), ("tpubuild.py", standins.TPUBUILD),
                           ("docker", standins.DOCKER), ("standin_refusals.py", refusals.REFUSALS),
                           ("standin_show.py", refusals.SHOW), ("sleep", refusals.SLEEP)):
            (root / "bin" / name).write_text(text)
            (root / "bin" / name).chmod(0o755)
        (root / "bin" / "python3").symlink_to(sys.executable)  # the steps' own python3 (tpu-swap)
        return cls(root)

    def copy(self, root: Path) -> World:
        shutil.copytree(self.root, root, symlinks=True, ignore=shutil.ignore_patterns("bin"))
        (root / "bin").symlink_to(self.root / "bin" if not (self.root / "bin").is_symlink()
                                  else (self.root / "bin").resolve())
        return World(root, {k: dict(v) for k, v in self.builds.items()}, self.count)

    def new_build(self) -> str:
        self.count += 1
        return f"build-{self.count:03d}"


def desire(world: World, settings: Any) -> None:
    """What each module's configuration asks for, from the values (the stand-in terraform plans it)."""
    for spec in catalogue.specs(settings.arch):
        name = {"filestore": settings.filestore_name, "shared_pd": settings.shared_pd_name}.get(spec.name, spec.name)
        doc: dict[str, Any] = {"resources": {}, "data": [name] if spec.holds_data else []}
        slots = [settings.tpu_name, f"{settings.tpu_name}-b"]
        if spec.slice_resource:
            doc["slice"] = {"names": slots if settings.replace == "make-before-break" else slots[:1],
                            "config": settings.accelerator_type, "mbb": settings.replace == "make-before-break",
                            # the workload policy a group made with it names (modules/tpu_mig; none for one VM)
                            "topology": settings.mig_shape.topology if settings.arch == "mig"
                            and settings.mig_shape.accelerator_topology else ""}
        else:
            doc["resources"][name] = spec.name
        doc["addresses"] = refusals.addresses(settings, spec, {name: spec.name},
                                              slots if spec.slice_resource else [])
        if spec.identity:  # the hosts' account, which the module's identity step makes alone (-target)
            doc["resources"][spec.identity] = "account"
            doc["identity"] = spec.identity
        # the accounts its hosts run as: its apply fails while one is missing, as a MIG's VMs would
        doc["runs_as"] = [i.identity for i in catalogue.specs(settings.arch) if i.name in spec.identity_from]
        (world.root / "desired" / f"{Path(spec.tfdir).name}.json").write_text(json.dumps(doc))


def _workspace(ws: Path, pipeline: Pipeline, settings: Any) -> None:
    (ws / "env_setup" / "seeder").mkdir(parents=True)
    (ws / "env_setup" / "seeder" / "run_seeder.sh").write_text(standins.SEEDER)
    (ws / "values.env").write_text(pipeline.text())
    (ws / "tfvars").mkdir()
    for spec in catalogue.specs(settings.arch):
        (ws / spec.tfdir).mkdir(parents=True, exist_ok=True)
        (ws / "tfvars" / f"{spec.name}.tfvars.json").write_text("{}\n")


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


def env_lock_path(world: World, settings: Any) -> Path:
    """The environment lock, where builder/cloud/lock.py keeps it: gs://<state bucket>/workspace/<ENV>/lock.json."""
    return world.root / "gcs" / settings.state_bucket / lock.path(settings.env_name)


def dispatch(world: World, settings: Any, action: str, build_id: str) -> list[str]:
    """What `tpubuild submit` does before the build starts: take the environment lock (over from a
    finished build only) and break the Terraform state locks that build left
    (``lock.left_by``); the lines it warns."""
    warned: list[str] = []
    env_lock = env_lock_path(world, settings)
    env_lock.parent.mkdir(parents=True, exist_ok=True)
    if env_lock.exists():
        held = json.loads(env_lock.read_text())
        previous = world.builds[held["build_id"]]
        assert previous["status"] != "WORKING", "the harness never runs two builds at once"
        prev = lock.Lock(env=settings.env_name, action=held["action"], holder="harness", created=held["created"],
                         build_id=held["build_id"], state="stale", outcome=previous["status"])
        for lock_file in sorted((world.root / "tf").glob("*/lock.json")):
            info = json.loads(lock_file.read_text())
            if lock.left_by(info, prev, previous["finished"]):
                lock_file.unlink()
                warned.append(f"broke {lock_file.parent.name}'s state lock {info['ID']} of {prev.build_id}")
    env_lock.write_text(json.dumps({"build_id": build_id, "action": action, "created": _now()}))
    return warned


@dataclass
class Build:
    """A build under way in a world: its id, the steps in order, their environment."""

    world: World
    id: str
    steps: list[dict[str, Any]]
    env: dict[str, str]
    done: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)

    def step(self, i: int, *, die_in_apply: bool = False, timeout: int = 120) -> subprocess.CompletedProcess[str]:
        st = self.steps[i]
        extra = {"STANDIN_DIE_IN_APPLY": "1"} if die_in_apply else {}
        proc = subprocess.run([*shell(st["entrypoint"]), "-c", step_script(st, {"BUILD_ID": self.id})],
                              env={**self.env, **step_env(st), **extra}, capture_output=True, text=True,
                              timeout=timeout, cwd=self.env["WORKSPACE"])
        self.done[st["id"]] = proc
        return proc

    def finish(self, status: str) -> None:
        self.world.builds[self.id] = {"status": status, "finished": _now()}


def start_build(world: World, pipeline: Pipeline) -> Build:
    """Submit ``pipeline`` in ``world``: its dispatch and a fresh workspace; no step has run."""
    settings, config = pipeline.config()
    build_id = world.new_build()
    desire(world, settings)
    dispatch(world, settings, pipeline.action, build_id)
    world.builds[build_id] = {"status": "WORKING", "finished": ""}
    ws = world.root / "builds" / build_id
    _workspace(ws, pipeline, settings)
    env = {"PATH": f"{world.root / 'bin'}{os.pathsep}{os.environ['PATH']}", "HOME": str(world.root),
           "LANG": "C.UTF-8", "WORKSPACE": str(ws), "STANDIN_WORLD": str(world.root), "STANDIN_BUILD": build_id,
           "STANDIN_PYTHON": sys.executable, "STANDIN_REPO": str(REPO), "STANDIN_CACHE": str(_cache(world)),
           "STANDIN_ENV_LOCK": str(env_lock_path(world, settings)),
           "STANDIN_VMS": str(settings.mig_shape.vms if settings.arch == "mig" else 1),
           # the slice's MIG is in bulk mode: the gcloud stand-in refuses to grow it from non-zero
           "STANDIN_BULK": "1" if bulk_mode(settings) else "0",
           "TPUBUILD_SWAP_POLL_S": "0", "TPUBUILD_DRAIN_POLL_S": "0", "TPUBUILD_DRAIN_WAIT_S": "0",
           "TPUBUILD_RESUME_WAIT_S": "0", "TPUBUILD_RESUME_TRIES": "1", "TPUBUILD_SWAP_WAIT_S": "0"}
    return Build(world, build_id, order(config), env)


def _cache(world: World) -> Path:
    """What the stand-ins may keep between worlds: the real guard's verdict on each distinct plan."""
    path = world.root.parent / "standin-cache"
    path.mkdir(exist_ok=True)
    return path


def moved(build: Build, world: World) -> Build:
    """``build`` in ``world``, a copy of its world taken while it ran (its workspace came along)."""
    env = {k: v.replace(str(build.world.root), str(world.root)) for k, v in build.env.items()}
    return Build(world, build.id, build.steps, env)


def run_build(world: World, pipeline: Pipeline, stop: Stop | None = None,
              snapshot: Any = None) -> dict[str, subprocess.CompletedProcess[str]]:
    """One build of ``pipeline`` in ``world`` (its dispatch, then its steps until one fails or
    ``stop``); each step's result by id. ``snapshot(i, build)`` is called after each step that passed."""
    build = start_build(world, pipeline)
    status = FINISHED_OK
    for i in range(len(build.steps)):
        proc = build.step(i, die_in_apply=stop is not None and stop.index == i and stop.inside)
        if proc.returncode != 0:
            status = "FAILURE"
            break
        if snapshot is not None:
            snapshot(i, build)
        if stop is not None and stop.index == i:
            status = "CANCELLED"
            break
    build.finish(status)
    return build.done


def run_concurrently(build: Build, *, reverse: bool = False) -> tuple[str, int]:
    """``build``'s steps as Cloud Build runs them: every step whose ``waitFor`` steps passed starts at
    once, in a thread of its own, the ready ones started in the rendered order (``reverse``: its
    reverse); after a failure nothing new starts and the running steps finish. The build's status
    and the most steps that ran at once."""
    ids = [st["id"] for st in build.steps]
    waits = {i: set() if st["waitFor"] == ["-"] else set(st["waitFor"]) for i, st in enumerate(build.steps)}
    pending, passed, running, failed, most = list(range(len(ids))), set(), {}, False, 0
    with ThreadPoolExecutor(max_workers=len(ids)) as pool:
        while True:
            ready = [i for i in pending if not failed and waits[i] <= passed]
            for i in reversed(ready) if reverse else ready:
                pending.remove(i)
                running[pool.submit(build.step, i)] = i
            most = max(most, len(running))
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in done:
                i = running.pop(f)
                if f.result().returncode == 0:
                    passed.add(ids[i])
                else:
                    failed = True
    status = "FAILURE" if failed else FINISHED_OK if not pending else "CANCELLED"
    build.finish(status)
    return status, most


def outcome(world: World) -> dict[str, Any]:
    """The world a build left, without what names a build (ids, times)."""
    r = world.root

    def read(path: Path) -> Any:
        return json.loads(path.read_text()) if path.exists() else None

    applied = read(r / "applied.json")
    return {
        "resources": {p.name: p.read_text() for p in sorted((r / "res").glob("*"))},
        "states": {p.parent.name: read(p)["resources"] for p in sorted((r / "tf").glob("*/state.json"))},
        "state_locks": sorted(p.parent.name for p in (r / "tf").glob("*/lock.json")),
        "applied": applied and {k: v for k, v in applied.items() if k != "build"},
        "env_lock": [str(p.relative_to(r / "gcs")) for p in (r / "gcs").rglob("lock.json")],
        "ttl": read(r / "ttl.json"),
        "training": (r / "training").read_text() if (r / "training").exists() else None,
        "attached": sorted(p.name for p in (r / "attached").glob("*")) if (r / "attached").exists() else [],
        "seeded": sorted(p.name for p in (r / "seeded").glob("*")) if (r / "seeded").exists() else [],
        "copies_of": sorted({p.read_text() for p in (r / "copies").glob("*")}) if (r / "copies").exists() else [],
        "objects": sorted(str(p.relative_to(r / "gcs")) for p in (r / "gcs").rglob("*")
                          if p.is_file() and p.name != "lock.json"),
    }


def events(world: World) -> list[str]:
    path = world.root / "events"
    return path.read_text().splitlines() if path.exists() else []


def slices_live(world: World, settings: Any) -> list[str]:
    names = [settings.tpu_name, f"{settings.tpu_name}-b"]
    return [n for n in names if (world.root / "res" / n).exists()]


def report(request: Any, key: str, line: str, results: dict[Any, bool], cases: list[Any]) -> None:
    """A convergence file's last test: print ``line`` (the count CI's log shows; tests/shell/conftest.py
    prints it again at the end of the session, from pytest's cache under ``key``), then require that
    every stop point ran (unless ``-k`` chose some) and converged."""
    print(line)
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    if cache is not None:
        cache.set(key, line)
    if not request.config.option.keyword:
        assert len(results) in (0, len(cases)), "a stop point did not run"
    assert all(results.values()), [k for k, v in results.items() if not v]
