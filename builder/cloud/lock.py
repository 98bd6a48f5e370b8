"""The environment lock: ``gs://<state_bucket>/workspace/<ENV>/lock.json``.

* ``acquire`` creates the object with ``if_generation_match=0``: of two concurrent callers GCS
  lets exactly one write it (the other gets 412 and sees the holder).
* The holder's JSON names who took it (``holder``), when (``created``), the action and scope, and,
  once the build exists, its id (``set_build``, a rewrite conditioned on the lock's generation).
* The pipeline's last step (``tpubuild finalize``) ``release`` s it when its build id matches.
* A failing build never reaches finalize: ``submit --wait`` ``mark_stale`` s the lock with the
  build's id, outcome, failing step and log URL. A lock whose build has finished (stale, or held by
  a build Cloud Build reports as finished) is taken over by the next dispatch with a warning that
  names that build; a lock whose build is still queued or working, or whose build cannot be looked
  up, refuses the dispatch (exit 1) naming its holder. A lock that never got a build id (its
  submit died before creating the build) is stale after ``ORPHAN_SECONDS``.
* Before taking over a stale or build-less lock, the taker asks Cloud Build for the builds of
  this environment that are QUEUED or WORKING (``live``: ListBuilds on the ``tpubuild-env-<env>``
  tag). A lock can look stale while its build lives: its submit died after ``CreateBuild`` and
  before ``set_build`` (SIGKILL, a cancelled root build, a lost write). While one lives, the
  takeover is refused naming it.
* ``tpubuild unlock --force`` asks the same question and refuses while a build of the environment
  lives; ``--even-if-running`` is the explicit override.
* Every replace and delete of the lock object carries the generation it was read at
  (``if_generation_match``): nothing ever removes a lock it has not seen.
* A build that dies inside a ``terraform`` command leaves that module's Terraform state lock
  (``<env>/<module>/default.tflock`` in the state bucket) held, and every later plan of the module
  would wait for it and fail. When a dispatch takes the environment lock over from a finished
  build, ``break_state_locks`` deletes the state locks that build left: those whose lock info was
  ``Created`` while it held the environment lock (``left_by``: after the lock's ``created``, before
  the build finished). Terraform's lock info cannot carry a build id (its ``Who`` is the step
  container's user@host), so the window is what names the build; a state lock from any other time
  (a person's ``terraform`` by hand) is left alone and named.
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import socket
import uuid
from collections.abc import Callable
from typing import Any

from builder.catalogue.step_kinds import BUILD_ENDED
from builder.cloud import objects
from builder.cloud.errors import cloud_call
from builder.facts.errors import WorldError
from builder.facts.records import asdict, field, fields, record, replace

FINISHED = BUILD_ENDED
ORPHAN_SECONDS = 30 * 60

#: build id → its Cloud Build status name ("WORKING", "FAILURE", ...), or None when unknown.
BuildLookup = Callable[[str], "str | None"]
#: The builds of the environment that are still QUEUED or WORKING (``builder.cloud.builds.Live``:
#: ``id``, ``status``, ``describe()``).
LiveLookup = Callable[[], "list[Any]"]


def _running_refusal(env: str, running: list[Any], what: str) -> WorldError:
    first = running[0]
    more = f" (and {len(running) - 1} more)" if len(running) > 1 else ""
    return WorldError(
        f"environment {env}: {what}, but {first.describe()}{more} of this environment is still "
        f"{first.status}; wait for it to finish or cancel it (gcloud builds cancel {first.id}), "
        "or run `tpubuild unlock --force --even-if-running` if you are sure it must be ignored"
    )


def path(env: str) -> str:
    return f"workspace/{env}/lock.json"


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def who() -> str:
    """Cloud Build's dispatch build when we run in one, else user@host."""
    build = os.environ.get("TPUBUILD_DISPATCH_BUILD", "").strip()
    if build:
        return f"cloud build {build}"
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


@record
class Lock:
    env: str
    action: str
    holder: str
    created: str
    build_id: str = ""
    state: str = "held"  # held | stale
    scope: dict[str, Any] = field(default_factory=dict)  # {"tpu": bool, "mig": bool, "operations": [[m, op]...]}
    outcome: str = ""
    failed_step: str = ""
    log_url: str = ""
    #: Identifies this taker: a create that landed but whose answer was lost is retried by the
    #: client, gets 412, and must then recognise the lock as its own, not someone else's.
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    generation: int = 0  # of the GCS object; not stored in it

    def to_json(self) -> str:
        body = asdict(self)
        body.pop("generation")
        return json.dumps(body, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: bytes | str, generation: int) -> Lock:
        try:
            body = json.loads(text)
            known = {k: v for k, v in body.items() if k in {f.name for f in fields(cls)} and k != "generation"}
            return cls(**known, generation=generation)
        except (ValueError, TypeError) as exc:
            return cls(env="?", action="?", holder=f"(unreadable lock: {exc})", created="?", generation=generation)

    def describe(self) -> str:
        build = f"build {self.build_id}" if self.build_id else "a submit that has not created its build yet"
        text = f"{build} ({self.action}, since {self.created}, by {self.holder})"
        if self.state == "stale":
            step = f" at step {self.failed_step}" if self.failed_step else ""
            logs = f"; logs: {self.log_url}" if self.log_url else ""
            text += f", which ended {self.outcome or 'without releasing it'}{step}{logs}"
        return text


def read(bucket: Any, env: str) -> Lock | None:
    found = objects.read(bucket, path(env))
    if found is None:
        return None
    data, blob = found
    return Lock.from_json(data, int(blob.generation))


def _write(bucket: Any, lock: Lock, if_generation_match: int) -> Lock | None:
    """Write ``lock`` if the object's generation is still ``if_generation_match``; None on conflict."""
    from google.api_core import exceptions as gexc

    blob = bucket.blob(path(lock.env))
    with cloud_call(f"writing gs://{bucket.name}/{path(lock.env)}"):
        try:
            blob.upload_from_string(lock.to_json(), content_type="application/json",
                                    if_generation_match=if_generation_match)
        except gexc.PreconditionFailed:
            return None
    return replace(lock, generation=int(blob.generation))


def _age_seconds(lock: Lock) -> float:
    try:
        created = dt.datetime.fromisoformat(lock.created.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (dt.datetime.now(dt.timezone.utc) - created).total_seconds()


def finished_state(lock: Lock, lookup: BuildLookup | None) -> str | None:
    """The reason the lock no longer protects anything, or None when it must be respected."""
    if lock.state == "stale":
        return lock.outcome or "stale"
    if not lock.build_id:
        return "orphaned" if _age_seconds(lock) > ORPHAN_SECONDS else None
    state = lookup(lock.build_id) if lookup else None
    return state if state in FINISHED else None


def acquire(bucket: Any, lock: Lock, *, lookup: BuildLookup | None = None, live: LiveLookup | None = None,
            warn: Callable[[str], None] = lambda _m: None,
            took_over: Callable[[Lock], None] = lambda _l: None) -> Lock:
    """Take the lock or raise ``WorldError`` naming who holds it.

    ``live`` lists the environment's QUEUED/WORKING builds; a stale or build-less lock is taken
    over only when it lists none (the dispatch always passes it). ``took_over`` is told the lock
    it replaced (a finished build's: its state locks are dead, ``break_state_locks``)."""
    for _attempt in range(5):
        won = _write(bucket, lock, 0)
        if won is not None:
            return won
        current = read(bucket, lock.env)
        if current is None:
            continue  # released between our attempt and the read
        if current.token == lock.token:
            return current  # our own write landed; only its answer was lost
        reason = finished_state(current, lookup)
        if reason is None:
            raise WorldError(
                f"environment {lock.env} is locked by {current.describe()}; wait for that build to finish, "
                f"or run `tpubuild unlock --force` if you are sure it is gone"
            )
        if live is not None:
            running = live()
            if running:
                raise _running_refusal(lock.env, running, f"the lock of {current.describe()} looks stale")
        if current.state != "stale" and current.build_id:
            current = replace(current, state="stale", outcome=reason)
        warn(f"taking over the stale lock of environment {lock.env}: {current.describe()}")
        won = _write(bucket, lock, current.generation)
        if won is not None:
            took_over(current)
            return won
    raise WorldError(f"environment {lock.env}: the lock kept changing while taking it; retry the dispatch")


def set_build(bucket: Any, lock: Lock, build_id: str) -> Lock:
    updated = _write(bucket, replace(lock, build_id=build_id), lock.generation)
    if updated is None:
        current = read(bucket, lock.env)
        if current is not None and current.token == lock.token and current.build_id == build_id:
            return current  # our own write landed; only its answer was lost
        raise WorldError(
            f"environment {lock.env}: the lock was changed by someone else while build {build_id} was being "
            "created (tpubuild unlock --force?); the build runs, but is no longer protected by the lock"
        )
    return updated


def mark_stale(bucket: Any, env: str, build_id: str, outcome: str, failed_step: str, log_url: str) -> bool:
    """Mark the lock held by ``build_id`` stale; False when the lock is not that build's."""
    current = read(bucket, env)
    if current is None or current.build_id != build_id:
        return False
    stale = replace(current, state="stale", outcome=outcome, failed_step=failed_step, log_url=log_url)
    return _write(bucket, stale, current.generation) is not None


def release(bucket: Any, env: str, build_id: str) -> str:
    """Delete the lock when it is held by ``build_id``; return what happened, one line."""
    from google.api_core import exceptions as gexc

    current = read(bucket, env)
    if current is None:
        return f"environment {env}: no lock to release"
    if current.build_id != build_id:
        return f"environment {env}: the lock is held by {current.describe()}, not by build {build_id}; left alone"
    with cloud_call(f"deleting gs://{bucket.name}/{path(env)}"):
        try:
            bucket.blob(path(env)).delete(if_generation_match=current.generation)
        except (gexc.NotFound, gexc.PreconditionFailed):
            return f"environment {env}: the lock changed while releasing it; left alone"
    return f"environment {env}: lock of build {build_id} released"


def force_unlock(bucket: Any, env: str, *, live: LiveLookup | None = None,
                 even_if_running: bool = False) -> Lock | None:
    """Delete the lock (the generation read, nothing newer); refuse while ``live`` lists a running
    build of the environment unless ``even_if_running``. The removed lock, or None when unlocked."""
    from google.api_core import exceptions as gexc

    current = read(bucket, env)
    if current is None:
        return None
    if live is not None and not even_if_running:
        running = live()
        if running:
            raise _running_refusal(env, running, f"refusing to break the lock of {current.describe()}")
    with cloud_call(f"deleting gs://{bucket.name}/{path(env)}"):
        try:
            bucket.blob(path(env)).delete(if_generation_match=current.generation)
        except gexc.NotFound:
            return None
        except gexc.PreconditionFailed:
            raise WorldError(f"environment {env}: the lock changed while breaking it (another dispatch took or "
                             "updated it); run `tpubuild status` and unlock again if you still must") from None
    return current


def abandon(bucket: Any, held: Lock) -> None:
    """Give back a lock we took but never attached a build to (the submit failed before the build)."""
    from google.api_core import exceptions as gexc

    try:
        bucket.blob(path(held.env)).delete(if_generation_match=held.generation)
    except (gexc.NotFound, gexc.PreconditionFailed):
        pass
    except Exception:  # noqa: BLE001 - the original failure is the one to report
        pass


def state_lock_path(env: str, module: str) -> str:
    """Terraform's GCS backend lock of a module's state (prefix ``<env>/<module>``, workspace default)."""
    return f"{env}/{module}/default.tflock"


def _instant(text: str) -> dt.datetime | None:
    """An RFC 3339 time (Terraform writes nanoseconds, Python reads microseconds), or None."""
    text = text.strip().replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[:min(digits, 6)].ljust(6, '0')}{rest[digits:]}"
    try:
        out = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return out if out.tzinfo else None


def left_by(info: dict[str, Any], previous: Lock, finished: str) -> bool:
    """Whether the Terraform state lock ``info`` (its lock info: ``ID``, ``Created``, ...) was left by
    the finished build that held ``previous``: created inside that build's hold of the environment
    lock, from ``previous.created`` to ``finished`` (the build's finish time; '' unknown: now)."""
    created, start = _instant(str(info.get("Created", ""))), _instant(previous.created)
    end = _instant(finished) if finished else dt.datetime.now(dt.timezone.utc)
    if created is None or start is None or end is None or not previous.build_id:
        return False
    return start <= created <= end


def break_state_locks(bucket: Any, env: str, modules: list[str], previous: Lock, finished: str,
                      warn: Callable[[str], None]) -> list[str]:
    """Delete the state locks of ``modules`` that the finished build of ``previous`` left
    (``left_by``), each as read (its generation); warn one line per lock broken or left. The
    modules whose lock was broken."""
    from google.api_core import exceptions as gexc

    broken = []
    for module in modules:
        name = state_lock_path(env, module)
        found = objects.read(bucket, name)
        if found is None:
            continue
        data, blob = found
        try:
            info = json.loads(data)
        except ValueError:
            info = {}
        said = f"Terraform state lock {info.get('ID', '?')} of {module} (created {info.get('Created', '?')})"
        if not left_by(info, previous, finished):
            warn(f"{said} was not taken by build {previous.build_id}; left alone: if nobody runs terraform on "
                 f"{env}/{module}, run terraform force-unlock {info.get('ID', '<ID>')} in modules/ with that backend")
            continue
        with cloud_call(f"deleting gs://{bucket.name}/{name}"):
            try:
                bucket.blob(name).delete(if_generation_match=int(blob.generation))
            except (gexc.NotFound, gexc.PreconditionFailed):
                continue
        warn(f"broke the {said}, left by build {previous.build_id}, which ended {previous.outcome or 'without releasing it'}")
        broken.append(module)
    return broken
