"""The applied snapshot's arithmetic: what a finished build leaves recorded. Pure (no I/O).

``tpubuild finalize`` (builder/commands/finalize.py) reads the snapshot the previous build left
(``builder.cloud.snapshot.Applied``), asks :func:`after_build` what this build changes about it,
and writes the result back. ``auto`` (builder/auto.py) reads the same three facts:

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

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


@dataclass(frozen=True)
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
    whose values or sources differ from ``before`` (``builder.auto.touched``). ``sources_now``:
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


def applied_settings(values: bytes, current: Settings) -> Settings:
    """The snapshot's values.env parsed as if it sat beside today's (``applied.values.env``, so
    relative paths resolve the same way). Raises ``BadInput`` (it no longer parses: a key renamed
    or removed since) or ``UnicodeDecodeError``; each caller decides what that means."""
    from builder.config import load_text

    return load_text(values.decode("utf-8"), Path(current.source.parent, "applied.values.env"))
