"""builder/facts/files.py ``read_bytes``: the one place a user's file is opened. Each kind of file keeps
its own wording (values.env, a plan JSON, the generic ``read_file``); these are the exact lines the
three copies of the mapping printed before they became one helper."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builder.facts.errors import BadInput
from builder.facts.files import GENERIC, human, read_bytes, read_file
from builder.facts.files import PLAN_JSON, VALUES_FILE


def _refusal(path: Path, limit: int, wording, **fields: str) -> str:
    with pytest.raises(BadInput) as info:
        read_bytes(path, limit, wording, **fields)
    return str(info.value)


@pytest.mark.parametrize("wording, name, no_such_file, is_a_directory", [
    pytest.param(VALUES_FILE, "nope.env", "create it (copy the shipped values.env) or pass --values PATH",
                 "pass the values.env file itself with --values", id="values-file"),
    pytest.param(PLAN_JSON, "tpu.json", "run 'terraform show -json PLANFILE > {missing}' first",
                 "pass the file written by 'terraform show -json PLANFILE'", id="plan-json"),
])
def test_missing_file_and_directory_wording(tmp_path: Path, wording, name: str, no_such_file: str,
                                            is_a_directory: str) -> None:
    missing = tmp_path / name
    assert _refusal(missing, 1 << 20, wording) == f"{missing}: no such file; {no_such_file.format(missing=missing)}"
    assert _refusal(tmp_path, 1 << 20, wording) == f"{tmp_path}: is a directory; {is_a_directory}"


def test_values_file_wording(tmp_path: Path) -> None:
    nul = Path("a\0b")
    assert _refusal(nul, 1 << 20, VALUES_FILE) == f"{nul!r}: is not a usable path; pass the values.env file with --values"
    big = tmp_path / "big.env"
    big.write_bytes(b"A=1\n" * 4)
    assert _refusal(big, 8, VALUES_FILE) == (
        f"{big}: more than 1048576 bytes is too large for a values file (an endless stream such as /dev/zero?); "
        "keep it under 1 MiB")
    assert read_bytes(big, 16, VALUES_FILE) == b"A=1\n" * 4


def test_plan_json_wording(tmp_path: Path) -> None:
    blank = tmp_path / "blank.json"
    blank.write_bytes(b" \n\t" * 10)
    # empty is checked before the size, as the plan guard always did
    assert _refusal(blank, 4, PLAN_JSON) == (
        f"{blank}: is empty; did 'terraform show -json' fail? Rerun the plan step")
    big = tmp_path / "big.json"
    big.write_bytes(b"{}" * 8)
    assert _refusal(big, 4, PLAN_JSON) == (
        f"{big}: more than 256 MiB is too large for a plan JSON (an endless stream such as /dev/zero?); "
        "pass the output of one module's plan")


def test_generic_wording(tmp_path: Path) -> None:
    fix = "keep it under 1 MiB"
    missing = tmp_path / "x"
    with pytest.raises(BadInput, match=r"^.*/x: no such file; keep it under 1 MiB$"):
        read_file(missing, 10, what="a values file", fix=fix)
    with pytest.raises(BadInput) as info:
        read_file(tmp_path, 10, what="a values file", fix=fix)
    assert str(info.value) == f"{tmp_path}: is a directory, not a values file; {fix}"
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(BadInput) as info:
        read_file(big, 1024, what="a repository file", fix=fix)
    assert str(info.value) == (f"{big}: more than 1 KiB, too large for a repository file (an endless stream "
                               f"such as /dev/zero?); {fix}")
    assert human(1024) == "1 KiB" and human(1000) == "1000 bytes"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
@pytest.mark.parametrize("wording, expected", [
    (VALUES_FILE, "{p}: permission denied; make the file readable (chmod u+r {p})"),
    (PLAN_JSON, "{p}: permission denied; make the plan JSON readable"),
    (GENERIC, "{p}: permission denied; make it readable, or FIX"),
])
def test_permission_denied(tmp_path: Path, wording, expected: str) -> None:
    locked = tmp_path / "locked"
    locked.write_text("A=1\n")
    locked.chmod(0)
    assert _refusal(locked, 100, wording, what="a file", fix="FIX", cap="100 bytes") == expected.format(p=locked)


def test_a_failed_read_names_the_os_reason(tmp_path: Path) -> None:
    """A path through a plain file (``file/x``) fails with ENOTDIR: an OSError that is none of the
    named cases, so the line carries the OS's reason."""
    plain = tmp_path / "plain"
    plain.write_text("")
    through = plain / "x"
    assert _refusal(through, 10, VALUES_FILE) == f"{through}: cannot read (Not a directory); pass a readable file with --values"
    assert _refusal(through, 10, PLAN_JSON) == f"{through}: cannot read (Not a directory); pass a readable plan JSON file"
