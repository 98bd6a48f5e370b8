"""GitOps ``auto`` in the cloud: the decision itself is pure and lives in ``builder.planning.auto`` (so
``tpubuild plan --action auto`` previews it offline); here are the digests of each module's
Terraform and boot sources, which read the repository's files, and :func:`decide_now`, the decision
against today's repository."""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable
from pathlib import Path

from builder.catalogue import modules as catalogue
from builder.cloud.workspace import find_repo, walk
from builder.config import Settings
from builder.facts.actions import Action
from builder.planning.auto import (  # noqa: F401 - re-exported: callers and tests use builder.cloud.auto
    MOVING_KEYS,
    Decision,
    changed_keys,
    decide,
    modules_for_key,
    touched,
)
from builder.planning.plan import make_plan


def terraform_dirs(repo: Path, top: str) -> list[str]:
    """``top`` and, transitively, the local child modules (``source = "../x"``) it calls: a change
    to ``modules/host_identity`` is a change to every root that uses it."""
    import hcl2  # python-hcl2; only `auto` needs it

    seen: list[str] = []
    todo = [top]
    while todo:
        folder = todo.pop()
        if folder in seen:
            continue
        seen.append(folder)
        for tf in sorted((repo / folder).glob("*.tf")):
            with tf.open(encoding="utf-8") as fh:
                calls = hcl2.load(fh).get("module", [])
            for call in calls:
                for body in call.values():
                    src = str(body.get("source", "")).strip('"')
                    if src.startswith(("./", "../")):
                        todo.append(posixpath.normpath(posixpath.join(folder, src)))
    return seen


def digests(settings: Settings, repo: Path, modules: Iterable[str]) -> dict[str, str]:
    """plan module → SHA-256 (16 hex) of its Terraform directories (the root and the local child
    modules it calls) plus the boot sources it uses."""
    mine = catalogue.specs(settings.arch)
    out: dict[str, str] = {}
    for module in modules:
        spec = next(s for s in mine if s.name == module)
        tops = terraform_dirs(repo, spec.tfdir)
        files = [(rel, p) for top in tops for rel, p in walk(repo, top)]
        # boot folders; a folder inside one of them that another module boots from is not ours
        others = tuple(f"{d}/" for s in mine if s is not spec for d in s.boot)
        files += [(rel, p) for d in spec.boot for rel, p in walk(repo, d)
                  if not any(rel.startswith(o) and o.startswith(f"{d}/") for o in others)]
        h = hashlib.sha256()
        for rel, path in sorted(files):
            h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
        out[module] = h.hexdigest()[:16]
    return out


def decide_now(settings: Settings, applied: Settings | None, *, build_id: str = "",
               outstanding: frozenset[str] = frozenset(), absent: frozenset[str] = frozenset(),
               sources_then: dict[str, str] | None = None) -> Decision:
    """``builder.planning.auto.decide`` against today's repository: the one way ``submit``'s auto and
    ``tpubuild plan --action auto`` decide. Today's source digests are computed only when the
    snapshot recorded some to compare with (``decide`` compares a module only when both exist)."""
    every = make_plan(settings, Action.CREATE).modules
    now = digests(settings, find_repo(settings), every) if sources_then else None
    return decide(settings, applied, plan_modules=every, build_id=build_id, outstanding=outstanding,
                  absent=absent, sources_then=sources_then, sources_now=now)
