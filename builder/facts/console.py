"""What ``tpubuild`` prints degrades to ASCII where the terminal cannot show more.

The messages use a few typographic characters (``→`` in before → after, ``×`` in prices, ``‖``
for steps that run side by side). Under ``PYTHONIOENCODING=ascii``, a latin-1 terminal or a log
collector that declares ASCII, printing one of them would raise ``UnicodeEncodeError`` and lose the
whole output. :func:`degrade_streams` (called once by ``builder.cli.main``, before anything is
printed) gives stdout and stderr an error handler that spells each of tpubuild's own characters
in ASCII instead (``→`` as ``->``), so every command's output survives; a stream that can encode
them (UTF-8) is left alone and prints them as they are.

Any other character is the user's (a value, a path, a key quoted in a message) and is written as
its Python escape (``'tpu-d\\xe9v1'``, ``\\u200b``), never transliterated: a refusal of
``tpu-dév1`` must not show ``tpu-dev1``, a name that would be accepted, and a full-width ``２`` must
not read as the digit it is not. tests/unit/test_console_ascii.py checks that :data:`ASCII` holds
every non-ASCII character tpubuild's own sources write.
"""

from __future__ import annotations

import codecs
from typing import TextIO

#: The error handler's name (``codecs.register_error``).
HANDLER = "tpubuild-ascii"

#: ASCII spellings of the characters tpubuild's own messages use (and only those: anything else
#: is the user's and is escaped).
ASCII: dict[str, str] = {"→": "->", "×": "x", "‖": "||", "≥": ">=", "≤": "<=", "…": "...", "·": "."}


def ascii_spelling(char: str) -> str:
    """How ``char`` is written on a stream that cannot encode it: tpubuild's own characters as
    :data:`ASCII` spells them, any other as its Python escape (``é`` → ``\\xe9``)."""
    if char in ASCII:
        return ASCII[char]
    return char.encode("ascii", "backslashreplace").decode("ascii")


def _handler(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(ascii_spelling(c) for c in exc.object[exc.start:exc.end]), exc.end


codecs.register_error(HANDLER, _handler)

#: Characters the output uses: a stream that cannot encode these gets the handler.
_PROBE = "→×‖"


def can_encode(stream: TextIO, text: str = _PROBE) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def degrade_streams(*streams: TextIO) -> None:
    """Give each stream that cannot encode the output's characters the ASCII error handler.
    Streams that are not text files with ``reconfigure`` (a test's StringIO) are left alone."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not can_encode(stream):
            reconfigure(errors=HANDLER)
