"""Install the stand-in google / google-beta providers (8.7.0 and 6.50.0) for an offline Terraform.

    python tools/tfstandin/install.py            # prints: export TF_CLI_CONFIG_FILE=...

Two releases are served (``RELEASES``): **8.7.0**, which every root module pins (``~> 8.7``), and
**6.50.0**, which the legacy destroy-only node roots (``modules/tpu_node``, ``modules/mig``) keep
because ``google_tpu_node`` was removed in 7.0.0. Terraform picks, per root, the newest one its
constraint allows. Steps, each skipped when its result is already in the cache
(``$TPUBUILD_CACHE`` or ``~/.cache/tpubuild``, folder ``tfstandin``):

1. the bindings package of each provider, which carries the jsii tarball the schema is rebuilt
   from (``package/.jsii`` + ``package/lib/<type>/index.js``):

   * 8.7.0: PyPI ``cdktn-provider-google(-beta)==21.1.0`` (CDK Terrain, the cdktf fork):
     ``pip download --no-deps`` of the wheel, whose ``<module>/_jsii/*.jsii.tgz`` is kept as
     ``pypi/<package>-21.1.0.jsii.tgz`` (~45 MB each; the wheel itself is deleted);
   * 6.50.0: ``npm pack @cdktf/provider-google(-beta)@16.12.1`` (~65 MB, ``npm/``);

2. the full provider schema of each, rebuilt by ``schema.py`` (keyed by that file's digest);
3. a filesystem mirror in Terraform's unpacked layout
   ``registry.terraform.io/hashicorp/<name>/<version>/linux_amd64/terraform-provider-<name>_v<version>``:
   a small ``sh`` script that execs this Python with ``plugin.py <schema>.json``;
4. a CLI config (``terraformrc``) whose ``provider_installation`` has that mirror for
   ``hashicorp/google`` and ``hashicorp/google-beta`` and nothing else, so Terraform never tries the
   registry.

Terraform then needs only ``TF_CLI_CONFIG_FILE=<cache>/.../terraformrc``. ``tools/provider_schema.py``
and ``tools/provider_types.py`` read the same cached tarballs (``tarball()``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROVIDERS = ("google", "google-beta")


@dataclass(frozen=True)
class Release:
    """One provider release the stand-in serves, and the bindings its schema is rebuilt from."""

    provider_version: str
    registry: str  # "pypi" (a wheel holding the jsii tarball) or "npm" (the tarball itself)
    package_version: str
    packages: dict[str, str]  # provider -> package name in that registry

    def package_label(self, provider: str) -> str:
        return f"{self.packages[provider]}=={self.package_version}" if self.registry == "pypi" \
            else f"{self.packages[provider]}@{self.package_version}"


#: What the root modules pin (modules/_shared/versions.tf: ~> 8.7).
CURRENT = Release("8.7.0", "pypi", "21.1.0",
                  {"google": "cdktn-provider-google", "google-beta": "cdktn-provider-google-beta"})
#: What the legacy destroy-only node roots pin (modules/_shared/versions_legacy_override.tf: < 7).
LEGACY = Release("6.50.0", "npm", "16.12.1",
                 {"google": "@cdktf/provider-google", "google-beta": "@cdktf/provider-google-beta"})
RELEASES = (CURRENT, LEGACY)


class InstallError(Exception):
    """The stand-in could not be installed (pip or npm missing or failing); one line for the user."""


@dataclass(frozen=True)
class Standin:
    root: Path
    cli_config: Path
    mirror: Path

    def env(self) -> dict[str, str]:
        return {"TF_CLI_CONFIG_FILE": str(self.cli_config), "CHECKPOINT_DISABLE": "1", "TF_IN_AUTOMATION": "1"}


def cache_dir() -> Path:
    base = os.environ.get("TPUBUILD_CACHE") or str(Path.home() / ".cache" / "tpubuild")
    return Path(base) / "tfstandin"


def tarball(cache: Path, release: Release, provider: str) -> Path:
    """The jsii tarball (``package/.jsii``, ``package/lib/...``) of one provider's bindings."""
    if release.registry == "pypi":
        return _from_wheel(cache, release, provider)
    return _npm_pack(cache, release, provider)


def _run(cmd: list[str], cwd: Path, hint: str) -> None:
    try:
        subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise InstallError(f"tfstandin: {cmd[0]} is not installed ({hint})") from None
    except subprocess.CalledProcessError as exc:
        lines = [line.strip() for line in (exc.stderr or "").splitlines() if any(c.isalnum() for c in line)]
        said = [line for line in lines if "error" in line.lower()] or lines or ["no output"]
        raise InstallError(f"tfstandin: `{' '.join(cmd)}` failed: {said[-1]}") from None


def _from_wheel(cache: Path, release: Release, provider: str) -> Path:
    package = release.packages[provider]
    path = cache / "pypi" / f"{package}-{release.package_version}.jsii.tgz"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tfstandin-", dir=path.parent) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--dest", tmp, release.package_label(provider)]
        _run(cmd, Path(tmp), "python -m ensurepip")
        wheels = sorted(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise InstallError(f"tfstandin: `{' '.join(cmd)}` wrote {len(wheels)} wheels, expected 1")
        with zipfile.ZipFile(wheels[0]) as wheel:
            members = [n for n in wheel.namelist() if "/_jsii/" in n and n.endswith(".jsii.tgz")]
            if len(members) != 1:
                raise InstallError(f"tfstandin: {wheels[0].name} holds {len(members)} _jsii/*.jsii.tgz, expected 1")
            tmp_out = path.with_suffix(f".{os.getpid()}.tmp")
            with wheel.open(members[0]) as src, open(tmp_out, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            os.replace(tmp_out, path)
    return path


def _npm_pack(cache: Path, release: Release, provider: str) -> Path:
    path = cache / "npm" / f"cdktf-provider-{provider}-{release.package_version}.tgz"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["npm", "pack", "--silent", release.package_label(provider)]
    _run(cmd, path.parent, "apt-get install npm")
    if not path.exists():
        raise InstallError(f"tfstandin: `{' '.join(cmd)}` did not write {path.name}")
    return path


def schema_path(cache: Path, release: Release, provider: str) -> Path:
    """The full schema of one provider release (built by ``schema.py`` on first use)."""
    digest = hashlib.sha256((HERE / "schema.py").read_bytes()).hexdigest()[:12]
    path = cache / "schema" / f"{provider}-{release.provider_version}-{digest}.json"
    if path.exists():
        return path
    sys.path.insert(0, str(HERE))
    import schema  # noqa: E402  (tools/tfstandin is not a package)

    built = schema.build(tarball(cache, release, provider))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(built, separators=(",", ":")))
    os.replace(tmp, path)
    return path


def _install_one(mirror: Path, python: str, version: str, provider: str, schema: Path) -> None:
    exe_dir = mirror / "registry.terraform.io" / "hashicorp" / provider / version / "linux_amd64"
    exe = exe_dir / f"terraform-provider-{provider}_v{version}"
    script = ("#!/bin/sh\n# tpubuild stand-in provider (tools/tfstandin): serves the real schema, no cloud.\n"
              f"exec {shlex.quote(python)} {shlex.quote(str(HERE / 'plugin.py'))} {shlex.quote(str(schema))}\n")
    if not exe.exists() or exe.read_text() != script:
        exe_dir.mkdir(parents=True, exist_ok=True)
        tmp = exe.with_suffix(".tmp")
        tmp.write_text(script)
        tmp.chmod(0o755)
        os.replace(tmp, exe)


def install(cache: Path | None = None) -> Standin:
    cache = cache or cache_dir()
    python = sys.executable
    key = hashlib.sha256(f"{python}\n{HERE}".encode()).hexdigest()[:12]
    root = cache / f"mirror-{key}"
    mirror = root / "plugins"
    for release in RELEASES:
        for provider in PROVIDERS:
            _install_one(mirror, python, release.provider_version, provider, schema_path(cache, release, provider))
    cli_config = root / "terraformrc"
    text = ("# tpubuild: google and google-beta come from the stand-in mirror only (offline).\n"
            "provider_installation {\n  filesystem_mirror {\n"
            f"    path    = {json.dumps(str(mirror))}\n"
            '    include = ["registry.terraform.io/hashicorp/google", "registry.terraform.io/hashicorp/google-beta"]\n'
            "  }\n}\n")
    if not cli_config.exists() or cli_config.read_text() != text:
        cli_config.write_text(text)
    return Standin(root=root, cli_config=cli_config, mirror=mirror)


def main() -> int:
    try:
        standin = install()
    except InstallError as exc:
        print(exc, file=sys.stderr)
        return 1
    for key, value in standin.env().items():
        print(f"export {key}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
