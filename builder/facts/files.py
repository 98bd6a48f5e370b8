"""Reading the files a user hands us, with a size cap: :func:`read_bytes` is the one place such a
file is opened, and each kind of file words its refusals here (:class:`Wording`: :data:`VALUES_FILE`,
:data:`PLAN_JSON`, :data:`GENERIC` for the rest). ``read_capped`` never reads more than ``limit + 1`` bytes, so ``/dev/zero``, an endless
FIFO or a runaway file is refused with one line instead of exhausting memory. Text is UTF-8 (surrogates cannot occur in decoded UTF-8; the JSON
and argument checks refuse lone surrogates separately).

Caps: values.env 1 MiB (:data:`MAX_BYTES`), plan JSON 256 MiB (:data:`MAX_PLAN_BYTES`), a credentials file 1 MiB (:data:`MAX_CREDENTIALS`),
a repository file packed into the source tarball 64 MiB (:data:`MAX_SOURCE_FILE`).
"""

from __future__ import annotations

from pathlib import Path

from builder.facts.errors import BadInput
from builder.facts.records import record

MAX_BYTES = 1 << 20  # a values.env
MAX_PLAN_BYTES = 256 << 20  # a plan JSON
MAX_CREDENTIALS = 1 << 20
MAX_SOURCE_FILE = 64 << 20


def read_capped(path: Path, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of ``path`` (a caller that gets more than ``limit`` refuses it).
    Raises the ``OSError`` of ``open``/``read`` (the caller words it) and ``IsADirectoryError``
    for a directory."""
    with open(path, "rb") as fh:
        return fh.read(limit + 1)


def human(limit: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"


@record
class Wording:
    """How one kind of file's read failures are worded, as ``str.format`` templates over
    ``{path}`` (``{path!r}`` for a path Python cannot open), ``{why}`` (the OS's reason, in
    ``failed``) and the keyword fields the caller passes to :func:`read_bytes`. ``empty``, when
    set, refuses a file holding only whitespace (checked before the size)."""

    directory: str
    missing: str
    denied: str
    failed: str
    unusable: str
    too_large: str
    empty: str | None = None


def read_bytes(path: Path, limit: int, wording: Wording, **fields: str) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them, or one ``BadInput`` line worded by
    ``wording``: the one place a user's file is opened (values.env, a plan JSON, a credentials
    file, a repository file packed into the source)."""

    def refuse(template: str, why: str = "") -> BadInput:
        return BadInput(template.format(path=path, why=why, **fields))

    try:
        if path.is_dir():
            raise refuse(wording.directory)
        data = read_capped(path, limit)
    except FileNotFoundError:
        raise refuse(wording.missing) from None
    except IsADirectoryError:
        raise refuse(wording.directory) from None
    except PermissionError:
        raise refuse(wording.denied) from None
    except OSError as exc:
        raise refuse(wording.failed, exc.strerror or type(exc).__name__) from None
    except ValueError:  # a path with a NUL byte
        raise refuse(wording.unusable) from None
    if wording.empty is not None and not data.strip():
        raise refuse(wording.empty)
    if len(data) > limit:
        raise refuse(wording.too_large)
    return data


#: The wording of :func:`read_file`: ``<path>: <why>; <fix>``.
GENERIC = Wording(
    directory="{path}: is a directory, not {what}; {fix}",
    missing="{path}: no such file; {fix}",
    denied="{path}: permission denied; make it readable, or {fix}",
    failed="{path}: cannot read ({why}); {fix}",
    unusable="{path!r}: is not a usable path; {fix}",
    too_large="{path}: more than {cap}, too large for {what} (an endless stream such as /dev/zero?); {fix}",
)


#: The refusals a values.env (:data:`VALUES_FILE`) and a plan JSON (:data:`PLAN_JSON`) share,
#: ``<path>: <why>; <fix>``: the why of each (as :data:`GENERIC`'s), then the fix for each file.
_WHY_AND_FIXES = {
    "directory": ("{path}: is a directory", "pass the values.env file itself with --values",
                  "pass the file written by 'terraform show -json PLANFILE'"),
    "missing": ("{path}: no such file", "create it (copy the shipped values.env) or pass --values PATH",
                "run 'terraform show -json PLANFILE > {path}' first"),
    "denied": ("{path}: permission denied", "make the file readable (chmod u+r {path})", "make the plan JSON readable"),
    "failed": ("{path}: cannot read ({why})", "pass a readable file with --values", "pass a readable plan JSON file"),
    "unusable": ("{path!r}: is not a usable path", "pass the values.env file with --values", "pass the plan JSON file"),
}


def _worded(column: int, too_large: str, empty: str | None = None) -> Wording:
    """The :class:`Wording` of :data:`_WHY_AND_FIXES`' fixes in ``column`` (1 values.env, 2 plan JSON)."""
    return Wording(**{kind: f"{row[0]}; {row[column]}" for kind, row in _WHY_AND_FIXES.items()},
                   too_large=too_large, empty=empty)


#: How an unreadable values.env is refused.
VALUES_FILE = _worded(1, f"{{path}}: more than {MAX_BYTES} bytes is too large for a values file (an endless stream "
                         "such as /dev/zero?); keep it under 1 MiB")


#: How an unreadable plan JSON is refused.
PLAN_JSON = _worded(2, f"{{path}}: more than {MAX_PLAN_BYTES >> 20} MiB is too large for a plan JSON (an endless "
                       "stream such as /dev/zero?); pass the output of one module's plan",
                    empty="{path}: is empty; did 'terraform show -json' fail? Rerun the plan step")


def read_file(path: Path, limit: int, *, what: str, fix: str) -> bytes:
    """The bytes of ``path``, or one ``BadInput`` line: ``<path>: <why>; <fix>`` (``what`` names
    the kind of file, e.g. "a values file")."""
    return read_bytes(path, limit, GENERIC, what=what, fix=fix, cap=human(limit))
