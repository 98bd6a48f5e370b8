"""The step scripts' templates (builder/templates/*.j2) and how a rendered script goes into a
Cloud Build step: the one jinja2 environment (``q`` quotes a value for the shell; ``sub(NAME)``
marks a substitution Cloud Build fills in) and :func:`for_cloud_build`, which doubles every other
``$``. The pipeline (builder/render/pipeline.py) and the health build (builder/inputs/recovery.py) render with them.

jinja2 is imported inside :func:`environment` only (a heavy optional library, on the list of
deferred imports of tests/unit/test_import_direction.py), so ``tpubuild plan`` stays fast.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from jinja2 import Environment

_SUB_MARK = "\x00"
_MARKED = f"{_SUB_MARK}([A-Z_][A-Z0-9_]*){_SUB_MARK}"


def _bytecode_cache(jinja2: Any) -> Any:
    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):  # no usable private temp folder: compile every time
        return None


@lru_cache(maxsize=1)
def environment() -> Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("builder", "templates"),
        # compiled templates are cached (in a private folder under the temp dir, keyed by the
        # template's source checksum), so a fresh `tpubuild render` skips jinja's compiler
        bytecode_cache=_bytecode_cache(jinja2),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["q"] = lambda v: shlex.quote(str(v))
    env.globals["sub"] = lambda name: f"{_SUB_MARK}{name}{_SUB_MARK}"
    return env


def for_cloud_build(text: str) -> str:
    """Double every ``$`` (Cloud Build would substitute it), then turn ``sub()`` marks into the
    substitutions they name."""
    out = text.replace("$", "$$")
    return re.sub(_MARKED, r"${\1}", out)


def for_file(text: str) -> tuple[str, list[str]]:
    """A script that ships as a file (builder/inputs/build_limits.py): Cloud Build substitutes
    nothing in it, so every ``sub()`` mark becomes the shell variable of that name; the names,
    which the step's ``env`` must pass."""
    return re.sub(_MARKED, r"${\1}", text), sorted(set(re.findall(_MARKED, text)))
