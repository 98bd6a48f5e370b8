"""modules/_shared: the provider pin and the variables several modules declare the same way live
once and are linked (relative symlinks) by the modules that need them (modules/_shared/README.md).

Checked here: the links themselves, that no two modules declare the same variable the same way
in their own files (that is what _shared is for), and that the source tarball and ``auto``'s
digests read a link as the file it points to.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO
from tests.support.hcl import ALL_DIRS, MODULES, SHARED

LINKS = sorted(p for d in ALL_DIRS for p in (MODULES / d).iterdir() if p.is_symlink())
_VARIABLE = re.compile(r'^variable "(\w+)" \{\n.*?^\}\n', re.S | re.M)


def test_links_are_relative_and_point_into_shared() -> None:
    assert LINKS, "the modules link their shared files"
    for link in LINKS:
        target = os.readlink(link)
        assert not os.path.isabs(target), f"{link}: an absolute link breaks in another checkout"
        want = {"versions.tf": ("../_shared/versions.tf", "../_shared/versions_child.tf")}.get(
            link.name, (f"../_shared/{link.name}",))
        assert target in want, f"{link} -> {target}: a link is ../_shared/<its own name> (versions.tf: the pin)"
        assert link.resolve().is_file() and link.resolve().parent == SHARED.resolve()


def test_every_shared_file_is_shared() -> None:
    users: dict[str, set[str]] = {}
    for link in LINKS:
        users.setdefault(link.resolve().name, set()).add(link.parent.name)
    files = {p.name for p in SHARED.glob("*.tf")}
    assert set(users) == files, f"not linked by any module: {sorted(files - set(users))}"
    assert [f for f, who in users.items() if len(who) < 2] == [], "a file only one module links belongs to it"
    assert (SHARED / "README.md").is_file()
    assert not [p for p in SHARED.iterdir() if p.is_symlink()], "_shared holds files, not links"


def test_no_variable_is_declared_twice_the_same_way() -> None:
    """A variable block that two modules would declare letter for letter goes to _shared (one
    place per fact): their own files never repeat one."""
    seen: dict[str, str] = {}
    for d in ALL_DIRS:
        for tf in sorted((MODULES / d).glob("*.tf")):
            if tf.is_symlink():
                continue
            for block in _VARIABLE.finditer(tf.read_text()):
                where = f"{d}/{tf.name}"
                assert block.group(0) not in seen, (
                    f"variable {block.group(1)} is declared the same way in {seen.get(block.group(0))} and {where}: "
                    "move it to modules/_shared and link it")
                seen[block.group(0)] = where


def test_the_source_tarball_packs_a_link_as_its_file_and_skips_one_leaving_the_tree(tmp_path: Path) -> None:
    from builder.cloud.workspace import walk

    (tmp_path / "modules" / "_shared").mkdir(parents=True)
    (tmp_path / "modules" / "_shared" / "versions.tf").write_text("terraform {}\n")
    (tmp_path / "modules" / "a").mkdir()
    (tmp_path / "modules" / "a" / "versions.tf").symlink_to("../_shared/versions.tf")
    (tmp_path / "secret.tf").write_text("not for the tarball\n")
    (tmp_path / "modules" / "a" / "escape.tf").symlink_to("../../secret.tf")
    got = dict(walk(tmp_path, "modules"))
    assert set(got) == {"modules/_shared/versions.tf", "modules/a/versions.tf"}
    assert got["modules/a/versions.tf"].read_text() == "terraform {}\n"
    # the digest of one module folder reads the link too (the target is in the same modules/ tree)
    assert [rel for rel, _ in walk(tmp_path, "modules/a")] == ["modules/a/versions.tf"]


def test_the_real_tarball_holds_every_linked_file() -> None:
    from builder.cloud.source import collect

    files = collect(REPO, b"", {})
    for link in LINKS:
        rel = link.relative_to(REPO).as_posix()
        assert files[rel] == (link.resolve().read_bytes(), False), rel


@pytest.mark.parametrize("shared, changed", [
    ("var_zone.tf", {"filestore", "shared_pd", "tpu"}),
    ("versions.tf", {"filestore", "shared_pd", "tpu", "dashboard"}),
])
def test_a_change_to_a_shared_file_changes_the_modules_that_link_it(tmp_path: Path, shared: str,
                                                                    changed: set[str]) -> None:
    """auto re-applies exactly the roots that link a changed shared file."""
    from builder.cloud import auto
    from builder.config import load

    for folder in ("modules", "env_setup"):
        shutil.copytree(REPO / folder, tmp_path / folder, symlinks=True)  # the links stay links
    values = tmp_path / "values.env"
    values.write_bytes((EXAMPLES / "vm-v4-32.env").read_bytes())
    settings = load(values)
    every = ("filestore", "shared_pd", "tpu", "dashboard")
    before = auto.digests(settings, tmp_path, every)
    target = tmp_path / "modules" / "_shared" / shared
    target.write_text(target.read_text() + "\n# changed\n")
    after = auto.digests(settings, tmp_path, every)
    assert {m for m in every if before[m] != after[m]} == changed
