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


# ---- the loaded CLI answers as the gcloud command does -------------------------------------------

#: Lines of every outcome: accepted (an API call), refused by the parser, refused after parsing
#: (a missing file), a flag that changes the output format, one that sets a property, and one
#: command run twice with files and repeated flags (calliope keeps parser state on a CLI object:
#: run twice on one, the seeder's create line was refused the second time).
_CREATE = ["compute", "instances", "create", "seed-1", "--zone", "europe-west4-a", "--no-address",
           "--disk", "name=pd-1,device-name=seed,mode=rw,boot=no,auto-delete=no",
           "--metadata", "enable-guest-attributes=TRUE", "--metadata-from-file", "startup-script=/etc/hostname"]
BOTH_WAYS = [*ACCEPTED, *REJECTED, _CREATE, _CREATE, ["storage", "cat", "gs://b/lock.json"],
             ["builds", "submit", "--no-source", "--config", "/nonexistent/cloudbuild.yaml"],
             ["compute", "disks", "create", "d", "--zone", "us-central1-a", "--size", "10GB", "--format", "json"],
             ["compute", "instances", "list", "--project", "another-project", "--format", "value(name)"],
             ["compute", "instances", "list"]]


def test_the_loaded_cli_is_used_where_the_suite_runs(gcloud) -> None:
    """CI runs every gcloud line in the loaded CLI (tests/support/gcloud.py ``_Worker``); a gcloud
    it cannot load that way would silently cost the suite minutes, so CI fails on it."""
    from tests.conftest import require

    require("gcloud's CLI loaded once (tests/support/gcloud_worker.py)", gcloud.in_process,
            "a Google Cloud SDK install with lib/googlecloudsdk, as the image's /usr/lib/google-cloud-sdk")


def test_the_loaded_cli_answers_every_line_as_the_gcloud_command(tmp_path) -> None:
    """Exit status, what was sent (method, path, body) and the error line, line by line, in order:
    one Gcloud whose lines run in the loaded CLI, one whose lines are each a `gcloud` process."""
    import json
    import os

    from tests.support.gcloud import Gcloud

    loaded = Gcloud(tmp_path / "loaded")
    os.environ["TPUBUILD_GCLOUD_WORKER"] = "0"
    try:
        command = Gcloud(tmp_path / "command")
    finally:
        del os.environ["TPUBUILD_GCLOUD_WORKER"]
    try:
        assert loaded.in_process and not command.in_process
        pid = loaded._worker.proc.pid if loaded._worker else None
        for argv in BOTH_WAYS:
            a, b = loaded.parse(argv), command.parse(argv)
            sent = [[(r.method, r.path, json.dumps(r.body).replace(g.fake.url, "FAKE/")) for r in p.requests]
                    for p, g in ((a, loaded), (b, command))]
            last = [(p.stderr.strip().splitlines() or [""])[-1].replace(str(home), "HOME")
                    for p, home in ((a, tmp_path / "loaded"), (b, tmp_path / "command"))]
            assert (a.returncode, a.ok, sent[0], last[0]) == (b.returncode, b.ok, sent[1], last[1]), argv
        # one loaded CLI answered every line (`storage` ran as its own command and left it whole)
        assert loaded._worker is not None and loaded._worker.proc.pid == pid
    finally:
        loaded.close()
        command.close()
