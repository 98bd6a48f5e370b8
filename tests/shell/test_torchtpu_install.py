"""models/torchtpu/install.sh on a host, sandboxed (HOME in a temporary folder): the venv it makes
from a Python 3.11+ (torch-tpu needs one), the install from a wheelhouse another host already
filled (``.complete``, no download), the stamp. A toy wheel stands in for torch, torch-tpu and
libtpu (their real install is .ci/run's .venv-torchtpu; on a TPU image: docs/models.md)."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

from tests.conftest import REPO

INSTALL = REPO / "models/torchtpu/install.sh"


def _toy_wheel(folder: Path, name: str) -> None:
    dist = f"{name}-1.0.dist-info"
    files = {f"{name}.py": "VALUE = 1\n",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{dist}/RECORD"] = "".join(f"{p},,\n" for p in [*files, f"{dist}/RECORD"])
    with zipfile.ZipFile(folder / f"{name}-1.0-py3-none-any.whl", "w") as whl:
        for path, text in files.items():
            whl.writestr(path, text)


def test_install_makes_a_311_venv_and_installs_from_the_filled_wheelhouse(tmp_path: Path) -> None:
    home, wheels = tmp_path / "home", tmp_path / "wheels"
    home.mkdir()
    wheels.mkdir()
    _toy_wheel(wheels, "tpubuildtoy")
    _toy_wheel(wheels, "tpubuildclient")
    (wheels / ".complete").write_text("tpubuildtoy==1.0\ntpubuildclient==1.0\n")  # another host filled it
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "PIP_NO_INDEX": "1"}
    env.pop("TPUBUILD_PYTHON", None)
    args = ["bash", str(INSTALL), "--wheelhouse", str(wheels), "--no-deps", "tpubuildclient==1.0", "--",
            "tpubuildtoy==1.0"]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    python = home / ".tpubuild/venv-torchtpu/bin/python"
    check = subprocess.run([str(python), "-c", "import sys, tpubuildtoy, tpubuildclient; "
                            "print(sys.version_info >= (3, 11))"], capture_output=True, text=True)
    assert check.stdout.strip() == "True", check.stderr
    stamps = list((home / ".tpubuild/stamps").glob("torchtpu-*"))
    assert len(stamps) == 1 and stamps[0].read_text().split() == ["tpubuildtoy==1.0", "tpubuildclient==1.0"]
    assert "installed tpubuildtoy==1.0" in r.stdout
