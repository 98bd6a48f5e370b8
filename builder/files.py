"""Reading the files a user hands us, with a size cap: ``read_capped`` never reads more than
``limit + 1`` bytes, so ``/dev/zero``, an endless FIFO or a runaway file is refused with one line
instead of exhausting memory. Text is UTF-8 (surrogates cannot occur in decoded UTF-8; the JSON
and argument checks refuse lone surrogates separately).

Caps: values.env 1 MiB (``builder.config.loader.MAX_BYTES``), plan JSON 256 MiB
(``builder.commands.guard.MAX_PLAN_BYTES``), a credentials file 1 MiB (:data:`MAX_CREDENTIALS`),
a repository file packed into the source tarball 64 MiB (:data:`MAX_SOURCE_FILE`).
"""

from __future__ import annotations

from pathlib import Path

from builder.errors import BadInput

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


def read_file(path: Path, limit: int, *, what: str, fix: str) -> bytes:
    """The bytes of ``path``, or one ``BadInput`` line: ``<path>: <why>; <fix>`` (``what`` names
    the kind of file, e.g. "a values file")."""
    try:
        if path.is_dir():
            raise BadInput(f"{path}: is a directory, not {what}; {fix}")
        data = read_capped(path, limit)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file; {fix}") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not {what}; {fix}") from None
    except PermissionError:
        raise BadInput(f"{path}: permission denied; make it readable, or {fix}") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror or type(exc).__name__}); {fix}") from None
    except ValueError:  # a path with a NUL byte
        raise BadInput(f"{path!r}: is not a usable path; {fix}") from None
    if len(data) > limit:
        raise BadInput(f"{path}: more than {human(limit)}, too large for {what} (an endless stream such as "
                       f"/dev/zero?); {fix}")
    return data
