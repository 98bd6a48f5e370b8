"""Byte-for-byte golden launch scripts (issue 12, models plug in): ``train``, ``stop``, ``logs``
and ``run`` with ``--dry-run`` print exactly what ``tests/data/golden_launch/`` holds for every
shipped values file, with IAP and with external IPs, with and without a MODEL. The host transport
and the roberta launcher moved and split under this test; a change that means to change a launch
line regenerates them (``python tests/data/golden_launch/generate.py``) and says so in its commit."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("golden_launch_generate", REPO / "tests/data/golden_launch/generate.py")
assert _spec and _spec.loader
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)


@pytest.mark.parametrize("path", golden.FILES)
def test_launch_scripts_match_golden(path: str, tmp_path: Path) -> None:
    expected = json.loads(golden.golden_path(path).read_text())
    actual = golden.render_all(path, tmp_path)
    assert sorted(actual) == sorted(expected), "the set of cases changed; regenerate on purpose"
    differ = [name for name in expected if actual[name] != expected[name]]
    for name in differ[:3]:
        assert actual[name] == expected[name], f"{path}: {name}"
    assert not differ


def test_golden_launch_cases_launch_on_every_architecture() -> None:
    """Not all refusals: every architecture prints gcloud lines for train, stop and logs."""
    for path in golden.FILES:
        data = json.loads(golden.golden_path(path).read_text())
        if "tpu7x" in path:  # roberta has no device count for tpu7x: refused, run still works
            assert data["train roberta"]["rc"] == 2 and "gcloud compute ssh" in data["run"]["stdout"]
            continue
        for case in ("train roberta", "external: train roberta", "stop", "logs"):
            assert data[case]["rc"] == 0 and "gcloud" in data[case]["stdout"], (path, case)
