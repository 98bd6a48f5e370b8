"""``tpubuild submit`` and ``tpubuild dispatch`` (the root build's step): check everything offline
(:func:`prepare`), then take the lock, upload the source and create the build (:func:`execute`).

``auto`` decides its plan here, from the applied snapshot in the state bucket: the decision itself
is ``builder.planning.auto`` (pure), the digests of today's sources ``builder.cloud.auto``.

Exit codes: 0 done; 1 a failure in the world (a cloud call, a missing state bucket, no
credentials, a held lock, a build that did not succeed); 2 bad input (values.env, flags, an
``auto`` that would move the environment). docs/cloud.md has the design.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.catalogue import modules as catalogue
from builder.cloud import buckets, builds, clients, iam, lock, snapshot, source, workspace
from builder.cloud.auto import decide_now
from builder.cloud.errors import cloud_call
from builder.commands import applied_or_warn, load_settings, say, warn
from builder.commands.initialize import initialize
from builder.config.calendar import create_refusal
from builder.config.gate import APPLIED, Door, refuse
from builder.config.candidates import acting, at, granted
from builder.facts.actions import Action
from builder.facts.errors import WorldError
from builder.facts.records import record
from builder.inputs import build_limits, tfvars, ttl
from builder.planning import auto
from builder.planning.plan import make_plan
from builder.planning.request import SUBSTITUTIONS, parse, plan_for
from builder.render import pipeline

if TYPE_CHECKING:  # pragma: no cover
    from builder.cloud.source import Source
    from builder.config import Settings
    from builder.planning.plan import Plan
    from builder.planning.request import Request


@record
class Prepared:
    """What submit decided before talking to the cloud: the request, its plan (None for
    ``initialize`` and ``auto``: auto's plan comes from the applied snapshot), the rendered
    pipeline (None likewise), the source tarball (None for ``initialize``) and the repository."""

    request: Request
    plan: Plan | None
    config: dict[str, Any] | None
    src: Source | None
    repo: Path


def prepare(settings: Settings, request: Request) -> Prepared:
    """Every check that needs no cloud, done before any client is built (so bad input is exit 2
    even without credentials): the request (``builder.planning.request.parse`` refused what it could),
    its plan (``builder.planning.request.plan_for``), the pipeline (``builder.render.pipeline.render``), the
    tfvars and the source tarball."""
    plan = plan_for(settings, request)
    repo = workspace.find_repo(settings)
    if request.action is Action.INITIALIZE:
        return Prepared(request, None, None, None, repo)
    config = None if plan is None else pipeline.render(settings, plan, allow_data_loss=request.allow_data_loss,
                                                       allow_wipe=request.allow_wipe)
    src = _source(settings, repo, plan is not None and plan.action is Action.DESTROY, config)
    return Prepared(request, plan, config, src, repo)


def _source(settings: Settings, repo: Path, destroys: bool, config: dict[str, Any] | None) -> Source:
    """The source tarball: the repository, values.env, the tfvars (a destroy runs no script: none
    is resolved) and the step scripts too long for an argument that ``config`` and the health
    bodies in the tfvars run (builder/inputs/build_limits.py)."""
    variables = {**tfvars.all_for(settings, scripts=not destroys), **({} if destroys else tfvars.by_candidate(settings))}
    scripts = build_limits.referenced(json.dumps(config), json.dumps(variables))
    return source.pack(source.collect(repo, workspace.values_bytes(settings), variables, scripts))


def auto_plan(settings: Settings, bucket: Any) -> tuple[Plan | None, Settings]:
    """Decide what ``auto`` does from the applied snapshot in ``bucket``, print the decision and
    why; the plan (None for nothing) and the settings it acts on: placed where the snapshot says
    the slice was granted, while the candidate list holds that place (builder/config/candidates.py),
    so auto keeps the slice there. A snapshot whose values.env no longer parses is warned about and
    every module is updated (``builder.planning.auto.decide_unreadable``)."""
    applied = snapshot.read(bucket, settings.env_name)
    if applied is None:
        decision = decide_now(settings, None)
    else:
        place = granted(applied)
        settings = acting(settings, place, Action.AUTO)
        old = applied_or_warn(applied, settings)
        if old is None:
            decision = auto.decide_unreadable(make_plan(settings, Action.CREATE).modules, applied.absent)
        else:
            old = at(old, place) if place is not None else old
            refuse(settings, Action.AUTO, Door.DISPATCH, old, only=APPLIED)  # before any change
            decision = decide_now(settings, old, build_id=applied.build_id, outstanding=applied.outstanding,
                                  absent=applied.absent, sources_then=applied.sources)
    plan = auto.plan_for(settings, decision)
    if plan is not None and plan.action is Action.CREATE:  # a create submits a new calendar request

        too_soon = create_refusal(settings)
        if too_soon is not None:
            raise too_soon
    say(decision.summary())
    for reason in decision.reasons:
        say(f"  - {reason}")
    return plan, settings


def _granted_place(settings: Settings, bucket: Any, *, destroy: bool) -> Settings:
    """Where an explicit update or destroy acts, from the applied snapshot's granted place
    (builder/config/candidates.py ``acting``: an update stays there while the list holds it and
    puts no other zone first, a destroy takes down what is there). ``settings`` itself when the snapshot records none."""
    found = snapshot.read(bucket, settings.env_name)
    place = granted(found) if found is not None else None
    old = applied_or_warn(found, settings) if place is not None and not destroy else None
    # the applied list's first zone: an update whose list puts another zone first moves (candidates.reordered)
    return acting(settings, place, Action.DESTROY if destroy else Action.UPDATE, old.zone if old is not None else None)


def _scope(plan: Plan) -> dict[str, Any]:
    """The lock's record of what the build runs (``finalize`` records exactly these operations)."""
    return {"tpu": plan.tpu, "mig": plan.mig, "operations": [[o.module, o.op] for o in plan.operations]}


def submit(settings: Settings, action: str, *, tpu: bool = False, mig: bool = False,
           allow_data_loss: bool = False, allow_wipe: bool = False, wait: bool = False) -> int:
    request = parse(settings, action, tpu=tpu, mig=mig, allow_data_loss=allow_data_loss, allow_wipe=allow_wipe,
                    door=Door.SUBMIT)
    return execute(settings, prepare(settings, request), wait=wait)


def execute(settings: Settings, prepared: Prepared, *, wait: bool = False, preflight: bool = False) -> int:
    """Run what ``prepare`` decided: the first place a cloud client is built. ``preflight`` (dispatch,
    which runs as the builder account): test that account's permissions first (builder/cloud/iam.py)."""
    request = prepared.request
    if request.action is Action.INITIALIZE:
        return initialize(settings)
    repo, plan, config, src = prepared.repo, prepared.plan, prepared.config, prepared.src
    prepared_settings = settings
    assert src is not None
    client = clients.storage(settings.project_id)
    if not buckets.exists(client, settings.state_bucket):
        raise WorldError(f"the state bucket gs://{settings.state_bucket} does not exist; run `tpubuild initialize` "
                         "(or the build with _BUILD_ACTION=initialize) first")
    if preflight and (note := iam.preflight(clients.projects(), settings)):
        warn(note)
    bucket = client.bucket(settings.state_bucket)
    if plan is not None and len(settings.candidates) > 1 and request.action in (Action.UPDATE, Action.DESTROY):
        placed = _granted_place(settings, bucket, destroy=request.action is Action.DESTROY)
        if placed is not settings:  # rendered again where the slice is: prepare is offline and pure
            settings, prepared = placed, prepare(placed, request)
            plan, config, src = prepared.plan, prepared.config, prepared.src
    if plan is None:
        plan, settings = auto_plan(settings, bucket)
        if plan is None:
            return 0
        config = pipeline.render(settings, plan, allow_data_loss=request.allow_data_loss,
                                 allow_wipe=request.allow_wipe)
        if build_limits.referenced(json.dumps(config)):  # auto's plan runs a shipped script: the source carries it
            src = _source(prepared_settings, repo, plan.action is Action.DESTROY, config)
    assert config is not None
    allow_data_loss, allow_wipe = request.allow_data_loss, request.allow_wipe
    cb = clients.cloudbuild()
    project = settings.project_id

    def lookup(build_id: str) -> str | None:
        try:
            return builds.status_name(builds.get(cb, project, build_id))
        except WorldError:
            return None

    previous: list[lock.Lock] = []
    held = lock.acquire(bucket, lock.Lock(env=settings.env_name, action=plan.action, holder=lock.who(),
                                          created=lock.now(), scope=_scope(plan)),
                        lookup=lookup, live=builds.live_probe(cb, settings), warn=warn, took_over=previous.append)
    if previous:  # a finished build's lock: the Terraform state locks it died holding are dead too
        lock.break_state_locks(bucket, settings.env_name, [spec.name for spec in catalogue.specs(settings.arch)],
                               previous[0], _finished_at(cb, project, previous[0].build_id), warn)
    try:
        source.upload(bucket, src)
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


def _finished_at(cb: Any, project: str, build_id: str) -> str:
    """When Cloud Build says ``build_id`` finished (RFC 3339), '' when it cannot say."""
    if not build_id:
        return ""
    try:
        finished = builds.get(cb, project, build_id).finish_time
    except WorldError:
        return ""
    return finished.isoformat() if finished and finished.year > 1970 else ""


def _keep_ttl_source(bucket: Any, settings: Settings, action: Action, src: Source) -> None:
    """With ``ENV_TTL_HOURS`` or ``TPU_RECOVERY``, the tarball this build runs from is also kept at
    ``workspace/<env>/ttl/source.tgz`` (builder/inputs/ttl.py): the TTL's destroy build and the health
    check's build (builder/inputs/recovery.py), started by Cloud Scheduler long after this laptop is gone,
    run tpubuild from it, so they carry the values.env last submitted. A destroy leaves it as it
    is (the TPU's jobs go with the TPU). The step scripts it ships are also kept, each at its own
    content-addressed object (builder/inputs/build_limits.py ``fetched``)."""
    if not (settings.env_ttl_hours or settings.recovery) or action is Action.DESTROY:
        return

    name = ttl.source_object(settings.env_name)
    with cloud_call(f"uploading gs://{settings.state_bucket}/{name}"):
        bucket.blob(name).upload_from_string(src.tgz, content_type="application/gzip")
    # the scheduled bodies' shipped scripts, each where its step copies it from (build_limits.fetched)
    for path in (n for n in src.names if build_limits.shipped_path(f"exec bash {n}")):
        blob = bucket.blob(build_limits.object_name(path))
        with cloud_call(f"uploading gs://{settings.state_bucket}/{blob.name}"):
            if not blob.exists():
                blob.upload_from_string(build_limits.shipped(path), content_type="text/x-shellscript")


def cmd_submit(args: argparse.Namespace) -> int:
    return submit(load_settings(args), args.action, tpu=args.tpu, mig=args.mig,
                  allow_data_loss=args.allow_data_loss, allow_wipe=args.allow_wipe, wait=args.wait)


def cmd_dispatch(args: argparse.Namespace) -> int:
    """The root build's step. Every input is checked (values.env, the action and substitution
    strings, the plan, the pipeline) before any client is built: bad input is exit 2 with one
    line, even where there are no credentials."""
    settings = load_settings(args)
    request = parse(settings, args.action, tpu=args.tpu, mig=args.mig, allow_data_loss=args.allow_data_loss,
                    allow_wipe=args.allow_wipe, spelling=SUBSTITUTIONS, door=Door.DISPATCH)
    prepared = prepare(settings, request)
    say(f"dispatch: {request.action} of {settings.env_name} (project {settings.project_id}, "
        f"{settings.arch} architecture)")
    return execute(settings, prepared, wait=True, preflight=True)
