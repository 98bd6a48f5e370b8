"""The two kinds of failure the CLI reports without a traceback.

``BadInput`` is the user's to fix (exit 2); ``WorldError`` is something outside us that failed
(exit 1). Both carry a one-line message that says what is wrong and how to fix it.
"""

from __future__ import annotations

import re
from pathlib import Path


class TpuBuildError(Exception):
    """Base class: a one-line, user-facing failure with an exit code."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class WorldError(TpuBuildError):
    """A failure in the world: a cloud call, a build, a held lock. Exit code 1."""

    exit_code = 1


class BadInput(TpuBuildError):
    """Bad input from the user: values.env, flags, files. Exit code 2."""

    exit_code = 2


#: The longest quoted value a message echoes; a longer one is cut (see :func:`clip`).
ECHO_LIMIT = 60


def _quoted(q: str) -> str:
    """A value quoted with ``q`` (as ``repr`` or a message writes it): more than ECHO_LIMIT
    characters without a space, or more than 200 with spaces (an apostrophe in English words,
    "can't ... 'x'", never spans that far)."""
    return rf"{q}(?:[^{q}\s]{{{ECHO_LIMIT + 1},}}|[^{q}\n]{{201,}}){q}"


_QUOTED = re.compile(f"{_quoted(chr(39))}|{_quoted(chr(34))}")


def clip(text: str) -> str:
    """``text`` with every long quoted value cut to its start and its length
    (``'gs://aaaa…' (200005 chars)``): a values.env may hold a 200,000-character value, and a
    message must stay one readable line."""
    return _QUOTED.sub(lambda m: f"{m.group()[:ECHO_LIMIT - 1]}…{m.group()[0]} ({len(m.group()) - 2} chars)", text)


class ConfigError(BadInput):
    """A problem in values.env, located at ``path:line`` and naming the key. The values it quotes
    are cut to :data:`ECHO_LIMIT` characters (:func:`clip`)."""

    def __init__(
        self,
        what: str,
        fix: str,
        *,
        path: Path | str | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        what, fix = clip(what), clip(fix)
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line else f"{path}: "
        subject = f"{key}: " if key else ""
        tail = f"; {fix}" if fix else ""
        super().__init__(f"{where}{subject}{what}{tail}")
        self.path = path
        self.line = line
        self.key = key
        self.what = what
        self.fix = fix


class ConfigErrors(ConfigError):
    """Every problem found in values.env at once (``tpubuild validate`` prints one line each).

    It is a ``ConfigError`` whose message is the first problem, plus how many more there are, so
    callers that report one line still can; ``errors`` holds them all."""

    def __init__(self, errors: list[ConfigError], warnings: tuple[str, ...] = ()) -> None:
        self.warnings = tuple(warnings)
        errors = sorted(errors, key=lambda e: e.line or 1 << 30)  # file order; keys not in the file last
        first = errors[0]
        more = len(errors) - 1
        super().__init__(first.what, first.fix, path=first.path, line=first.line, key=first.key)
        if more:
            self.message = f"{first.message} (and {more} more problem{'s' if more > 1 else ''}: run tpubuild validate)"
        self.errors = list(errors)


def document(message: str, exit_code: int, exc: BaseException | None = None) -> dict[str, object]:
    """The JSON object a ``--format json`` command prints on stdout when it fails (its one text
    line still goes to stderr), so a script reading stdout gets JSON on every exit: ``exit_code``,
    ``kind`` (``bad-input``, ``world`` or ``internal``), ``message``, and for values.env problems
    ``problems``, one object each with ``file``, ``line``, ``key``, ``what`` and ``fix``."""
    kind = {2: "bad-input", 1: "world"}.get(exit_code, "internal") if isinstance(exc, TpuBuildError) else "internal"
    out: dict[str, object] = {"exit_code": exit_code, "kind": kind, "message": message}
    found = getattr(exc, "errors", None) if isinstance(exc, ConfigError) else None
    if isinstance(exc, ConfigError):
        out["problems"] = [{"file": None if e.path is None else str(e.path), "line": e.line, "key": e.key,
                            "what": e.what, "fix": e.fix} for e in (found or [exc])]
    return {"error": out}
