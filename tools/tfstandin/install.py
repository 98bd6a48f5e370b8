"""Install the stand-in google / google-beta 6.50.0 providers for an offline Terraform.

    python tools/tfstandin/install.py            # prints: export TF_CLI_CONFIG_FILE=...

Steps, each skipped when its result is already in the cache (``$TPUBUILD_CACHE`` or
``~/.cache/tpubuild``, folder ``tfstandin``):

1. ``npm pack @cdktf/provider-google@16.12.1 @cdktf/provider-google-beta@16.12.1`` (~65 MB);
2. the full provider schema of each, rebuilt by ``schema.py`` (keyed by that file's digest);
3. a filesystem mirror in Terraform's unpacked layout
   ``registry.terraform.io/hashicorp/<name>/6.50.0/linux_amd64/terraform-provider-<name>_v6.50.0``:
   a small ``sh`` script that execs this Python with ``server.py <schema>.json``;
4. a CLI config (``terraformrc``) whose ``provider_installation`` has that mirror for
   ``hashicorp/google`` and ``hashicorp/google-beta`` and nothing else, so Terraform never tries the
   registry.

Terraform then needs only ``TF_CLI_CONFIG_FILE=<cache>/.../terraformrc``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CDKTF_VERSION = "16.12.1"
PROVIDER_VERSION = "6.50.0"
PACKAGES = {"google": "@cdktf/provider-google", "google-beta": "@cdktf/provider-google-beta"}


class InstallError(Exception):
    """The stand-in could not be installed (npm missing or failing); one line for the user."""


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


def _tarball(cache: Path, provider: str) -> Path:
    path = cache / "npm" / f"cdktf-provider-{provider}-{CDKTF_VERSION}.tgz"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["npm", "pack", "--silent", f"{PACKAGES[provider]}@{CDKTF_VERSION}"]
    try:
        subprocess.run(cmd, cwd=path.parent, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise InstallError("tfstandin: npm is not installed (apt-get install npm)") from None
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise InstallError(f"tfstandin: `{' '.join(cmd)}` failed: {last[0]}") from None
    if not path.exists():
        raise InstallError(f"tfstandin: `{' '.join(cmd)}` did not write {path.name}")
    return path


def _schema(cache: Path, provider: str) -> Path:
    digest = hashlib.sha256((HERE / "schema.py").read_bytes()).hexdigest()[:12]
    path = cache / "schema" / f"{provider}-{PROVIDER_VERSION}-{digest}.json"
    if path.exists():
        return path
    sys.path.insert(0, str(HERE))
    import schema  # noqa: E402  (tools/tfstandin is not a package)

    built = schema.build(_tarball(cache, provider))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(built, separators=(",", ":")))
    os.replace(tmp, path)
    return path


def install(cache: Path | None = None) -> Standin:
    cache = cache or cache_dir()
    python = sys.executable
    key = hashlib.sha256(f"{python}\n{HERE}".encode()).hexdigest()[:12]
    root = cache / f"mirror-{key}"
    mirror = root / "plugins"
    for provider in PACKAGES:
        schema_path = _schema(cache, provider)
        exe_dir = mirror / "registry.terraform.io" / "hashicorp" / provider / PROVIDER_VERSION / "linux_amd64"
        exe = exe_dir / f"terraform-provider-{provider}_v{PROVIDER_VERSION}"
        script = ("#!/bin/sh\n# tpubuild stand-in provider (tools/tfstandin): serves the real schema, no cloud.\n"
                  f"exec {shlex.quote(python)} {shlex.quote(str(HERE / 'server.py'))} {shlex.quote(str(schema_path))}\n")
        if not exe.exists() or exe.read_text() != script:
            exe_dir.mkdir(parents=True, exist_ok=True)
            tmp = exe.with_suffix(".tmp")
            tmp.write_text(script)
            tmp.chmod(0o755)
            os.replace(tmp, exe)
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
