"""Every shell script in the repository passes `shellcheck -x` and starts strict.

Scripts: every ``*.sh`` (env_setup/, models/, tools/, anywhere else) and the extension-less
scripts under .ci/ and tools/ whose first line is a sh/bash shebang. CI installs Debian's
shellcheck (.ci/run); on a laptop without it the shellcheck test is skipped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO, require

SKIP_DIRS = {".git", ".venv", "node_modules", ".terraform", "build", "dist", ".pytest_cache"}
SHEBANG = re.compile(r"^#!\s*(/usr/bin/env\s+)?(/usr)?(/bin/)?(ba)?sh\b")


def _skipped(path: Path) -> bool:
    return any(part in SKIP_DIRS or part.startswith(".venv") for part in path.relative_to(REPO).parts)


def _has_shell_shebang(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            first = f.readline(200).decode("utf-8", "replace")
    except OSError:
        return False
    return bool(SHEBANG.match(first))


def shell_scripts() -> list[Path]:
    found = {p for p in REPO.rglob("*.sh") if p.is_file() and not _skipped(p)}
    for folder in (REPO / ".ci", REPO / "tools"):
        if folder.is_dir():
            found |= {p for p in folder.rglob("*") if p.is_file() and p.suffix == ""
                      and not _skipped(p) and _has_shell_shebang(p)}
    return sorted(found)


def test_the_scripts_are_found():
    names = {p.relative_to(REPO).as_posix() for p in shell_scripts()}
    assert {"env_setup/scripts/startup.sh", "env_setup/seeder/run_seeder.sh",
            "env_setup/seeder/seed_disk.sh", ".ci/run"} <= names


def test_every_shell_script_passes_shellcheck():
    require("shellcheck", shutil.which("shellcheck") is not None, "apt-get install shellcheck")
    scripts = [str(p.relative_to(REPO)) for p in shell_scripts()]
    result = subprocess.run(["shellcheck", "-x", "-P", "SCRIPTDIR", "-f", "gcc", *scripts],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, "shellcheck findings:\n" + result.stdout + result.stderr


def test_every_executable_script_is_strict():
    loose = []
    for path in shell_scripts():
        text = path.read_text(errors="replace")
        if _has_shell_shebang(path) and not re.search(r"^set -euo pipefail\b", text, re.M):
            loose.append(path.relative_to(REPO).as_posix())
    assert not loose, f"scripts without 'set -euo pipefail' (docs/standards.md): {loose}"
