"""``--format json`` is JSON on every exit: when a command that takes it fails (bad input, exit 2;
a failure in the world such as no credentials, exit 1), stdout holds one JSON object,
``{"error": {...}}`` (builder.facts.errors.document), and stderr keeps its one text line.

Every case runs with no cloud and no credentials (``no_cloud``): the real console script in a
subprocess, and in-process through ``builder.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, SHIPPED, run_tpubuild

pytestmark = pytest.mark.usefixtures("no_cloud")


def _typo(tmp: Path) -> Path:
    bad = tmp / "values.env"
    bad.write_text(SHIPPED.read_text() + 'TPU_PROVISONING="spot"\nENV_TTL_HOURS="8h"\n')
    return bad


#: name → (argv of tmp, exit code, fragment of the message)
CASES = {
    "status without credentials": (lambda tmp: ["status", "--values", SHIPPED, "--format", "json"], 1,
                                   "no Google Cloud credentials found"),
    "status missing file": (lambda tmp: ["status", "--values", tmp / "nope.env", "--format=json"], 2, "no such file"),
    "plan bad values": (lambda tmp: ["plan", "--values", _typo(tmp), "--format", "json"], 2, "near miss of TPU_PROVISIONING"),
    "plan bad action": (lambda tmp: ["plan", "--values", SHIPPED, "--action", "bogus", "--format", "json"], 2,
                        "'bogus' is not an action"),
    "render calendar past on create": (lambda tmp: ["render", "--values", _calendar_past(tmp), "--action", "create",
                                                    "--format", "json"], 2, "is in the past"),
    "ttl show without a ttl": (lambda tmp: ["ttl", "show", "--values", SHIPPED, "--format", "json"], 2,
                               "ENV_TTL_HOURS is not set"),
}


def _calendar_past(tmp: Path) -> Path:
    path = tmp / "cal.env"
    path.write_text((EXAMPLES / "mig-v6e-32-calendar.env").read_text().replace(
        'TPU_CALENDAR_START="+14d"', 'TPU_CALENDAR_START="2026-11-27T00:00:00Z"'))
    return path


def _check(code: int, out: str, err: str, want: int, fragment: str) -> dict:
    assert code == want, err
    doc = json.loads(out)  # the whole of stdout is one JSON object
    assert set(doc) == {"error"} and doc["error"]["exit_code"] == want and fragment in doc["error"]["message"]
    assert doc["error"]["kind"] == {1: "world", 2: "bad-input"}[want]
    [line] = err.splitlines()[-1:]
    assert line == f"tpubuild: error: {doc['error']['message']}"
    return doc["error"]


@pytest.mark.parametrize("name", CASES)
def test_a_failure_is_a_json_object_on_stdout(tmp_path: Path, name: str) -> None:
    argv, want, fragment = CASES[name]
    proc = run_tpubuild(*argv(tmp_path))
    _check(proc.returncode, proc.stdout, proc.stderr, want, fragment)


def test_values_problems_are_listed_one_object_each(cli, tmp_path: Path) -> None:
    code, out, err = cli("plan", "--values", _typo(tmp_path), "--format", "json")
    error = _check(code, out, err, 2, "near miss")
    lines = len(SHIPPED.read_text().splitlines())
    assert [(p["line"], p["key"]) for p in error["problems"]] == [(lines + 1, "TPU_PROVISONING"),
                                                                   (lines + 2, "ENV_TTL_HOURS")]
    assert error["problems"][1]["fix"] == "write digits only, e.g. 8"


def test_text_format_keeps_stdout_empty_on_failure(cli, tmp_path: Path) -> None:
    code, out, err = cli("plan", "--values", _typo(tmp_path))
    assert code == 2 and out == "" and err.startswith("tpubuild: error: ")
