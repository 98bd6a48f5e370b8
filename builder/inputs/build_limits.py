"""Cloud Build's documented limits, checked on every build we make (the pipelines, the initialize
image build, the TTL's and the health check's scheduled bodies), and how a step script too long
for one argument ships as a file of the build's source instead.

The limits (docs/pipeline.md, "Cloud Build's limits", has the sources):

* :data:`MAX_ARG` characters per step argument, counted after substitution: the API refuses the
  whole build (``invalid .steps field: build step 1 arg 1 too long (max: 10000)``), so no log
  exists to open. The build config schema page and the API's error name it; older builds saw the
  same error with ``max: 4000``.
* :data:`MAX_STEPS` steps per build ("You can include up to 300 build steps in your config file",
  build-config-file-schema).
* :data:`MAX_TIMEOUT_S` for a build's timeout (24 h, the schema's ``timeout``), and no step may
  be allowed longer than its build.

A check that fails raises :class:`~builder.facts.errors.BadInput` with one line: the build, the
step, what passes which limit, and what to change. It runs where each build is made, so every door
(validate, plan, render, submit, dispatch, the scheduled bodies in tfvars) refuses the same build.

Shipping (:func:`step_args`): a script whose argument, after substitution, would pass
:data:`INLINE_MAX` (a margin under :data:`MAX_ARG`) is written to ``.tpubuild/scripts/<step
id>-<sha256[:12]>.sh`` of the build's source (the tarball ``submit`` packs; the health build's
source is the same tarball, kept: builder/inputs/ttl.py). Cloud Build extracts the source into
``/workspace``, every step's working directory, and the step runs ``exec <shell>
.tpubuild/scripts/...``. The file is not substituted by Cloud Build: a ``sub(NAME)`` in its
template becomes the shell variable ``${NAME}``, and the step's ``env`` passes ``NAME=$NAME``.
The name carries the script's hash, so files of different builds never collide and
:func:`referenced` finds, in any rendered text, exactly the files it needs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from builder.facts.errors import BadInput
from builder.inputs.templating import for_cloud_build, for_file

MAX_ARG = 10_000
MAX_STEPS = 300
MAX_TIMEOUT_S = 86_400
#: A script whose argument would be longer than this ships as a file (room for the substitutions
#: a later edit adds before the hard limit).
INLINE_MAX = 8_000
#: Where shipped scripts live in a build's source (and so in /workspace).
SCRIPTS_DIR = ".tpubuild/scripts"
#: The longest value of each built-in substitution a step may use (BUILD_ID is a UUID; PROJECT_ID
#: at most 30 characters); a user substitution counts as its value in the build's map.
BUILTIN_MAX = {"BUILD_ID": 36, "PROJECT_ID": 30, "PROJECT_NUMBER": 20, "LOCATION": 30}

_SUBST = re.compile(r"\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_SHIPPED = re.compile(re.escape(SCRIPTS_DIR) + r"/[A-Za-z0-9_.-]+\.sh")
#: path → text of every script shipped in this process (content-addressed: a path is one text).
_STORE: dict[str, str] = {}


def substituted_length(text: str, substitutions: dict[str, str] | None = None) -> int:
    """How long ``text`` is once Cloud Build has substituted it: ``$$`` is one character, a
    built-in its longest value (:data:`BUILTIN_MAX`), a user substitution its value."""
    values = substitutions or {}

    def one(m: re.Match[str]) -> str:
        if m.group(1) == "$":
            return "$"
        name = m.group(2) or m.group(3)
        if name in values:
            return values[name]
        return "x" * BUILTIN_MAX.get(name, len(m.group(0)))

    return len(_SUBST.sub(one, text))


def step_args(step_id: str, shell: str, script: str) -> tuple[list[str], list[str]]:
    """``(args, env)`` of a step that runs ``script`` (rendered, ``sub()`` marks still in): inline
    as ``[-c, script]`` ($ doubled) when it fits :data:`INLINE_MAX`, else shipped as a file (see
    the module's docstring) with the env that carries its substitutions."""
    inline = for_cloud_build(script)
    if substituted_length(inline) <= INLINE_MAX:
        return ["-c", inline], []
    text, names = for_file(script)
    import hashlib  # kept off plan's start-up (it loads OpenSSL; tests/unit/test_import_budget.py)

    path = f"{SCRIPTS_DIR}/{step_id}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.sh"
    _STORE[path] = text
    return ["-c", f"exec {shell} {path}"], [f"{n}=${n}" for n in names]


def shipped(path: str) -> str:
    """The text of a shipped script (rendered in this process)."""
    return _STORE[path]


def shipped_path(arg: str) -> str | None:
    """The shipped script a step's ``-c`` argument runs, None for an inline script."""
    m = re.search(r"(?:\A|\n)exec (?:ba)?sh (" + _SHIPPED.pattern + r")\Z", arg)
    return m.group(1) if m else None


def object_name(path: str) -> str:
    """Where ``submit`` also keeps a shipped script of a scheduled build, in the state bucket:
    ``scripts/<step id>-<sha12>.sh``, named by its content, so never overwritten nor removed."""
    return f"scripts/{path.rsplit('/', 1)[-1]}"


def fetched(args: list[str], bucket: str) -> list[str]:
    """A scheduled build's step ``args`` (:func:`step_args`) whose shipped script is first copied
    from the state bucket (:func:`object_name`): the Scheduler job keeps the body its slice was
    applied with, while the kept source it runs from is the last submit's, which may name another
    script by then. Inline ``args`` are returned as they are. The step's image must have gcloud."""
    path = shipped_path(args[1])
    if path is None:
        return args
    return ["-c", "\n".join(["set -euo pipefail", f"mkdir -p {SCRIPTS_DIR}",
                             f"gcloud storage cp gs://{bucket}/{object_name(path)} {path}", f"exec bash {path}"])]


def referenced(*texts: str) -> dict[str, bytes]:
    """Every shipped script that ``texts`` (rendered configs, tfvars with scheduled bodies) name:
    what the build's source must carry. A name rendered in no earlier call is a bug."""
    found = {p for t in texts for p in _SHIPPED.findall(t)}
    missing = sorted(found - _STORE.keys())
    assert not missing, f"shipped scripts not rendered in this process: {missing}"
    return {p: _STORE[p].encode() for p in sorted(found)}


def check(build: dict[str, Any], what: str) -> dict[str, Any]:
    """``build`` (a Build in its REST form) when it is within Cloud Build's limits; else bad
    input, one line: ``what`` (the build), the step, the limit passed and the fix."""
    steps = build.get("steps", [])
    if len(steps) > MAX_STEPS:
        raise BadInput(f"{what}: {len(steps)} steps, over Cloud Build's {MAX_STEPS} per build; "
                       "render fewer modules per build (--only, or scope with --tpu/--mig)")
    timeout = _seconds(build.get("timeout", "600s"))
    if timeout > MAX_TIMEOUT_S:
        raise BadInput(f"{what}: timeout {timeout}s, over Cloud Build's {MAX_TIMEOUT_S}s (24 h); "
                       "shorten the longest wait (TPU_QUEUED_VALID_FOR, the candidate list)")
    subs = build.get("substitutions", {})
    for n, step in enumerate(steps, 1):
        name = step.get("id", f"step {n}")
        if "timeout" in step and _seconds(step["timeout"]) > timeout:
            raise BadInput(f"{what}: step {name} may run {_seconds(step['timeout'])}s, longer than its build's "
                           f"{timeout}s; shorten the step's wait")
        for i, arg in enumerate(step.get("args", [])):
            size = substituted_length(arg, subs)
            if size > MAX_ARG:
                raise BadInput(f"{what}: step {name} argument {i} is {size} characters after substitution, over "
                               f"Cloud Build's {MAX_ARG}; shorten the names in values.env or the candidate list")
    return build


def check_steps(steps: Iterable[tuple[str, tuple[str, ...], int]], what: str, budget: int) -> None:
    """Before anything is rendered: a pipeline of ``steps`` ((id, the ids it waits for, its
    timeout in seconds), in order) has at most :data:`MAX_STEPS` steps and its longest path of
    step timeouts fits ``budget`` (what a pipeline may run inside the builds that wait for it:
    timeouts nest). Bad input, one line, otherwise: so plan and validate's callers refuse what
    render would."""
    finish: dict[str, int] = {}
    for step_id, after, timeout in steps:
        finish[step_id] = max((finish[a] for a in after), default=0) + timeout
    if len(finish) > MAX_STEPS:
        raise BadInput(f"{what}: {len(finish)} steps, over Cloud Build's {MAX_STEPS} per build; "
                       "render fewer modules per build (--only, or scope with --tpu/--mig)")
    longest = max(finish.values(), default=0)
    if longest > budget:
        raise BadInput(f"{what}: its steps may run {longest}s one after another, more than the {budget}s a pipeline "
                       "may take inside the builds that wait for it (Cloud Build's 24 h; docs/pipeline.md, "
                       "\"Timeouts nest\"); list fewer candidates in ZONE/TPU_PROVISIONING or shorten "
                       "TPU_QUEUED_VALID_FOR")


def _seconds(duration: str) -> int:
    return int(float(str(duration).rstrip("s")))


def check_all(builds: Iterable[tuple[str, dict[str, Any]]]) -> None:
    for what, build in builds:
        check(build, what)
