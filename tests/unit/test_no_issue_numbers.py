"""Code, tests and docs say what and why, not which issue asked for it: history belongs in git.

Every text file git tracks (and every new file it does not ignore) is read; a line that names an
issue by number (the word, an optional '#', a number) fails the test with its file:line.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from tests.conftest import REPO, require

#: "issue" or "issues", then an optional '#', then a number. Written so that this file does not match.
MENTION = re.compile(r"\bissues?\s*#?[0-9]+", re.IGNORECASE)


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=REPO, capture_output=True, check=True).stdout
    return sorted({name for name in out.decode().split("\0") if name})


def mentions(name: str, text: str) -> list[str]:
    return [f"{name}:{number}: {line.strip()[:120]}"
            for number, line in enumerate(text.splitlines(), start=1) if MENTION.search(line)]


def test_the_pattern_finds_what_it_should() -> None:
    # the examples are built from parts so that this file holds no mention itself
    bad = ["# see issue" + " 12", "(Issue" + " #7)", "issues" + " 3 and 4"]
    text = "\n".join(["a", *bad, "issuer 5", "tissue" + " 9", "an issue"])
    assert mentions("x.py", text) == [f"x.py:{n}: {line}" for n, line in enumerate(bad, start=2)]


def test_no_file_names_an_issue_by_number() -> None:
    require("git", shutil.which("git") is not None and (REPO / ".git").exists(), "a git checkout")
    found: list[str] = []
    for name in tracked_files():
        path = REPO / name
        if path.is_symlink() or not path.is_file():
            continue  # a link is checked as the file it points to; a deleted file is not there
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        found += mentions(name, data.decode("utf-8", errors="replace"))
    assert not found, "say what and why, not which issue asked for it:\n" + "\n".join(found)
