"""``tpubuild finalize``: the pipeline's last step. It records what the build applied in the
applied snapshot (``builder.planning.applied.after_build`` does the arithmetic) and releases the lock.

It records only while this build still holds the lock: otherwise the lock's real holder may be
applying something else, and recording would overwrite its truth (exit 1, nothing recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.cloud import builds, clients, lock, snapshot, workspace
from builder.cloud.auto import digests
from builder.commands import applied_or_warn, load_settings, say
from builder.config.candidates import granted
from builder.facts.actions import PLAN_ACTIONS, Action
from builder.facts.errors import BadInput, WorldError
from builder.planning import auto
from builder.planning.applied import after_build
from builder.planning.plan import make_plan

if TYPE_CHECKING:  # pragma: no cover
    from builder.cloud.lock import Lock
    from builder.config import Settings



def _wait_for_build_id(bucket: Any, env: str, build_id: str) -> Lock | None:
    """The lock, once its submit has recorded the build id (it does right after CreateBuild)."""
    current = lock.read(bucket, env)
    for _ in range(30):
        if current is None or current.build_id:
            return current
        time.sleep(min(2.0, builds.poll_seconds()))
        current = lock.read(bucket, env)
    return current


def cmd_finalize(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    env, build_id = settings.env_name, args.build_id.strip()
    if not build_id:
        raise BadInput("--build-id: empty; pass $BUILD_ID")
    # a pipeline runs a plan's action: auto has become create or update before any pipeline exists
    action = Action.parse(args.action, "--action", choices=map(Action, PLAN_ACTIONS), what="a pipeline action")
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
    if action is not Action.INITIALIZE:
        record(settings, bucket, build_id, action, ops)
    say(lock.release(bucket, env, build_id))
    return 0


def granted_place(before: Any, action: Action) -> dict[str, str]:
    """Where the slice was granted, for the snapshot's ``granted``: what this build's acquisition
    (the accelerator's apply: one candidate or the failover loop, docs/capacity.md) wrote to
    ``$WORKSPACE/plans/granted.json``; else, when this build did not apply the slice, what the
    snapshot before recorded; a destroy of the slice (none of its record is kept) records none."""
    path = Path(os.environ.get("WORKSPACE", "/workspace")) / "plans" / "granted.json"
    try:
        place = granted({"granted": json.loads(path.read_text())})
    except (OSError, ValueError):
        place = None
    if place is not None:
        return {"zone": place.zone, "mode": place.mode}
    kept = dict(getattr(before, "granted", None) or {}) if before is not None else {}
    return {} if action is Action.DESTROY else kept


def record(settings: Settings, bucket: Any, build_id: str, action: Action, ops: list[tuple[str, str]]) -> None:
    """Write the applied snapshot after build ``build_id`` ran ``ops``: today's values.env, and the
    ledger ``builder.planning.applied.after_build`` derives from the snapshot found and the operations."""
    env = settings.env_name
    repo = workspace.find_repo(settings)
    every = make_plan(settings, Action.CREATE).modules
    before = snapshot.read(bucket, env)
    old = applied_or_warn(before, settings) if before else None
    now_sources = digests(settings, repo, every)
    changed = auto.touched(old, settings, plan_modules=every,
                           sources_then=before.sources if before else None, sources_now=now_sources)
    ledger = after_build(before, ops, every=every, changed=changed, sources_now=now_sources)
    applied = snapshot.Applied(values=workspace.values_bytes(settings), build_id=build_id, action=action.value,
                               time=lock.now(), outstanding=ledger.outstanding, absent=ledger.absent,
                               sources=ledger.sources, granted=granted_place(before, action))
    snapshot.write(bucket, env, applied, expected_generation=before.generation if before else 0)
    say(f"gs://{settings.state_bucket}/{snapshot.values_path(env)}: recorded build {build_id} ({action}){ledger.tail()}")
