"""The tpubuild builder image: the container that guard, finalize and every other tpubuild step of
a pipeline runs in, with tpubuild and its dependencies installed (no ``pip install`` at run time).

* Its Dockerfile is ``builder/image/Dockerfile`` (built with the repository root as context); its
  base image is ``builder.render.pipeline.IMAGES["python"]``, passed as the ``BASE`` build argument.
* Its dependencies are pinned in ``builder/image/requirements.lock``, the one lock of the image:
  every package ``setup.cfg``'s ``install_requires`` pulls in, at one version each
  (``python tools/image_lock.py --write`` regenerates it; a test fails while it misses a
  requirement or pins one outside setup.cfg's range).
* It is tagged ``<tpubuild version>-<first 12 hex digits of the lock's SHA-256>`` (:func:`tag`):
  a new release or a new lock is a new image, and a pipeline never runs tools that its version
  does not match. Changing builder/ code without bumping ``builder.__version__`` keeps the tag:
  bump the version to get a new image.
* It lives in the Artifact Registry repository ``tpubuild-<ENV>`` (``Settings.image_repository``)
  in the environment's region, which ``tpubuild initialize`` creates
  (``builder/cloud/registry.py``); the full reference is ``builder.render.pipeline.image(settings,
  "tpubuild")``.

``tpubuild initialize`` builds and pushes it with Cloud Build unless the tag exists; a pipeline's
first step (``tpubuild-image``) checks for the tag and, when it is missing, builds and pushes it
once (docs/pipeline.md, "Decisions").
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from builder import __version__

#: The image's folder inside the package, and the Dockerfile relative to the repository root (the
#: build context: the Dockerfile copies setup.cfg, pyproject.toml, README.md and builder/).
FOLDER = Path(__file__).resolve().parents[1] / "image"
DOCKERFILE = "builder/image/Dockerfile"
LOCK = FOLDER / "requirements.lock"
#: The image's name inside its repository.
NAME = "tpubuild"
#: The labels the repository carries beside the environment's (``Settings.labels``).
ROLE_LABEL = {"tpubuild-role": "builder-image"}


@lru_cache(maxsize=1)
def lock_digest() -> str:
    """The first 12 hex digits of the SHA-256 of the lock file's bytes (hashlib loads OpenSSL, 2 ms:
    only ``render`` and ``submit`` name the image's tag; ``plan`` and ``validate`` do not load it)."""
    import hashlib

    return hashlib.sha256(LOCK.read_bytes()).hexdigest()[:12]


def tag() -> str:
    """``<version>-<lock digest>``: what a pipeline of this tpubuild runs its tools in. Docker tags
    allow ``[A-Za-z0-9_.-]``, so a version's ``+local`` part becomes ``_``."""
    return f"{__version__.replace('+', '_')}-{lock_digest()}"


def pins() -> dict[str, str]:
    """The lock as ``{normalised name: version}`` (comments and blank lines skipped)."""
    out: dict[str, str] = {}
    for raw in LOCK.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            out[normalise(name)] = version.strip()
    return out


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()
