"""The offline gcloud harness itself: it must tell a line gcloud accepts from one it rejects,
otherwise every "gcloud parses it" test elsewhere proves nothing (a negative control)."""

from __future__ import annotations

import pytest

ACCEPTED = [
    # the IAP tunnel flag of tpu-vm ssh exists in the alpha track
    ["alpha", "compute", "tpus", "tpu-vm", "ssh", "tpu-x", "--zone", "us-central1-a", "--worker=all",
     "--tunnel-through-iap", "--command", "true"],
    ["compute", "ssh", "vm-1", "--zone", "us-central1-a", "--tunnel-through-iap", "--command", "true"],
    ["compute", "snapshots", "list", "--filter", "labels.tpubuild-env=x", "--format", "value(name)"],
]

REJECTED = [
    # ...and not in GA: the same line without `alpha` is refused
    ["compute", "tpus", "tpu-vm", "ssh", "tpu-x", "--zone", "us-central1-a", "--worker=all",
     "--tunnel-through-iap", "--command", "true"],
    ["compute", "ssh", "vm-1", "--zone", "us-central1-a", "--no-such-flag"],
    ["compute", "instances", "frobnicate", "vm-1"],
    ["compute", "snapshots", "list", "--format"],
]


@pytest.mark.parametrize("argv", ACCEPTED, ids=lambda a: " ".join(a[:5]))
def test_accepted_lines_parse_and_reach_the_fake(gcloud, argv: list[str]) -> None:
    result = gcloud.parse(argv)
    assert result.ok, result.why()
    assert result.requests, "a parsed command calls the API (at the local fake)"


@pytest.mark.parametrize("argv", REJECTED, ids=lambda a: " ".join(a[:6]))
def test_rejected_lines_are_told_apart(gcloud, argv: list[str]) -> None:
    result = gcloud.parse(argv)
    assert not result.ok, result.why()
    assert result.returncode == 2
    assert not result.requests, "an argument error never reaches the API"


def test_request_bodies_are_recorded(gcloud) -> None:
    trigger = "name: tpubuild-x\ngithub:\n  owner: my-org\n  name: my-repo\n  push:\n    branch: ^main$\nfilename: cloudbuild.yaml\n"
    result = gcloud.parse(["builds", "triggers", "import", "--source=/dev/stdin"], stdin=trigger)
    assert result.ok, result.why()
    bodies = [r.body for r in result.requests if r.method in ("POST", "PATCH")]
    assert bodies and bodies[-1]["name"] == "tpubuild-x"
    assert bodies[-1]["github"]["owner"] == "my-org"
