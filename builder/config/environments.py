"""The environments of one repository (GitOps for a team, docs/cloud.md "Many environments").

A repository holds any number of environments: the root ``values.env`` (alone, the layout every
command has always read) and one ``environments/<name>/values.env`` per further environment. Every
command still takes ``--values`` for one of them; ``tpubuild trigger`` at the repository's root and
``tpubuild plan --all`` take them all from :func:`load_all`.

Each environment keeps its own lock, applied snapshot and Terraform state (all in its state
bucket, ``<PROJECT_ID>-<ENV_BUILD_NAME>-tf-backend``, keyed by its ENV_BUILD_NAME), its own
builder service account (``tb-<ENV_BUILD_NAME>-cb`` unless BUILD_SERVICE_ACCOUNT names one) and
its own triggers (``tpubuild-<ENV_BUILD_NAME>-plan`` / ``-auto``). So two files of one repository
may not share an ENV_BUILD_NAME (their triggers, TPU and lock would be one), nor make the same
state bucket from different PROJECT_ID/ENV_BUILD_NAME pairs (``a-b`` + ``c`` and ``a`` + ``b-c``
both make ``a-b-c-tf-backend``: one would read and overwrite the other's state and snapshot):
:func:`refuse_shared` refuses both, one line per pair, naming both files.

Pure but for reading the files: no cloud call.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from builder.config import Settings, load
from builder.facts.errors import BadInput
from builder.facts.records import record

#: The folder holding one sub-folder per further environment.
FOLDER = "environments"
#: The root environment's file, and each further environment's file inside its folder.
VALUES = "values.env"
#: An environment folder's name: it is part of a file path Cloud Build globs and a build step reads.
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")


@record
class Environment:
    """One environment of the repository: ``path`` is its values file relative to the repository
    (POSIX, as a trigger's ``includedFiles`` and a build step name it)."""

    path: str
    settings: Settings

    @property
    def label(self) -> str:
        """How tables and messages name it: its values file."""
        return self.path


def discover(repo: Path) -> list[str]:
    """The values files of ``repo`` (relative POSIX paths): ``values.env`` when it exists, then
    ``environments/*/values.env`` sorted by folder. A folder whose name a trigger could not carry
    is bad input (one line, how to rename it)."""
    found = [VALUES] if (repo / VALUES).is_file() else []
    folder = repo / FOLDER
    if folder.is_dir():
        for sub in sorted(p for p in folder.iterdir() if (p / VALUES).is_file()):
            if not _NAME.fullmatch(sub.name):
                raise BadInput(f"{FOLDER}/{sub.name}/{VALUES}: the folder name {sub.name!r} is not an environment "
                               "name; rename the folder to lowercase letters, digits, '-' or '_' (like dev or prod-v6e)")
            found.append(str(PurePosixPath(FOLDER, sub.name, VALUES)))
    return found


def is_layout(repo: Path) -> bool:
    """Whether ``repo`` holds further environments (``environments/*/values.env``): then
    ``tpubuild trigger`` prints a plan/apply pair per environment; else the root values.env's one
    push trigger, as before there were many."""
    return any(p != VALUES for p in discover(repo))


def repository_of(values: str) -> tuple[Path, str | None]:
    """The repository a ``--values`` argument belongs to, and the environment it names when it is
    one of ``environments/<name>/values.env`` (None: the root values.env, which stands for the
    whole repository when it has further environments)."""
    path = Path(values).absolute()
    if path.parent.parent.name == FOLDER:
        return path.parent.parent.parent, str(PurePosixPath(FOLDER, path.parent.name, path.name))
    return path.parent, None


def select(repo: Path, only: str | None, given: str) -> list[Environment]:
    """:func:`load_all`, or the one environment ``only`` (``given`` is how the user wrote it)."""
    envs = load_all(repo)
    if only is None:
        return envs
    picked = [e for e in envs if e.path == only]
    if not picked:
        raise BadInput(f"{given}: not an environment of {repo} ({FOLDER}/<name>/{VALUES}); pass one that exists, "
                       "or run at the repository's root for all of them")
    return picked


def load_all(repo: Path) -> list[Environment]:
    """Every environment of ``repo``, loaded (a values file with a problem raises its own one-line
    error, with its path), after :func:`refuse_shared`."""
    paths = discover(repo)
    if not paths:
        raise BadInput(f"{repo}: no environment here (neither {VALUES} nor {FOLDER}/<name>/{VALUES}); run tpubuild "
                       "at the repository's root, or pass --values for one file")
    envs = [Environment(p, load(repo / p)) for p in paths]
    refuse_shared(envs)
    return envs


def _at(env: Environment, key: str) -> str:
    line = env.settings.line_of(key)
    return f"{env.path}:{line}" if line else env.path


def refuse_shared(envs: list[Environment]) -> None:
    """Bad input (exit 2) when two environments share an ENV_BUILD_NAME or a state bucket: one
    line naming both files (the first clash; how many more follow)."""
    problems: list[str] = []
    by_name: dict[str, Environment] = {}
    by_bucket: dict[str, Environment] = {}
    for env in envs:
        s = env.settings
        first = by_name.get(s.env_name)
        if first is not None:
            problems.append(
                f"{_at(env, 'ENV_BUILD_NAME')}: ENV_BUILD_NAME {s.env_name!r} is already "
                f"{_at(first, 'ENV_BUILD_NAME')}'s; each environment needs its own name (its lock, state bucket, "
                "applied snapshot and triggers are keyed by it): rename one of them")
            continue
        by_name[s.env_name] = env
        owner = by_bucket.get(s.state_bucket)
        if owner is not None:
            o = owner.settings
            problems.append(
                f"{_at(env, 'ENV_BUILD_NAME')}: PROJECT_ID {s.project_id!r} with ENV_BUILD_NAME {s.env_name!r} "
                f"makes the state bucket gs://{s.state_bucket}, which {_at(owner, 'ENV_BUILD_NAME')} already makes "
                f"(PROJECT_ID {o.project_id!r}, ENV_BUILD_NAME {o.env_name!r}): it would read and overwrite that "
                "environment's state, lock and applied snapshot; pick an ENV_BUILD_NAME that makes another bucket")
            continue
        by_bucket[s.state_bucket] = env
    if problems:
        more = len(problems) - 1
        raise BadInput(problems[0] + (f" (and {more} more clash{'es' if more > 1 else ''} between environments)"
                                      if more else ""))
