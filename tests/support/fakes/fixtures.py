"""Fixtures for the cloud tests (import them into a test module with ``from tests.support.fakes.fixtures import *``).

* ``fakes``: one fake-gcs-server and one ``FakeGoogle`` + ``FakeTpuV1`` + ``FakeIam`` +
  ``FakeArtifactRegistry`` per test process (started
  on first use, stopped at exit), with the environment pointing every client at them
  (``STORAGE_EMULATOR_HOST``, ``TPUBUILD_*_ENDPOINT``) and polling without delay. The Google fake's
  records are cleared for each test.
* ``repo``: a throw-away repository (builder/, modules/, env_setup/, models/, setup files) with a
  values.env whose ENV_BUILD_NAME is unique to the test, so tests never share buckets' objects.
"""

from __future__ import annotations

import atexit
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, rewrite_env

_STARTED: dict[str, Any] = {}


def _servers() -> dict[str, Any]:
    if not _STARTED:
        from tests.support.fakes.gcp import FakeGoogle, FakeIam, FakeTpuV1
        from tests.support.fakes.gcs import MemoryFakeGCS
        from tests.support.fakes.registry import FakeArtifactRegistry

        gcs = MemoryFakeGCS()
        gcs.start()
        os.environ.pop("STORAGE_EMULATOR_HOST", None)  # set per test by the fixture, never leaked
        atexit.register(gcs.stop)
        google = FakeGoogle().start()
        atexit.register(google.stop)
        tpu1 = FakeTpuV1().start()
        atexit.register(tpu1.stop)
        iam = FakeIam().start()
        atexit.register(iam.stop)
        registry = FakeArtifactRegistry().start()
        atexit.register(registry.stop)
        _STARTED.update(gcs=gcs, google=google, tpu1=tpu1, iam=iam, registry=registry)
    return _STARTED


@dataclass
class Fakes:
    gcs_url: str
    google: Any
    tpu1: Any
    iam: Any = None
    registry: Any = None

    def storage(self, project: str = "my-tpu-project") -> Any:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(project=project, credentials=AnonymousCredentials())


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> Fakes:
    servers = _servers()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", servers["gcs"].url)
    for key, value in {**servers["google"].env(), **servers["registry"].env()}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TPUBUILD_TPU_V1_ENDPOINT", servers["tpu1"].target)
    monkeypatch.setenv("TPUBUILD_IAM_ENDPOINT", servers["iam"].target)
    monkeypatch.setenv("TPUBUILD_POLL_SECONDS", "0")
    monkeypatch.delenv("TPUBUILD_DISPATCH_BUILD", raising=False)
    servers["google"].reset()
    servers["tpu1"].nodes.clear()
    servers["iam"].accounts.clear()
    servers["iam"].calls.clear()
    servers["registry"].reset()
    return Fakes(servers["gcs"].url, servers["google"], servers["tpu1"], servers["iam"], servers["registry"])


def make_repo(root: Path, env_name: str, *, base: Path | None = None, **overrides: str | None) -> Path:
    """A minimal repository at ``root``; returns its values.env (the shipped one, or ``base``)."""
    (root / "builder").mkdir(parents=True)
    (root / "builder" / "__init__.py").write_text("# packed, not imported\n")
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        (root / name).write_text(f"# {name}\n")
    for module in ("tpu_node", "tpu_vm", "filestore", "shared_pd", "mig"):
        (root / "modules" / module).mkdir(parents=True)
        (root / "modules" / module / "main.tf").write_text(f'# {module}\nlocals {{ name = "{module}" }}\n')
    scripts = root / "env_setup" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "startup.sh").write_text("#!/usr/bin/env bash\nset -euo pipefail\necho boot\n")
    (scripts / "startup.sh").chmod(0o755)
    (root / "env_setup" / "seeder").mkdir()
    (root / "env_setup" / "seeder" / "run_seeder.sh").write_text("#!/usr/bin/env bash\nset -euo pipefail\n")
    (root / "models" / "roberta").mkdir(parents=True)
    (root / "models" / "roberta" / "train.sh").write_bytes(b"#!/bin/sh\n# bytes \xe2\x9c\x93 kept as is\r\n")
    (root / "models" / "roberta" / "__pycache__").mkdir()
    (root / "models" / "roberta" / "__pycache__" / "x.pyc").write_bytes(b"\0junk")
    text = rewrite_env((base or REPO / "values.env").read_text(), ENV_BUILD_NAME=env_name, **overrides)
    values = root / "values.env"
    values.write_text("# local comment kept byte for byte\n" + text)
    return values


def unique_env() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """values.env of a fresh repository (cwd is set to it, as users run tpubuild)."""
    values = make_repo(tmp_path / "repo", unique_env())
    monkeypatch.chdir(values.parent)
    return values


def copy_repo(values: Path, dest: Path) -> Path:
    shutil.copytree(values.parent, dest)
    return dest / values.name
