"""Byte-for-byte golden launch scripts: ``train``, ``stop``, ``logs``
and ``run`` with ``--dry-run`` print exactly what ``tests/data/golden_launch/`` holds for every
shipped values file, with IAP and with external IPs, with and without a MODEL. The host transport
and the roberta launcher moved and split under this test; a change that means to change a launch
line regenerates them (``python tests/data/golden_launch/generate.py``) and says so in its commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.golden import assert_matches_golden, every_recording, load_generator

golden = load_generator("golden_launch")


@pytest.mark.parametrize("path", golden.FILES)
def test_launch_scripts_match_golden(path: str, tmp_path: Path) -> None:
    assert_matches_golden(golden, path, tmp_path)


def test_golden_launch_cases_launch_on_every_architecture() -> None:
    """Not all refusals: every architecture prints gcloud lines for train, stop and logs."""
    for path, data in every_recording(golden):
        if "tpu7x" in path:  # roberta has no device count for tpu7x: refused, run still works
            assert data["train roberta"]["rc"] == 2 and "gcloud compute ssh" in data["run"]["stdout"]
            continue
        for case in ("train roberta", "external: train roberta", "stop", "logs"):
            assert data[case]["rc"] == 0 and "gcloud" in data[case]["stdout"], (path, case)
