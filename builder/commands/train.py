"""``tpubuild train MODEL``, ``tpubuild run -- COMMAND``, ``tpubuild stop`` and ``tpubuild logs``:
run a model package, or any command, on the pod.

``run`` starts the user's own command (plain torch_xla with ``torch_xla.launch``, a Lightning
``Trainer(accelerator="tpu")``, anything) on every host (``--hosts all``) or one (``--hosts N``):
with the host's XLA/PJRT environment (``/etc/profile.d/tpubuild.sh``), refused on a host that is not
ready, detached (``setsid nohup``), logged to ``<MOUNT_POINT>/nfs_share/logs/<env>/run/host-<N>.log``.
``stop`` then kills that job's process group on every host and frees the TPU, after the model's own
stop. The host transport (gcloud ssh, IAP, the ready check, the run and stop lines) is
``models/hosts.py``, shared with the model launchers.

A model package is ``models/<name>/`` with a ``launcher.py`` (standard library only) that turns
the Settings into shell steps (gcloud ssh/scp to the hosts): the ``Launcher`` protocol, registry
and loading are builder/config/model_registry.py's. It is looked up first in ``<folder of values.env>/models``
(``settings.repo_root``), then in the source tree tpubuild runs from (an editable install, or the
/workspace of a Cloud Build step).

``--dry-run`` prints the exact bash script, with the per-host command lines first; without it the
same script runs through ``bash`` (it needs ``gcloud`` on PATH, logged in with a role that can ssh
to the TPU VMs / MIG workers through IAP).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import posixpath
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from builder.render import mig_hosts
from builder.commands import load_settings, placed
from builder.commands.observe import refuse_flags, run_logs_metrics
from builder.commands.runtime import runtime_settings
from builder.config import Settings
from builder.config import model_registry
from builder.config.gate import Door, refuse
from builder.config.replace import slice_words, slot_names
from builder.facts.errors import BadInput, ConfigError, WorldError
from builder.render.observe import METRICS_INTERVAL_S

LAUNCHER = model_registry.LAUNCHER


# ---------------------------------------------------------------- finding the launcher

def load_launcher(settings: Settings, model: str) -> tuple[ModuleType, Path]:
    """The model's launcher module (builder/config/model_registry.py ``Launcher``) and the ``models/``
    folder it came from."""
    root = model_registry.find(settings.repo_root, model, LAUNCHER)
    if root is not None:
        module = model_registry.load(root, f"{model}.launcher")
        lacks = model_registry.missing(module)
        if lacks:
            raise BadInput(f"{root / model / LAUNCHER} is not a tpubuild launcher: it lacks {', '.join(lacks)} "
                           "(see the Launcher protocol in builder/config/model_registry.py)")
        return module, root
    models = ", ".join(model_registry.available(settings.repo_root)) or "none found"
    raise BadInput(f"unknown model {model!r}; available models: {models} (folders under models/ with a {LAUNCHER})")


# ---------------------------------------------------------------- running

def _job(settings: Settings, launcher: ModuleType) -> Any:
    job = launcher.Job.from_settings(settings)
    fields = {f.name for f in dataclasses.fields(job)}
    if settings.arch == "mig":
        # the launcher reaches the slice through models/hosts.py SliceHosts; the group listing
        # (worker order) is builder/render/mig_hosts.py's. A launcher without mig support refuses.

        if "listing" not in fields:
            raise BadInput(f'train/stop/logs: TPU_ARCH="mig" ({settings.source}) is not supported by the '
                           f"{settings.model or 'model'} launcher; start your script on every VM of the slice "
                           "with `tpubuild run -- COMMAND`")
        if {"slots", "groups"} <= fields:
            # make-before-break keeps the slice in one of two groups: the launch finds the live one
            # at run time (models/hosts.py SliceHosts), then lists its VMs
            return dataclasses.replace(job, **mig_hosts.runtime_listing(settings, load_hosts(settings)))
        job = dataclasses.replace(job, listing=tuple(mig_hosts.list_argv(settings)))
    if settings.arch == "vm" and "slots" in fields:
        # make-before-break keeps the slice in one of two slots: the launch finds the live one at
        # run time (models/hosts.py TpuVmHosts); the names are builder/config/replace.py's

        job = dataclasses.replace(job, slots=slot_names(settings))
    return job


def _plan(settings: Settings, launcher: ModuleType, build: Any) -> list[Any]:
    try:
        return list(build())
    except launcher.LaunchError as exc:
        if exc.key.startswith("--"):
            raise BadInput(f"{exc.key}: {exc.what}; {exc.fix}") from None
        raise ConfigError(exc.what, exc.fix, path=settings.source, line=settings.line_of(exc.key),
                          key=exc.key) from None


def execute(script: str, what: str) -> int:
    if shutil.which("gcloud") is None:
        raise WorldError(f"gcloud is not on PATH; install the Google Cloud CLI to {what}, "
                         "or add --dry-run to see the commands")
    try:
        rc = subprocess.run(["bash", "-c", script], check=False).returncode
    except KeyboardInterrupt:
        raise WorldError(f"interrupted while trying to {what}; the hosts keep what already ran "
                         "(training runs detached: 'tpubuild stop' stops it)") from None
    if rc != 0:
        raise WorldError(f"could not {what}: a command failed with exit code {rc} (its output is above); "
                         "rerun with --dry-run to see each command")
    return 0


def run_train(args: argparse.Namespace) -> int:
    settings = placed(load_settings(args))  # where the slice was granted
    if args.model == settings.model:  # what the file's MODEL refuses, as validate says (builder/config/gate.py)
        refuse(settings, None, Door.TRAIN)
    launcher, root = load_launcher(settings, args.model)
    job = _job(settings, launcher)
    if getattr(args, "metrics", False):  # models/xla_observe.py: TPUBUILD_METRICS_INTERVAL
        if not model_registry.declared(settings.repo_root, args.model, "METRICS"):
            raise BadInput(f"--metrics: {args.model} writes no torch_xla metrics report (its keys.py declares "
                           f"METRICS = False), so the flag would change nothing; drop --metrics (tpubuild profile "
                           "captures a trace of any model)")
        job = dataclasses.replace(job, options={**job.options, "metrics_interval": METRICS_INTERVAL_S})
    steps = _plan(settings, launcher, lambda: launcher.plan_train(job, str(root)))
    return _launch(args, launcher.header(job, args.model), launcher.render(steps),
                   f"launch {args.model} on {slice_words(settings)}",
                   f"tpubuild: {args.model} is running detached on {job.hosts} host(s); "
                   f"follow it with 'tpubuild logs --follow', stop it with 'tpubuild stop'")


def _launch(args: argparse.Namespace, header: str, script: str, what: str, started: str) -> int:
    """``--dry-run``: print the header and the script; else run the script (``what`` names it in
    a failure) and say ``started``."""
    if args.dry_run:
        print(header)
        print(script, end="")
        return 0
    execute(script, what)
    print(started)
    return 0


def _model(args: argparse.Namespace, settings: Settings) -> str:
    model = args.model or settings.model
    if not model:
        raise BadInput("no model: MODEL is empty in values.env; pass --model NAME")
    return model


def run_stop(args: argparse.Namespace) -> int:
    """The model's stop (when MODEL or --model names one), then, on vm, ``tpubuild run``'s jobs."""
    settings = placed(load_settings(args))  # where the slice was granted
    if args.probe:
        return _probe(args, settings)
    model = args.model or settings.model
    hosts = load_hosts(settings)
    script, what = "", slice_words(settings)
    if model:
        launcher, root = load_launcher(settings, model)
        job = _job(settings, launcher)
        script = launcher.render(_plan(settings, launcher, lambda: launcher.plan_stop(job, str(root))))
        what = f"{model} on {slice_words(settings)}"
    elif settings.arch == "node":
        raise BadInput("no model: MODEL is empty in values.env; pass --model NAME")
    if settings.arch in ("vm", "mig"):
        access = run_access(settings, hosts)
        script += hosts.render(hosts.with_preamble(access, [hosts.Step(
            "stop 'tpubuild run' jobs on every host and free the TPU", (access.ssh("all", hosts.stop_line(), ready=False),))]),
            numbered=False, first=not script)
    if args.dry_run:
        print(f"# tpubuild stop: {what} ({settings.arch}, {settings.hosts} host(s))")
        print(script, end="")
        return 0
    execute(script, f"stop {what}")
    print(f"tpubuild: stopped on every host of {slice_words(settings)}; the TPU is free")
    return 0


def _probe(args: argparse.Namespace, settings: Settings) -> int:
    """``stop --probe``: the model's ``plan_probe`` (builder/config/model_registry.py), which prints
    ``tpubuild-probe RUNNING MTIME`` (the build's tpu-checkpoint step reads it)."""
    model = _model(args, settings)
    launcher, root = load_launcher(settings, model)
    if not hasattr(launcher, "plan_probe"):
        raise BadInput(f"stop --probe: {root / model / LAUNCHER} has no plan_probe, so tpubuild cannot tell when "
                       f"{model} writes a checkpoint; add it (builder/config/model_registry.py Launcher) or set MODEL empty")
    job = _job(settings, launcher)
    script = launcher.render(_plan(settings, launcher, lambda: launcher.plan_probe(job, str(root))))
    if args.dry_run:
        print(f"# tpubuild stop --probe: is {model} training on {slice_words(settings)}, and its last checkpoint")
        print(script, end="")
        return 0
    return execute(script, f"probe {model}")


# ---------------------------------------------------------------- tpubuild run

def load_hosts(settings: Settings) -> ModuleType:
    """models/hosts.py, the host transport (found like the launchers)."""
    module = model_registry.hosts(settings.repo_root)
    if module is None:
        raise WorldError("models/hosts.py is missing from this tpubuild source tree; reinstall tpubuild")
    return module


def run_access(settings: Settings, hosts: ModuleType) -> Any:
    """How gcloud reaches the hosts of ``settings`` (vm: the slice's live slot, mig: its VMs in
    worker order; builder/render/mig_hosts.py ``access``, models/hosts.py ``for_arch``)."""
    if settings.arch not in ("vm", "mig"):
        raise BadInput(f"run works on TPU_ARCH=\"vm\" or \"mig\", not {settings.arch!r} ({settings.source}); "
                       "node is legacy (use xla_dist on the leader)")
    return mig_hosts.access(settings, hosts)


def run_log_dir(settings: Settings) -> str:
    return f"{settings.mount_point.rstrip('/')}/nfs_share/logs/{settings.env_name}/run"


def _local(word: str, here: Path) -> str | None:
    """``word`` as a normalised path relative to ``here`` when it names a file or folder there
    (inside ``here``: no ``..``, not ``here`` itself, not absolute; no ``:``, which scp would read
    as ``host:path``), else None."""
    if not word or word.startswith("/") or ":" in word:
        return None
    path = posixpath.normpath(word)
    if path == "." or path == ".." or path.startswith("../") or not (here / path).exists():
        return None
    return path


def to_ship(words: list[str], ship: list[str], *, auto: bool, here: Path) -> list[str]:
    """The local paths ``tpubuild run`` copies to the hosts, relative to ``here`` (the current
    folder), outermost only: every ``--ship PATH`` (which must exist under ``here``) and, with
    ``auto``, every word of the command, or value of a ``--flag=value`` word, that names a file or
    folder under ``here``. Absolute paths and paths outside ``here`` are host paths, never shipped
    (``/mnt/common`` exists on both sides)."""
    found = []
    for path in ship:
        rel = _local(os.path.relpath(Path(path).resolve(), here.resolve()) if Path(path).is_absolute() else path, here)
        if rel is None:
            where = ("does not exist" if not (here / path).exists() else
                     "has a ':', which scp reads as host:path" if ":" in path else
                     "is the current folder itself" if (here / path).resolve() == here.resolve() else
                     "is not under the current folder")
            raise BadInput(f"--ship {path}: {where} ({here}); ship a file or folder under the folder you run "
                           "tpubuild in (it lands at the same relative path in ~/.tpubuild/run on each host)")
        found.append(rel)
    if auto:
        for word in words:
            value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
            rel = None if value.startswith("-") else _local(value, here)
            if rel is not None:
                found.append(rel)
    unique = sorted(set(found))
    return [p for p in unique if not any(p.startswith(f"{q}/") for q in unique)]


def plan_run(settings: Settings, hosts: ModuleType, where: str, words: list[str],
             shipped: Sequence[str] = (), here: Path | None = None) -> list[Any]:
    """``words`` detached on the hosts (``where``: all or N); ``shipped`` (paths relative to
    ``here``, :func:`to_ship`) copied first into ``~/.tpubuild/run`` (emptied) on those hosts, the
    command then run in that folder."""
    access = run_access(settings, hosts)
    if where != "all" and not (where.isdigit() and int(where) < settings.hosts):
        raise BadInput(f"--hosts {where}: the slice has {settings.hosts} host(s); "
                       f"use --hosts all or a number from 0 to {settings.hosts - 1}")
    share = f"{settings.mount_point.rstrip('/')}/nfs_share"
    log_dir = run_log_dir(settings)
    on = "every host" if where == "all" else f"host {where}"
    steps = [hosts.Step(f"the log folder on Filestore ({log_dir})",
                        (access.ssh("0", hosts.dirs_line(share, [log_dir])),))]
    workdir = "."
    if shipped:
        workdir, paths = hosts.RUN_DIR, list(shipped)
        copies = tuple(access.scp(sources, dest, worker=where) for dest, sources in hosts.ship_groups(paths))
        steps += [
            hosts.Step(f"~/{workdir} emptied on {on}", (access.ssh(where, hosts.ship_dirs_line(paths)),)),
            hosts.Step(f"copy {' '.join(paths)} (from {here or Path.cwd()}) to ~/{workdir} on {on}", copies),
        ]
    steps.append(hosts.Step(f"run on {on}{' in ~/' + workdir if shipped else ''}, detached; "
                            f"each host appends to {log_dir}/host-<N>.log",
                            (access.ssh(where, hosts.run_line(words, log_dir, workdir=workdir)),)))
    return hosts.with_preamble(access, steps)


def run_run(args: argparse.Namespace) -> int:
    words = list(args.words)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise BadInput("run: no command; write it after --, e.g. tpubuild run -- python3 train.py")
    if args.runtime:  # builder/commands/runtime.py: the model's own launch of a script of yours

        settings, script = runtime_settings(args, words)
        model = settings.model
        launcher, root = load_launcher(settings, model)
        job = _job(settings, launcher)
        steps = _plan(settings, launcher, lambda: launcher.plan_train(job, str(root)))
        return _launch(args, launcher.header(job, model), launcher.render(steps),
                       f"launch {script} with {model} on {slice_words(settings)}",
                       f"tpubuild: {script} is running detached with {model} on {job.hosts} host(s); "
                       f"follow it with 'tpubuild logs --model {model} --follow', stop it with "
                       f"'tpubuild stop --model {model}'")
    settings = placed(load_settings(args))  # where the slice was granted
    hosts = load_hosts(settings)
    here = Path.cwd()
    shipped = to_ship(words, args.ship, auto=not args.no_ship, here=here)
    return _launch(args, f"# tpubuild run on {slice_words(settings)} ({settings.hosts} host(s)), --hosts {args.hosts}",
                   hosts.render(plan_run(settings, hosts, args.hosts, words, shipped, here), numbered=False),
                   f"start the command on {slice_words(settings)}",
                   f"tpubuild: running detached on {slice_words(settings)} (--hosts {args.hosts}); logs in "
                   f"{run_log_dir(settings)}/host-<N>.log ('tpubuild logs --run --host N'); stop with 'tpubuild stop'")


def run_logs(args: argparse.Namespace) -> int:
    settings = placed(load_settings(args))  # where the slice was granted
    if args.run:
        hosts = load_hosts(settings)
        if not 0 <= args.host < settings.hosts:
            raise BadInput(f"--host {args.host}: the slice has {settings.hosts} host(s); "
                           f"use --host 0 to {settings.hosts - 1}")
        log = f"{run_log_dir(settings)}/host-{args.host}.log"
        tail = hosts.tail_line(log, args.lines, follow=args.follow)
        access = run_access(settings, hosts)
        script = hosts.render(hosts.with_preamble(access, [hosts.Step(
            f"host {args.host}'s run log (Filestore, read from worker 0)", (access.ssh("0", tail),))]), numbered=False)
        if args.dry_run:
            print(script, end="")
            return 0
        return execute(script, f"read host {args.host}'s run log")
    model = _model(args, settings)
    launcher, _ = load_launcher(settings, model)
    job = _job(settings, launcher)
    if getattr(args, "metrics", False):
        refuse_flags(args, "follow")
        return run_logs_metrics(settings, launcher.log_dir(job), args.dry_run)
    steps = _plan(settings, launcher, lambda: launcher.plan_logs(job, args.host, follow=args.follow, lines=args.lines))
    script = launcher.render(steps)
    if args.dry_run:
        print(script, end="")
        return 0
    return execute(script, f"read host {args.host}'s log")


