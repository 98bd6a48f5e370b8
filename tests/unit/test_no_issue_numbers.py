"""Code, tests and docs say what and why, not which issue asked for it: history belongs in git.

Every text file git tracks (and every new file it does not ignore) is read; a line that names an
issue by number (the word, an optional '#', a number) fails the test with its file:line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from tests.conftest import REPO

#: "issue" or "issues", then an optional '#', then a number. Written so that this file does not match.
MENTION = re.compile(r"\bissues?\s*#?[0-9]+", re.IGNORECASE)


#: Folders that hold no project text (what .gitignore ignores), for a copy without git.
SKIPPED_DIRS = {".git", "__pycache__", "build", "dist", ".pytest_cache", ".hypothesis", ".terraform", ".whl", ".gl"}


def project_files() -> list[str]:
    """What git tracks and every new file it does not ignore; in a copy without git (a source
    tree, the device machine's working copy), every file outside the ignored folders."""
    if shutil.which("git") and (REPO / ".git").exists():
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=REPO, capture_output=True, check=True).stdout
        return sorted({name for name in out.decode().split("\0") if name})
    found = []
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".venv") and not d.endswith(".egg-info")]
        found += [os.path.relpath(os.path.join(folder, f), REPO) for f in files]
    return sorted(found)


def mentions(name: str, text: str) -> list[str]:
    return [f"{name}:{number}: {line.strip()[:120]}"
            for number, line in enumerate(text.splitlines(), start=1) if MENTION.search(line)]


def test_the_pattern_finds_what_it_should() -> None:
    # the examples are built from parts so that this file holds no mention itself
    bad = ["# see issue" + " 12", "(Issue" + " #7)", "issues" + " 3 and 4"]
    text = "\n".join(["a", *bad, "issuer 5", "tissue" + " 9", "an issue"])
    assert mentions("x.py", text) == [f"x.py:{n}: {line}" for n, line in enumerate(bad, start=2)]


def test_no_file_names_an_issue_by_number() -> None:
    found: list[str] = []
    for name in project_files():
        path = REPO / name
        if path.is_symlink() or not path.is_file():
            continue  # a link is checked as the file it points to; a deleted file is not there
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        found += mentions(name, data.decode("utf-8", errors="replace"))
    assert not found, "say what and why, not which issue asked for it:\n" + "\n".join(found)
