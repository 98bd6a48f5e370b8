"""Helpers for the pipeline tests: every (values, action, flags) combination, and an emulation of
what Cloud Build does to a step before running it (substitutions, MUST_MATCH)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.conftest import EXAMPLES, NODE

NODE_ENV = NODE
VM_ENV = EXAMPLES / "vm-v4-32.env"
MIG_ENV = EXAMPLES / "mig-v6e-16-spot.env"
ENVS = {"node": NODE_ENV, "vm": VM_ENV, "mig": MIG_ENV}
ACTIONS = ("initialize", "create", "update", "destroy")
FLAGS = ((False, False), (True, False), (False, True), (True, True))

#: Cloud Build's built-in substitutions (https://cloud.google.com/build/docs/configuring-builds/substitute-variable-values).
BUILTINS = {
    "PROJECT_ID": "my-tpu-project", "PROJECT_NUMBER": "123456789012", "LOCATION": "global",
    "BUILD_ID": "0b5c3a5e-1f2d-4c1e-9a7b-3d2f1e0c9b8a", "TRIGGER_NAME": "", "COMMIT_SHA": "",
    "REVISION_ID": "", "SHORT_SHA": "", "REPO_NAME": "", "REPO_FULL_NAME": "", "BRANCH_NAME": "",
    "TAG_NAME": "", "REF_NAME": "", "TRIGGER_BUILD_CONFIG_PATH": "", "SERVICE_ACCOUNT_EMAIL": "",
    "SERVICE_ACCOUNT": "",
}

_SUBST = re.compile(r"\$(\$|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class SubstitutionError(ValueError):
    pass


def ancestors(config: dict[str, Any], step_id: str) -> set[str]:
    """Every step a rendered Build's step ``step_id`` waits for, directly or not (its waitFor graph)."""
    steps = {st["id"]: st for st in config["steps"]}
    out: set[str] = set()
    todo = [w for w in steps[step_id]["waitFor"] if w != "-"]
    while todo:
        w = todo.pop()
        if w not in out:
            out.add(w)
            todo.extend(x for x in steps[w]["waitFor"] if x != "-")
    return out


def ops(plan: Any) -> list[tuple[str, str, tuple[str, ...]]]:
    """A plan's operations as (module, op, after) tuples, the form the plan tests compare."""
    return [(o.module, o.op, o.after) for o in plan.operations]


def substitute(text: str, substitutions: dict[str, str] | None = None) -> str:
    """What Cloud Build does to a step's args and env with substitutionOption MUST_MATCH: ``$$``
    becomes ``$``; ``$NAME``/``${NAME}`` become the value of a built-in or user substitution;
    any other ``$NAME``/``${...}`` fails the build."""
    values = {**BUILTINS, **(substitutions or {})}

    def one(m: re.Match[str]) -> str:
        if m.group(1) == "$":
            return "$"
        name = m.group(2) if m.group(2) is not None else m.group(3)
        if name not in values:
            raise SubstitutionError(f"{m.group(0)!r} is not a valid built-in or user substitution")
        return values[name]

    return _SUBST.sub(one, text)


def unmatched_substitutions(build: dict[str, Any]) -> list[str]:
    """What Cloud Build refuses at submission under MUST_MATCH (its default substitutionOption,
    "fails the build if error in substitutions checks, like missing a substitution in the template
    or in the map"): each user substitution of the build's map that no step uses, and each
    ``$_NAME`` a step uses that the map lacks. Empty under ALLOW_LOOSE, which drops them."""
    if build.get("options", {}).get("substitutionOption", "MUST_MATCH") == "ALLOW_LOOSE":
        return []
    given = set(build.get("substitutions", {}))
    used: set[str] = set()
    for step in build["steps"]:
        for text in [*step.get("args", []), *step.get("env", []), step.get("entrypoint", ""), step["name"]]:
            used |= {m.group(2) or m.group(3) for m in _SUBST.finditer(text) if m.group(1) != "$"}
    used = {u for u in used if u.startswith("_")}
    return ([f"key {k!r} in the substitution data is not matched in the template" for k in sorted(given - used)]
            + [f"key {k!r} in the template is not in the substitution data" for k in sorted(used - given)])


@dataclass(frozen=True)
class Case:
    arch: str
    action: str
    tpu: bool
    mig: bool

    @property
    def valid(self) -> bool:
        if self.arch == "node" and self.action in ("create", "update"):
            return False  # TPU Node is read-only legacy (builder/config/legacy.py): destroy only
        if self.action in ("initialize", "create"):  # create applies everything: a scope is refused
            return not (self.tpu or self.mig)
        if self.arch == "mig" and self.action == "destroy" and self.tpu and not self.mig:
            return False  # the slice's access may not go while its VMs run
        return not (self.mig and self.arch == "vm")

    @property
    def id(self) -> str:
        flags = "+".join(f for f, on in (("tpu", self.tpu), ("mig", self.mig)) if on) or "none"
        return f"{self.arch}-{self.action}-{flags}"

    def cli_args(self) -> list[str]:
        args = ["--values", str(ENVS[self.arch]), "--action", self.action]
        return args + (["--tpu"] if self.tpu else []) + (["--mig"] if self.mig else [])


def all_cases() -> Iterator[Case]:
    for arch, action, (tpu, mig) in itertools.product(ENVS, ACTIONS, FLAGS):
        yield Case(arch, action, tpu, mig)


def step_script(step: dict[str, Any], substitutions: dict[str, str] | None = None) -> str:
    """The script a step runs, as its shell sees it after Cloud Build's substitutions (a script
    shipped as a file of the source, builder/inputs/build_limits.py: that file, which Cloud Build
    does not substitute; its step's env carries what it needs)."""
    from builder.inputs import build_limits

    assert step["args"][0] == "-c" and len(step["args"]) == 2, step["id"]
    path = build_limits.shipped_path(step["args"][1])
    if path is not None:
        return build_limits.shipped(path)
    return substitute(step["args"][1], substitutions)


def step_env(step: dict[str, Any], substitutions: dict[str, str] | None = None) -> dict[str, str]:
    env = {}
    for item in step.get("env", []):
        key, _, value = substitute(item, substitutions).partition("=")
        env[key] = value
    return env


def stand_in_bin(root: Any, *folders: str, **scripts: str) -> tuple[Any, ...]:
    """``root/bin`` holding each of ``scripts`` (name → text) as an executable stand-in, and
    ``root/<folder>`` for each of ``folders``, all made; the bin folder, then the folders."""
    bindir = root / "bin"
    made = [bindir, *(root / f for f in folders)]
    for d in made:
        d.mkdir()
    for name, text in scripts.items():
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    return tuple(made)


def moving_settings() -> Any:
    """vm-v5p-32.env (a dataset disk, BASIC_SSD Filestore, roberta, make-before-break) as an update
    acts on it when its ZONE list was reordered to put us-east5-b first while the slice is in
    us-east5-a: the move to another zone (builder/config/candidates.py ``acting``)."""
    from builder.config import load_text
    from builder.config.candidates import Candidate, acting
    from builder.facts.actions import Action
    from tests.conftest import REPO, rewrite_env

    base = EXAMPLES / "vm-v5p-32.env"
    settings = load_text(rewrite_env(base.read_text(), ZONE="us-east5-b,us-east5-a"), REPO / base.name)
    moved = acting(settings, Candidate("us-east5-a", "us-east5", settings.provisioning), Action.UPDATE, "us-east5-a")
    assert moved.moving_from == "us-east5-a", moved.zone
    return moved
