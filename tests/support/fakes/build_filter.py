"""Cloud Build's ``ListBuilds`` filter, as FakeGoogle (tests/support/fakes/gcp.py) reads it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


def build_filter(text: str) -> Callable[[dict[str, Any]], bool]:
    """A predicate for Cloud Build's list filter: ``field="value"`` (``tags`` matches any tag),
    ``AND``, ``OR`` (AND binds tighter), parentheses. Anything else is a 400 in the real API, so
    here a ``ValueError`` (the test fails loudly rather than matching everything)."""
    tokens = re.findall(r'\(|\)|AND|OR|[a-zA-Z_]+="[^"]*"|\S+', text)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def atom() -> Callable[[dict[str, Any]], bool]:
        token = take()
        if token == "(":
            inner = disjunction()
            if take() != ")":
                raise ValueError(f"unbalanced parentheses in filter {text!r}")
            return inner
        m = re.fullmatch(r'([a-zA-Z_]+)="([^"]*)"', token)
        if not m or m.group(1) not in ("status", "tags", "id"):
            raise ValueError(f"fake: unsupported filter term {token!r} in {text!r}")
        name, value = m.groups()
        if name == "tags":
            return lambda b: value in b["tags"]
        return lambda b: b[name] == value

    def joined(word: str, part: Callable[[], Callable[[dict[str, Any]], bool]],
               combine: Callable[[Any], bool]) -> Callable[[dict[str, Any]], bool]:
        """``part (word part)*``, its predicates combined by ``all`` or ``any``."""
        terms = [part()]
        while peek() == word:
            take()
            terms.append(part())
        return lambda b: combine(t(b) for t in terms)

    def disjunction() -> Callable[[dict[str, Any]], bool]:
        return joined("OR", lambda: joined("AND", atom, all), any)  # AND binds tighter

    if not tokens:
        return lambda b: True
    predicate = disjunction()
    if peek() is not None:
        raise ValueError(f"fake: trailing {peek()!r} in filter {text!r}")
    return predicate
