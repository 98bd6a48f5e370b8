"""The bodies of the cloud commands (``builder/commands/cloud.py`` registers them).

Exit codes: 0 done; 1 a failure in the world (a cloud call, a missing or foreign bucket, no
credentials, a held lock, a build that did not succeed); 2 bad input (values.env, flags, an
``auto`` that would move the environment).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.cloud import auto, buckets, builds, clients, lock, snapshot, source, workspace
from builder.cloud.errors import cloud_call
from builder.commands import load_settings
from builder.config import Settings, load_text
from builder.errors import BadInput, WorldError

ACTIONS = ("initialize", "create", "update", "destroy", "auto")


def _values_bytes(settings: Settings) -> bytes:
    from builder.config.loader import MAX_BYTES
    from builder.files import read_file

    return read_file(settings.source, MAX_BYTES, what="a values file", fix="keep it under 1 MiB")


def say(message: str) -> None:
    print(message, flush=True)


def warn(message: str) -> None:
    print(f"tpubuild: warning: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- initialize

def initialize(settings: Settings) -> int:
    repo = workspace.find_repo(settings)
    client = clients.storage(settings.project_id)
    for spec in buckets.specs(settings):
        say(buckets.create_or_adopt(client, settings, spec))
    from builder.cloud import iam

    say(iam.ensure_account(clients.iam_admin(), settings))
    say(iam.grant(clients.projects(), settings))
    up, same, gone = workspace.sync(client.bucket(settings.state_bucket), settings, repo)
    say(f"gs://{settings.state_bucket}/{workspace.prefix(settings)}: workspace uploaded "
        f"({up} new or changed, {same} unchanged, {gone} removed)")
    return 0


def cmd_initialize(args: argparse.Namespace) -> int:
    return initialize(load_settings(args))


# ---------------------------------------------------------------- plans

def _parse_applied(applied: snapshot.Applied, settings: Settings) -> Settings | None:
    where = f"gs://{settings.state_bucket}/{snapshot.values_path(settings.env_name)}"
    try:
        return load_text(applied.values.decode("utf-8"), Path(settings.source.parent, "applied.values.env"))
    except (BadInput, UnicodeDecodeError) as exc:
        warn(f"{where} no longer parses ({exc}); treating every module as changed")
        return None


def auto_plan(settings: Settings, bucket: Any, repo: Path) -> Any:
    """Decide what ``auto`` does, print the decision and why; the Plan, or None for nothing."""
    from builder.plan import make_plan

    every = make_plan(settings, "create").modules
    applied = snapshot.read(bucket, settings.env_name)
    if applied is None:
        decision = auto.decide(settings, None, plan_modules=every)
    else:
        old = _parse_applied(applied, settings)
        if old is None:
            decision = auto.Decision("update", frozenset(every) - applied.absent,
                                     ("the applied snapshot could not be read: update every module",))
        else:
            decision = auto.decide(settings, old, plan_modules=every, build_id=applied.build_id,
                                   outstanding=applied.outstanding, absent=applied.absent,
                                   sources_then=applied.sources, sources_now=auto.digests(settings, repo, every))
    say(decision.summary())
    for reason in decision.reasons:
        say(f"  - {reason}")
    if decision.action == "none":
        return None
    if decision.action == "create":
        return make_plan(settings, "create")
    return make_plan(settings, "update", only=decision.only)


def _scope(plan: Any) -> dict[str, Any]:
    return {"tpu": bool(getattr(plan, "tpu", False)), "mig": bool(getattr(plan, "mig", False)),
            "operations": [[o.module, o.op] for o in plan.operations]}


# ---------------------------------------------------------------- submit

def _live(cb: Any, settings: Settings) -> Any:
    """The lock's question to Cloud Build: which builds of this environment are QUEUED or WORKING
    (leaving out the root build we run in, when we do)."""
    import os

    own = tuple(b for b in [os.environ.get("TPUBUILD_DISPATCH_BUILD", "").strip()] if b)
    return lambda: builds.live(cb, settings.project_id, settings.env_name, exclude=own)


#: How each input is called in messages: submit's flags, or the root build's substitutions.
SUBMIT_NAMES = {"action": "--action", "tpu": "--tpu", "mig": "--mig", "allow_data_loss": "--allow-data-loss",
                "allow_wipe": "--allow-wipe"}
DISPATCH_NAMES = {"action": "_BUILD_ACTION", "tpu": "_TPU", "mig": "_MIG", "allow_data_loss": "_ALLOW_DATA_LOSS",
                  "allow_wipe": "_ALLOW_WIPE"}


@dataclass(frozen=True)
class Prepared:
    """What submit decided before talking to the cloud: the action, its plan (None for
    ``initialize`` and ``auto``: auto's plan comes from the applied snapshot), the rendered
    pipeline (None likewise), the source tarball (None for ``initialize``) and the repository."""

    action: str
    plan: Any
    config: dict[str, Any] | None
    src: source.Source | None
    repo: Path
    allow_data_loss: bool = False
    allow_wipe: bool = False


def parse_action(raw: str, names: dict[str, str] = SUBMIT_NAMES) -> str:
    action = raw.strip().lower()
    if action not in ACTIONS:
        raise BadInput(f"{names['action']}: {raw!r} is not an action; use one of {', '.join(ACTIONS)}")
    return action


def prepare(settings: Settings, action: str, *, tpu: bool = False, mig: bool = False,
            allow_data_loss: bool = False, allow_wipe: bool = False,
            names: dict[str, str] = SUBMIT_NAMES) -> Prepared:
    """Every check that needs no cloud, done before any client is built (so bad input is exit 2
    even without credentials): the action, the flag combination (``builder.plan.make_plan``
    refuses the meaningless ones), the pipeline (``builder.pipeline.render``), the tfvars and the
    source tarball. Refused here, besides make_plan's own refusals: ``initialize`` with an allow
    flag (it applies no Terraform), ``auto`` with ``tpu``/``mig`` (auto decides the modules), and
    ``allow_wipe`` for a plan that does not apply ``shared_pd`` (nothing would be seeded)."""
    from builder import pipeline, tfvars
    from builder.plan import make_plan, refuse_idle_allow_flags

    from builder.legacy import refuse_unbuildable

    action = parse_action(action, names)
    refuse_unbuildable(settings, action)  # before any client: TPU Nodes can no longer be created
    if action == "initialize":
        make_plan(settings, "initialize", tpu=tpu, mig=mig, names=names)  # refuses the scope flags
        for key, on in (("allow_data_loss", allow_data_loss), ("allow_wipe", allow_wipe)):
            if on:
                raise BadInput(f"{names[key]}: initialize applies no Terraform and seeds nothing, so there is "
                               f"nothing to allow; drop {names[key]}")
        return Prepared(action, None, None, None, workspace.find_repo(settings))
    if action == "auto" and (tpu or mig):
        raise BadInput(f"{names['tpu']}/{names['mig']}: auto decides the modules itself; "
                       f"leave {names['tpu']} and {names['mig']} out (or at default)")
    repo = workspace.find_repo(settings)
    plan = None if action == "auto" else make_plan(settings, action, tpu=tpu, mig=mig, names=names)
    if plan is not None:
        refuse_idle_allow_flags(plan, allow_data_loss=allow_data_loss, allow_wipe=allow_wipe, names=names)
    config = None if plan is None else pipeline.render(settings, plan, allow_data_loss=allow_data_loss,
                                                       allow_wipe=allow_wipe)
    src = source.pack(source.collect(repo, _values_bytes(settings), tfvars.all_for(settings)))
    return Prepared(action, plan, config, src, repo, allow_data_loss, allow_wipe)


def submit(settings: Settings, action: str, *, tpu: bool = False, mig: bool = False,
           allow_data_loss: bool = False, allow_wipe: bool = False, wait: bool = False) -> int:
    prepared = prepare(settings, action, tpu=tpu, mig=mig, allow_data_loss=allow_data_loss, allow_wipe=allow_wipe)
    return execute(settings, prepared, wait=wait)


def execute(settings: Settings, prepared: Prepared, *, wait: bool = False) -> int:
    """Run what ``prepare`` decided: the first place a cloud client is built."""
    from builder import pipeline

    if prepared.action == "initialize":
        return initialize(settings)
    repo, plan, config, src = prepared.repo, prepared.plan, prepared.config, prepared.src
    assert src is not None
    client = clients.storage(settings.project_id)
    if not buckets.exists(client, settings.state_bucket):
        raise WorldError(f"the state bucket gs://{settings.state_bucket} does not exist; run `tpubuild initialize` "
                         "(or the build with _BUILD_ACTION=initialize) first")
    bucket = client.bucket(settings.state_bucket)
    if plan is None:
        plan = auto_plan(settings, bucket, repo)
        if plan is None:
            return 0
        config = pipeline.render(settings, plan, allow_data_loss=prepared.allow_data_loss,
                                 allow_wipe=prepared.allow_wipe)
    assert config is not None
    allow_data_loss, allow_wipe = prepared.allow_data_loss, prepared.allow_wipe
    cb = clients.cloudbuild()
    project = settings.project_id

    def lookup(build_id: str) -> str | None:
        try:
            return builds.status_name(builds.get(cb, project, build_id))
        except WorldError:
            return None

    held = lock.acquire(bucket, lock.Lock(env=settings.env_name, action=plan.action, holder=lock.who(),
                                          created=lock.now(), scope=_scope(plan)),
                        lookup=lookup, live=_live(cb, settings), warn=warn)
    try:
        blob = bucket.blob(src.object_name)
        with cloud_call(f"uploading gs://{settings.state_bucket}/{src.object_name}"):
            if not blob.exists():
                from google.api_core import exceptions as gexc

                try:
                    blob.upload_from_string(src.tgz, content_type="application/gzip", if_generation_match=0)
                except gexc.PreconditionFailed:
                    pass  # the same content, uploaded by someone else meanwhile
        workspace.sync(bucket, settings, repo, source_sha256=src.sha256)
        _keep_ttl_source(bucket, settings, plan.action, src)
        subs = {name: value for name, value in (("_ALLOW_DATA_LOSS", allow_data_loss), ("_ALLOW_WIPE", allow_wipe))
                for value in ["true" if value else "false"] if builds.referenced(config, name)}
        build = builds.to_build(config, bucket=settings.state_bucket, object_name=src.object_name,
                                tags=["tpubuild", f"tpubuild-{settings.env_name}", f"action-{plan.action}"],
                                substitutions=subs)
        created = builds.create(cb, project, build)
    except BaseException:
        lock.abandon(bucket, held)
        raise
    lock.set_build(bucket, held, created.id)
    ops = ", ".join(f"{o.op} {o.module}" for o in plan.operations) or "no Terraform"
    say(f"build {created.id}: {plan.action} of {settings.env_name} ({ops}) from gs://{settings.state_bucket}/"
        f"{src.object_name}")
    say(f"logs: {created.log_url}")
    if not wait:
        return 0
    final = builds.follow(cb, project, created.id, emit=say)
    try:
        say(builds.outcome(final))
    except WorldError:
        if lock.mark_stale(bucket, settings.env_name, created.id, builds.status_name(final),
                           builds.failing_step(final), final.log_url):
            warn(f"the lock of {settings.env_name} stays, marked stale with build {created.id}; "
                 "the next dispatch takes it over and names this build")
        raise
    return 0


def _keep_ttl_source(bucket: Any, settings: Settings, action: str, src: source.Source) -> None:
    """With ``ENV_TTL_HOURS``, the tarball this build runs from is also kept at
    ``workspace/<env>/ttl/source.tgz`` (builder/ttl.py): the TTL's destroy build, started by Cloud
    Scheduler long after this laptop is gone, runs ``tpubuild dispatch`` from it, so it carries the
    values.env last submitted. A destroy leaves it as it is (the TPU's job goes with the TPU)."""
    if not settings.env_ttl_hours or action == "destroy":
        return
    from builder import ttl

    name = ttl.source_object(settings.env_name)
    with cloud_call(f"uploading gs://{settings.state_bucket}/{name}"):
        bucket.blob(name).upload_from_string(src.tgz, content_type="application/gzip")


def cmd_submit(args: argparse.Namespace) -> int:
    return submit(load_settings(args), args.action, tpu=args.tpu, mig=args.mig,
                  allow_data_loss=args.allow_data_loss, allow_wipe=args.allow_wipe, wait=args.wait)


# ---------------------------------------------------------------- dispatch

def cmd_dispatch(args: argparse.Namespace) -> int:
    """The root build's step. Every input is checked (action, substitution strings, values.env,
    the plan, the pipeline) before any client is built: bad input is exit 2 with one line, even
    where there are no credentials."""
    from builder.plan import parse_flag

    action = parse_action(args.action, DISPATCH_NAMES)
    tpu = parse_flag(args.tpu, "_TPU")
    mig = parse_flag(args.mig, "_MIG")
    allow_data_loss = parse_flag(args.allow_data_loss, "_ALLOW_DATA_LOSS")
    allow_wipe = parse_flag(args.allow_wipe, "_ALLOW_WIPE")
    settings = load_settings(args)
    prepared = prepare(settings, action, tpu=tpu, mig=mig, allow_data_loss=allow_data_loss,
                       allow_wipe=allow_wipe, names=DISPATCH_NAMES)
    say(f"dispatch: {action} of {settings.env_name} (project {settings.project_id}, {settings.arch} architecture)")
    return execute(settings, prepared, wait=True)


# ---------------------------------------------------------------- finalize

def _wait_for_build_id(bucket: Any, env: str, build_id: str) -> lock.Lock | None:
    """The lock, once its submit has recorded the build id (it does right after CreateBuild)."""
    import time

    current = lock.read(bucket, env)
    for _ in range(30):
        if current is None or current.build_id:
            return current
        time.sleep(min(2.0, builds.poll_seconds()))
        current = lock.read(bucket, env)
    return current


def cmd_finalize(args: argparse.Namespace) -> int:
    from builder.plan import make_plan

    settings = load_settings(args)
    env, build_id, action = settings.env_name, args.build_id.strip(), args.action.strip().lower()
    if not build_id:
        raise BadInput("--build-id: empty; pass $BUILD_ID")
    if action not in ("initialize", "create", "update", "destroy"):
        raise BadInput(f"--action: {args.action!r} is not a pipeline action; use initialize, create, update or destroy")
    bucket = clients.storage(settings.project_id).bucket(settings.state_bucket)
    held = _wait_for_build_id(bucket, env, build_id)
    if held is None or held.build_id != build_id or held.state != "held":
        # Recording now could overwrite what the lock's real holder applies: fail loudly instead.
        now = "nobody holds it" if held is None else f"it is held by {held.describe()}"
        raise WorldError(
            f"environment {env}: build {build_id} no longer holds the lock ({now}), so its {action} is NOT "
            "recorded in the applied snapshot; run `tpubuild status`, then dispatch again (auto re-applies "
            "what is not recorded)")
    if held.scope.get("operations") is not None:
        ops = [(m, op) for m, op in held.scope["operations"]]
    else:
        ops = [(o.module, o.op) for o in make_plan(settings, action).operations]
    if action != "initialize":
        _record(settings, bucket, build_id, action, ops)
    say(lock.release(bucket, env, build_id))
    return 0


def _record(settings: Settings, bucket: Any, build_id: str, action: str, ops: list[tuple[str, str]]) -> None:
    from builder.plan import make_plan

    env = settings.env_name
    repo = workspace.find_repo(settings)
    every = make_plan(settings, "create").modules
    before = snapshot.read(bucket, env)
    old = _parse_applied(before, settings) if before else None
    now_sources = auto.digests(settings, repo, every)
    applied_mods = {m for m, op in ops if op == "apply"}
    destroyed = {m for m, op in ops if op == "destroy"}
    changed = auto.touched(old, settings, plan_modules=every,
                           sources_then=before.sources if before else None, sources_now=now_sources)
    absent = ((before.absent if before else frozenset()) | destroyed) - applied_mods
    outstanding = ((before.outstanding if before else frozenset()) | changed) - applied_mods - absent
    sources = {m: now_sources[m] if m in applied_mods or before is None else before.sources.get(m, now_sources[m])
               for m in every}
    record = snapshot.Applied(values=_values_bytes(settings), build_id=build_id, action=action,
                              time=lock.now(), outstanding=frozenset(outstanding) & set(every),
                              absent=frozenset(absent) & set(every), sources=sources)
    snapshot.write(bucket, env, record, expected_generation=before.generation if before else 0)
    extra = []
    if record.outstanding:
        extra.append(f"outstanding: {', '.join(sorted(record.outstanding))}")
    if record.absent:
        extra.append(f"absent: {', '.join(sorted(record.absent))}")
    tail = f" ({'; '.join(extra)})" if extra else ""
    say(f"gs://{settings.state_bucket}/{snapshot.values_path(env)}: recorded build {build_id} ({action}){tail}")


# ---------------------------------------------------------------- unlock

def cmd_unlock(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    if not args.force:
        also = " (--even-if-running alone is not enough)" if args.even_if_running else ""
        raise BadInput(f"unlock: breaking the lock needs --force{also}; make sure no build of this environment "
                       "is running")
    client = clients.storage(settings.project_id)
    if not buckets.exists(client, settings.state_bucket):
        raise WorldError(f"the state bucket gs://{settings.state_bucket} does not exist; nothing is locked")
    removed = lock.force_unlock(client.bucket(settings.state_bucket), settings.env_name,
                                live=_live(clients.cloudbuild(), settings),
                                even_if_running=args.even_if_running)
    if removed is None:
        say(f"environment {settings.env_name}: not locked")
    else:
        say(f"environment {settings.env_name}: removed the lock of {removed.describe()}")
    return 0


# ---------------------------------------------------------------- status

def cmd_status(args: argparse.Namespace) -> int:
    from builder.cloud import status

    settings = load_settings(args)
    report = status.gather(settings)
    if args.format == "json":
        say(json.dumps(report, indent=2, sort_keys=True))
    else:
        for line in status.text(report):
            say(line)
    return 1 if report["errors"] else 0


# ---------------------------------------------------------------- renderers

def cmd_bootstrap(args: argparse.Namespace) -> int:
    from builder.cloud.render import root_cloudbuild

    text = root_cloudbuild(load_settings(args))
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    current = out.read_text() if out.is_file() else None
    if args.check:
        if current != text:
            raise WorldError(f"{out} differs from what `tpubuild bootstrap` renders; run `tpubuild bootstrap`")
        say(f"{out}: up to date")
        return 0
    if current == text:
        say(f"{out}: up to date")
        return 0
    try:
        out.write_text(text)
    except OSError as exc:
        raise BadInput(f"{out}: cannot write ({exc.strerror}); pass a writable --output") from None
    say(f"{out}: written; submit it with: gcloud builds submit --config={out} . --substitutions=_BUILD_ACTION=create")
    return 0


def cmd_trigger(args: argparse.Namespace) -> int:
    import yaml

    from builder.cloud.render import trigger

    settings = load_settings(args)
    body = trigger(settings.env_name, args.repo_owner, args.repo_name, args.branch,
                   settings.builder_service_account_resource)
    sys.stdout.write(yaml.safe_dump(body, sort_keys=False, default_flow_style=False))
    return 0
