"""tools/tfstandin/install.py takes a provider's jsii tarball out of its bindings wheel (PyPI, the
8.x releases) and caches only that tarball; a failing download is one line. Offline: pip reads a
wheel made here (``PIP_NO_INDEX`` + ``PIP_FIND_LINKS``), never a registry."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.support.terraform import install


def _wheel(folder: Path, name: str, version: str, jsii: bytes) -> Path:
    module = name.replace("-", "_")
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr(f"{module}/__init__.py", "")
        whl.writestr(f"{module}/_jsii/provider-x@{version}.jsii.tgz", jsii)
        whl.writestr(f"{module}-{version}.dist-info/METADATA",
                     f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        whl.writestr(f"{module}-{version}.dist-info/WHEEL",
                     "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{module}-{version}.dist-info/RECORD", "")
    return path


def _tgz() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        data = b'{"name": "@cdktn/provider-x"}'
        info = tarfile.TarInfo("package/.jsii")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_the_wheel_s_jsii_tarball_is_cached_and_the_wheel_is_not(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    links = tmp_path / "links"
    links.mkdir()
    jsii = _tgz()
    _wheel(links, "cdktn-provider-x", "1.2.3", jsii)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    release = install.Release("9.1.0", "pypi", "1.2.3", {"google": "cdktn-provider-x"})
    cache = tmp_path / "cache"
    got = install.tarball(cache, release, "google")
    assert got == cache / "pypi" / "cdktn-provider-x-1.2.3.jsii.tgz" and got.read_bytes() == jsii
    assert sorted(p.name for p in (cache / "pypi").iterdir()) == [got.name], "only the tarball is kept"
    got.write_bytes(b"cached")  # a second call reads the cache, no download
    assert install.tarball(cache, release, "google").read_bytes() == b"cached"


def test_a_failing_download_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    release = install.Release("9.1.0", "pypi", "1.2.3", {"google": "cdktn-provider-absent"})
    with pytest.raises(install.InstallError) as caught:
        install.tarball(tmp_path / "cache", release, "google")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("tfstandin: `") and "cdktn-provider-absent==1.2.3" in message
    assert "error" in message.lower()
