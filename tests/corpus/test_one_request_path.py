"""The same bad request is refused with the same line by ``plan``, ``render``, ``submit`` and
``dispatch`` (builder.planning.request is their one way in): exit 2, one line, nothing on stdout, no
cloud client asked for credentials, and only the names of the inputs differ (``--tpu`` on the
command line, ``_TPU`` in the root build's substitutions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.pipeline import MIG_ENV, NODE_ENV, VM_ENV
from tests.support.request import SPELLING, TAKES, argv, request_ids, respell

# (values file, action, flags): one request per refusal of builder.planning.request
CASES = [
    (VM_ENV, "explode", {}),
    (NODE_ENV, "create", {}),
    (NODE_ENV, "update", {"tpu": True}),
    (VM_ENV, "auto", {"tpu": True}),
    (MIG_ENV, "auto", {"tpu": True, "mig": True}),
    (VM_ENV, "auto", {"only": "tpu"}),
    (VM_ENV, "create", {"only": "tpu"}),
    (VM_ENV, "update", {"only": "tpu", "tpu": True}),
    (VM_ENV, "update", {"only": "gpu"}),
    (VM_ENV, "initialize", {"tpu": True}),
    (VM_ENV, "initialize", {"allow_data_loss": True}),
    (VM_ENV, "initialize", {"allow_wipe": True}),
    (VM_ENV, "update", {"mig": True}),
    (VM_ENV, "create", {"tpu": True}),
    (MIG_ENV, "destroy", {"tpu": True}),
    (VM_ENV, "update", {"tpu": True, "allow_wipe": True}),
    (VM_ENV, "destroy", {"allow_wipe": True}),
]


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if not line.startswith("tpubuild: warning: ")]


@pytest.mark.parametrize("values, action, flags", CASES, ids=request_ids(CASES))
def test_the_same_bad_request_gets_the_same_line_from_every_command(no_cloud, cli, tmp_path: Path, monkeypatch,
                                                                    values, action, flags) -> None:
    from builder.cloud import clients

    monkeypatch.chdir(tmp_path)
    verbs = [verb for verb, takes in TAKES.items() if set(flags) <= takes]
    assert len(verbs) >= 2, verbs
    lines: dict[str, str] = {}
    for verb in verbs:
        calls = clients.credentials.cache_info()
        code, out, err = cli(*argv(verb, values, action, flags))
        assert code == 2 and out == "", (verb, err)
        [line] = _error_lines(err)
        assert line.startswith("tpubuild: error: ") and "; " in line and "Traceback" not in err, line
        assert clients.credentials.cache_info() == calls, verb  # refused before any client
        lines[verb] = respell(line, SPELLING[verb], SPELLING["plan"])
        if verb == "dispatch":
            assert "--" not in line, line  # dispatch names the substitutions, never a command-line flag
    assert len(set(lines.values())) == 1, lines
