"""The applied snapshot's arithmetic: what a finished build leaves recorded. Pure (no I/O).

``tpubuild finalize`` (builder/commands/finalize.py) reads the snapshot the previous build left
(``builder.cloud.snapshot.Applied``), asks :func:`after_build` what this build changes about it,
and writes the result back. ``auto`` (builder/planning/auto.py) reads the same three facts:

* ``absent``: plan modules destroyed on purpose (a scoped or full destroy). A destroy adds the
  modules it destroyed; an apply of a module takes it out again. auto leaves absent modules absent.
* ``outstanding``: plan modules whose values or sources changed while a build left them out of its
  scope (``update --tpu`` after editing Filestore's size). They stay outstanding until a build
  applies them; absent modules are never outstanding (nothing is there to bring up to date).
* ``sources``: plan module → digest of its Terraform and boot sources as last applied. A module this
  build applied takes today's digest; every other keeps the digest recorded before (today's, when
  none was recorded or there is no snapshot yet).

Every set is restricted to the architecture's modules (``every``): a snapshot of another
architecture's module names cannot leak into this one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from builder.config import load_text
from builder.facts.errors import BadInput
from builder.facts.records import field, record

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


class Recorded(Protocol):
    """What :func:`after_build` reads of a snapshot (``builder.cloud.snapshot.Applied`` is one)."""

    @property
    def outstanding(self) -> frozenset[str]: ...

    @property
    def absent(self) -> frozenset[str]: ...

    @property
    def sources(self) -> Mapping[str, str]: ...


@record
class Ledger:
    """The three facts a build records besides values.env (see the module docstring)."""

    outstanding: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    sources: dict[str, str] = field(default_factory=dict)

    def tail(self) -> str:
        """`` (outstanding: a, b; absent: c)`` for finalize's line, or "" when both are empty."""
        extra = []
        if self.outstanding:
            extra.append(f"outstanding: {', '.join(sorted(self.outstanding))}")
        if self.absent:
            extra.append(f"absent: {', '.join(sorted(self.absent))}")
        return f" ({'; '.join(extra)})" if extra else ""


def after_build(before: Recorded | None, operations: Iterable[tuple[str, str]], *, every: Iterable[str],
                changed: frozenset[str], sources_now: Mapping[str, str]) -> Ledger:
    """The ledger once a build that ran ``operations`` ((module, "apply" | "destroy") pairs) has
    succeeded. ``before``: the snapshot it found (None: the first build). ``changed``: the modules
    whose values or sources differ from ``before`` (``builder.planning.auto.touched``). ``sources_now``:
    today's digest of every module in ``every``."""
    modules = tuple(every)
    ops = tuple(operations)
    applied = {m for m, op in ops if op == "apply"}
    destroyed = {m for m, op in ops if op == "destroy"}
    absent = ((before.absent if before else frozenset()) | destroyed) - applied
    outstanding = ((before.outstanding if before else frozenset()) | changed) - applied - absent
    sources = {m: sources_now[m] if m in applied or before is None else before.sources.get(m, sources_now[m])
               for m in modules}
    return Ledger(outstanding=frozenset(outstanding) & set(modules), absent=frozenset(absent) & set(modules),
                  sources=sources)


#: What each architecture's environment is, for the report of an applied environment of another one.
_ARCH_WORDS = {"node": "TPU Node environment ({accel}: TPU Node {tpu}, worker MIG {mig})",
               "vm": "TPU VM environment ({accel}: TPU VM {tpu})", "mig": "MIG slice environment ({accel}: MIG {mig})"}


def compared_with(applied: Settings, current: Settings, source: str, *, destroy_with: str) -> str:
    """The rules for the applied values a plan is compared with, one place for ``--applied FILE``
    and the state bucket's snapshot (``tpubuild plan``/``render --action auto``; ``submit``'s auto
    reaches the same verdicts through ``builder.planning.auto.decide``, which refuses a changed
    ENV_BUILD_NAME, PROJECT_ID or TPU_ARCH). Returns how the comparison is described (``source``,
    annotated when it needs saying).

    * Another environment's values (ENV_BUILD_NAME or PROJECT_ID differ) are refused (``BadInput``,
      one line naming both values): its resources are not this environment's, so a before → after
      against them would show changes no build makes.
    * Values of another architecture (a node-era file, TPU_ARCH=node or a ``pytorch-*`` runtime,
      against a vm or mig plan) are read and reported: the plan says which environment is applied,
      that its modules are not compared with this plan's, and how to take it down first
      (``destroy_with``: the values to destroy it with). Refusing would hide what is applied; a
      silent "nothing applied" would claim the old TPU Node and its workers are not there.
    """
    differ = [(key, then, now) for key, then, now in (("ENV_BUILD_NAME", applied.env_name, current.env_name),
                                                      ("PROJECT_ID", applied.project_id, current.project_id))
              if then != now]
    if differ:
        said = " and ".join(f"{key} {then!r}" for key, then, now in differ)
        ours = " and ".join(f"{now!r}" for key, then, now in differ)
        raise BadInput(f"{source}: holds the applied values of another environment ({said}; {current.source} has "
                       f"{ours}); pass --applied FILE with the values last applied to {current.env_name} in "
                       f"{current.project_id}, or --applied none if nothing was applied yet")
    if applied.arch == current.arch:
        return source
    what = _ARCH_WORDS[applied.arch].format(accel=applied.accelerator_type, tpu=applied.tpu_name, mig=applied.mig_name)
    return (f"{source}: the applied environment is TPU_ARCH={applied.arch}, a {what}; this TPU_ARCH={current.arch} "
            f"plan is not compared with it: destroy it with those values first (tpubuild submit --values "
            f"{destroy_with} --action destroy)")


def applied_settings(values: bytes, current: Settings) -> Settings:
    """The snapshot's values.env parsed as if it sat beside today's (``applied.values.env``, so
    relative paths resolve the same way). Raises ``BadInput`` (it no longer parses: a key renamed
    or removed since) or ``UnicodeDecodeError``; each caller decides what that means."""
    return load_text(values.decode("utf-8"), Path(current.source.parent, "applied.values.env"), applied=True)
