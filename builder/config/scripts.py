"""Scripts named in values.env (MIG_SETUP_SCRIPT, MIG_SEED_DATA_PREP_SCRIPT): one lookup.

A path is relative to the repository or to ``models/``. At load time a missing script is only a
warning (seed-era files name scripts of the seed repository); it is an error where a pipeline or
a Terraform module is about to use it (:func:`repo_script`).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from builder.config.legacy import seed_scripts
from builder.facts.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from builder.config.settings import Settings


def find_script(root: Path, rel: str) -> str | None:
    """The repo-relative POSIX path of script ``rel`` under ``root`` (tried as written, then under
    models/), or None."""
    for candidate in (rel, f"models/{rel}"):
        if (root / candidate).is_file():
            return PurePosixPath(Path(candidate).as_posix()).as_posix()
    return None


def repo_script(settings: Settings, key: str, rel: str) -> str:
    """The repo-relative path of the script ``key`` names; a ConfigError at ``key``'s line when it
    does not exist (or is the seed repository's own script, which this product replaced)."""
    root = settings.repo_root
    found = find_script(root, rel)
    if found is not None:
        return found
    used = "a create or update that runs it is refused (destroy runs no script)"  # what each command does
    if rel in seed_scripts():
        raise ConfigError(f"{rel!r} is {seed_scripts()[rel]}, not a script of this repository; {used}",
                          "run tpubuild migrate (it clears the seed's script paths)",
                          path=settings.source, line=settings.line_of(key), key=key)
    raise ConfigError(f"{rel!r} does not exist (looked in {root} and {root / 'models'}); {used}",
                      "add the script to the repository (a path relative to it or to models/) or clear the key",
                      path=settings.source, line=settings.line_of(key), key=key)
