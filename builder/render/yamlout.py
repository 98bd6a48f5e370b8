"""A small block-style YAML writer for the Cloud Build configs ``tpubuild render`` prints.

Why not PyYAML: importing it compiles its resolver and reader regexes, about a fifth of
``tpubuild render``'s start-up (benchmarks/cli_startup.py). The configs are plain trees of dicts,
lists, strings, ints and bools, so this writer handles exactly those, in PyYAML's block layout
(scripts as literal blocks), and raises :class:`Unsupported` for anything it cannot write
unambiguously (a float, an odd key, a string with control characters in a block, ...);
``to_yaml`` then falls back to PyYAML. Tests check that ``yaml.safe_load`` of
the output equals the input for every shipped example and action, and for tricky strings.

Strings are plain only when they are unambiguous: a conservative character set, not starting
with a digit or sign, and not a YAML 1.1 bool/null word; everything else is double-quoted with
YAML escapes.
"""

from __future__ import annotations

import json
import re
from typing import Any

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN = re.compile(r"[A-Za-z_/$][A-Za-z0-9_./:=+@${}-]*|[0-9]+[a-z]+|--?[A-Za-z][A-Za-z0-9_=-]*")
# (the 2nd: durations like 900s; the 3rd: command-line flags like -c)
_WORDS = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null"})
#: Characters a YAML stream may not carry raw (besides tab and newline, which blocks keep).
_NON_PRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufffe\uffff]")


class Unsupported(ValueError):
    """A value this writer does not handle; use PyYAML."""


def dump(value: Any) -> str:
    if not isinstance(value, dict) or not value:
        raise Unsupported("the document must be a non-empty mapping")
    out: list[str] = []
    _mapping(value, 0, out)
    return "".join(out)


def _scalar(value: Any) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and value.lower() not in _WORDS and not value.endswith(":"):
            return value
        return _quoted(value)
    raise Unsupported(f"cannot write {type(value).__name__} values")


def _quoted(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif _NON_PRINTABLE.match(ch):
            code = ord(ch)
            if 0xD800 <= code <= 0xDFFF:
                raise Unsupported("lone surrogate")
            out.append(f"\\x{code:02X}" if code < 0x100 else f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _block(text: str, indent: int) -> str | None:
    """``|``-style literal block for a multi-line string, or None when one would be ambiguous."""
    body = text.rstrip("\n")
    if not body or body[0] in " \t" or "\r" in text or _NON_PRINTABLE.search(text):
        return None
    trailing = len(text) - len(body)
    chomp = "-" if trailing == 0 else "" if trailing == 1 else "+"
    pad = " " * indent
    lines = "\n".join(f"{pad}{line}" if line else "" for line in body.split("\n"))
    return f"|{chomp}\n{lines}\n" + "\n" * max(0, trailing - 1)


def _value(value: Any, indent: int, out: list[str], *, in_list: bool) -> None:
    """Write ``value`` after ``key:`` or ``- `` (the caller wrote those, no newline yet)."""
    if isinstance(value, dict):
        if not value:
            out.append(" {}\n")
        elif in_list:
            out.append(" ")
            _mapping(value, indent + 2, out, first_inline=True)
        else:
            out.append("\n")
            _mapping(value, indent + 2, out)
    elif isinstance(value, list):
        if not value:
            out.append(" []\n")
        elif in_list:
            raise Unsupported("a list directly inside a list")
        else:
            out.append("\n")
            _sequence(value, indent, out)
    elif isinstance(value, str) and "\n" in value:
        block = _block(value, indent + 2)
        out.append(" " + (block if block is not None else _quoted(value) + "\n"))
    else:
        out.append(" " + _scalar(value) + "\n")


def _mapping(value: dict, indent: int, out: list[str], *, first_inline: bool = False) -> None:
    for n, (key, item) in enumerate(value.items()):
        if not isinstance(key, str) or not _KEY.fullmatch(key) or key.lower() in _WORDS:
            raise Unsupported(f"key {key!r}")
        out.append(("" if first_inline and n == 0 else " " * indent) + key + ":")
        _value(item, indent, out, in_list=False)


def _sequence(value: list, indent: int, out: list[str]) -> None:
    for item in value:
        out.append(" " * indent + "-")
        _value(item, indent, out, in_list=True)


# ---- the output formats of `tpubuild render` ----

def to_json(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=2) + "\n"


def to_yaml(config: dict[str, Any]) -> str:
    """YAML with scripts as literal blocks, so `tpubuild render` output reads like a hand-written
    cloudbuild.yaml: :func:`dump` (no PyYAML import: start-up time), else PyYAML."""
    try:
        return dump(config)
    except Unsupported:
        pass
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]  # libyaml when present
        pass

    def text(dumper: Any, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(config, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=1000)
