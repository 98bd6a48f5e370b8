"""The pins install: pip's own resolver, metadata only, for a TPU VM host (CPython 3.10 on Ubuntu
22.04, manylinux x86_64), resolves each runtime's torch / torch_xla[tpu] / torchaudio set of
``launcher.VM_TORCH_XLA`` together with fairseq-fixed's requirements from public indexes
(``pip install --dry-run --only-binary=:all: --python-version 3.10 --platform ... --report``).

Limits (docs/models.md): PyTorch's CPU index (download.pytorch.org), where the hosts take torch
and torchaudio, is not reachable from CI: torch resolves here from PyPI (the same release, CUDA
build: that its nvidia-* dependencies resolve too is shown, not used). fairseq-fixed and
antlr4-python3-runtime (hydra-core's) ship only as sdists, which a cross-platform resolve cannot
build: their presence on PyPI is checked with ``pip index versions``, fairseq's own requirements
are resolved (read from the installed fairseq-fixed's metadata), and the build itself is what
.ci/run and tests/models/test_roberta_xla.py do on Python 3.11.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys

import pytest

from builder.commands.train import load_launcher
from builder.config import load
from tests.conftest import EXAMPLES, require

pytestmark = pytest.mark.slow

UBUNTU_2204 = [f"manylinux_2_{minor}_x86_64" for minor in range(35, 16, -1)] + ["manylinux2014_x86_64",
                                                                                 "linux_x86_64"]
SDIST_ONLY = {"antlr4-python3-runtime"}


def launcher():
    module, _ = load_launcher(load(EXAMPLES / "vm-v4-32.env"), "roberta")
    return module


def fairseq_requirements() -> list[str]:
    """fairseq-fixed 0.12.3.1's own requirements (not torch/torchaudio: pinned with the stack)."""
    try:
        reqs = importlib.metadata.requires("fairseq-fixed") or []
    except importlib.metadata.PackageNotFoundError:
        reqs = []
    require("fairseq-fixed", bool(reqs), "pip install --no-build-isolation fairseq-fixed==0.12.3.1")
    out = []
    for req in reqs:
        if "extra ==" in req:
            continue
        name = re.split(r"[<>=!~ ;\[]", req, 1)[0].lower()
        if name in ("torch", "torchaudio"):
            continue
        out.append(req.split(";")[0].strip())
    return out


def resolve(requirements: list[str], tmp) -> dict[str, str]:
    report = tmp / "report.json"
    platforms = [f"--platform={p}" for p in UBUNTU_2204]
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
           "--target", str(tmp / "target"), "--report", str(report), "--python-version", "3.10",
           "--implementation", "cp", "--abi", "cp310", "--only-binary=:all:", *platforms, *requirements]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    return {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"]
            for i in json.loads(report.read_text())["install"]}


def test_every_runtime_pins_one_supported_release():
    module = launcher()
    assert set(module.VM_TORCH_XLA.values()) == {"2.9.0"}  # the release pjrt_compat.py is proven with
    assert module.VM_FAIRSEQ == "fairseq-fixed==0.12.3.1"
    assert module.TORCH_CPU_INDEX == "https://download.pytorch.org/whl/cpu"


@pytest.mark.parametrize("release", sorted(set(launcher().VM_TORCH_XLA.values())))
def test_stack_resolves_for_python_310_from_public_indexes(tmp_path, release):
    fairseq = [r for r in fairseq_requirements() if not r.lower().startswith(tuple(SDIST_ONLY))]
    # hydra-core and omegaconf pull antlr4-python3-runtime 4.9.x, an sdist: resolved without them
    # here, their own wheels below (no deps), antlr's presence in test_source_only_pins_are_on_pypi
    held = [r for r in fairseq if r.lower().startswith(("hydra-core", "omegaconf"))]
    assert sorted(held) == ["hydra-core==1.3.2", "omegaconf==2.3.0"], held
    fairseq = [r for r in fairseq if r not in held]
    wanted = [f"torch=={release}", f"torch_xla[tpu]=={release}", f"torchaudio=={release}", *fairseq]
    got = resolve(wanted, tmp_path)
    assert got["torch"] == release and got["torch-xla"] == release and got["torchaudio"] == release
    assert "libtpu" in got, got  # the [tpu] extra: libtpu from PyPI, no find-links needed
    assert "libtpu-nightly" not in got
    assert {"numpy", "sacrebleu", "bitarray", "scikit-learn"} <= set(got)
    got = resolve(["--no-deps", *held], tmp_path)
    assert got == {"hydra-core": "1.3.2", "omegaconf": "2.3.0"}


@pytest.mark.parametrize("package,version", [("fairseq-fixed", "0.12.3.1"), ("antlr4-python3-runtime", "4.9.3"),
                                             ("hydra-core", "1.3.2")])
def test_source_only_pins_are_on_pypi(package, version):
    r = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    available = r.stdout.split("Available versions:", 1)[-1].splitlines()[0]
    assert version in re.split(r"[ ,]+", available.strip()), r.stdout
