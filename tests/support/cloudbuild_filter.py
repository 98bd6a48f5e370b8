"""Which triggers a change starts: Cloud Build's file filter, written down from its documentation
so the tests can ask it of the triggers ``tpubuild trigger`` prints.

BuildTrigger's reference (google.devtools.cloudbuild.v1, fields ``ignored_files`` and
``included_files``): "ignored_files and included_files are file glob matches using
https://golang.org/pkg/path/filepath/#Match extended with support for `**`. If ignored_files and
changed files are both empty, then they are not used to determine whether or not to trigger a
build. If ignored_files is not empty, then we ignore any files that match any of the ignored_file
globs. If the change has no files that are outside of the ignored_files globs, then we do not
trigger a build. [...] If any of the files altered in the commit pass the ignored_files filter and
included_files is empty, then as far as this filter is concerned, we should trigger the build. If
any of the files altered in the commit pass the ignored_files filter and included_files is not
empty, then we make sure that at least one of those files matches a included_files glob. If not,
then we do not trigger a build."

Go's ``filepath.Match``: ``*`` is any run of non-separator characters, ``?`` one non-separator
character, ``[...]`` a class (``[^...]`` negated), ``\\`` escapes; the whole name must match.
``**`` (the extension, as in doublestar): any run of characters, separators included; as a whole
segment ``**/`` it also matches no folder at all (``**/*.md`` matches ``README.md``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=None)
def _compile(glob: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i) and (i == 0 or glob[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.index("]", i + 2)
            body = glob[i + 1:end]
            out.append("[" + ("^" + body[1:] if body.startswith("^") else body) + "]")
            i = end + 1
        elif c == "\\":
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out))


def matches(glob: str, path: str) -> bool:
    return _compile(glob).fullmatch(path) is not None


def starts(trigger: dict[str, Any], changed: Iterable[str]) -> bool:
    """Whether a push or pull request changing ``changed`` starts ``trigger`` (its file filter only)."""
    changed = list(changed)
    ignored, included = trigger.get("ignoredFiles", []), trigger.get("includedFiles", [])
    if not changed and not ignored:
        return True
    kept = [f for f in changed if not any(matches(g, f) for g in ignored)]
    if not kept:
        return False
    return not included or any(matches(g, f) for f in kept for g in included)
