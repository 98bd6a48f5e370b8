"""``tpubuild status`` shows the health check's recoveries, read through the real
google-cloud-storage client from fake-gcs-server: the records the health build writes (when, why,
down time, its cost, the outcome), the totals, and a recovery that gave up."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLES
from tests.support.fakes.fixtures import Fakes, fakes, make_repo, unique_env  # noqa: F401 - fixtures


def _record(ended: str, reason: str, outcome: str, down_s: int, cost: float, message: str) -> str:
    return json.dumps({"reason": reason, "detected_at": "2026-11-25T01:00:00Z", "ended_at": ended,
                       "down_s": down_s, "down_cost_usd": cost, "outcome": outcome, "message": message})


def test_status_shows_the_recoveries_and_a_recovery_that_gave_up(fakes: Fakes, tmp_path: Path, monkeypatch, cli):
    from builder.inputs import recovery
    from builder.config import load

    values = make_repo(tmp_path / "repo", unique_env(), base=EXAMPLES / "vm-v5litepod-16.env")
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    s = load(values)
    assert s.recovery
    bucket = fakes.storage().bucket(s.state_bucket)
    prefix = recovery.objects(s)["records"]
    bucket.blob(prefix + "20261125T012300Z-b1.json").upload_from_string(
        _record("2026-11-25T01:23:00Z", "PREEMPTED", "recovered", 1380, 1.23, "roberta relaunched on every host"))
    bucket.blob(prefix + "20261125T040000Z-b0.json").upload_from_string(  # spot v5e: no price
        json.dumps({"reason": "PREEMPTED", "ended_at": "2026-11-25T04:00:00Z", "down_s": 60, "down_cost_usd": None,
                    "outcome": "recovered", "message": "roberta relaunched on every host"}))
    bucket.blob(prefix + "20261125T050000Z-b2.json").upload_from_string(
        _record("2026-11-25T05:00:00Z", "PREEMPTED", "failed", 600, 0.5, "the recreate failed; try 1 of 3"))
    bucket.blob(prefix + "20261125T051000Z-b3.json").upload_from_string(
        _record("2026-11-25T05:10:00Z", "PREEMPTED", "gave-up", 1200, 0.9, "stopped after 3 consecutive failed tries"))
    bucket.blob(recovery.objects(s)["mark"]).upload_from_string(
        "detected_at=2026-11-25T04:50:00Z\ndetected_s=1\nreason=PREEMPTED\ntries=3\ngave_up=1\n")
    code, out, err = cli("--values", values, "status")
    lines = out.splitlines()
    [head] = [ln for ln in lines if ln.startswith("  recovery   ")]
    assert "4 recorded, 2 recovered" in head and "down 44m in all (~$2.13 + unknown)" in head, out
    i = lines.index(head)
    assert "GAVE UP after 3 failed tries" in lines[i + 1] and "tpubuild update" in lines[i + 1]
    assert lines[i + 2].strip().startswith("2026-11-25T05:10:00Z: PREEMPTED -> gave-up, down 20m (~$0.90)")
    assert lines[i + 4].strip().startswith("2026-11-25T04:00:00Z: PREEMPTED -> recovered, down 1m (cost unknown)")
    assert lines[i + 5].strip().startswith("2026-11-25T01:23:00Z: PREEMPTED -> recovered, down 23m (~$1.23)")


def test_status_of_an_environment_without_recovery_has_no_recovery_row(fakes: Fakes, tmp_path: Path, monkeypatch,
                                                                       cli):
    values = make_repo(tmp_path / "repo", unique_env(), base=EXAMPLES / "vm-v4-32.env")
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    code, out, err = cli("--values", values, "status")
    assert "recovery" not in out, out


def test_submit_keeps_the_source_the_health_build_runs_from(fakes: Fakes, tmp_path: Path, monkeypatch, cli):
    """TPU_RECOVERY without a TTL: submit still keeps the tarball where the health build's
    source points (the health build installs tpubuild and the values from it)."""
    from builder.inputs import recovery
    from builder.config import load

    values = make_repo(tmp_path / "repo", unique_env(), base=EXAMPLES / "vm-v5litepod-16.env")
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    s = load(values)
    assert s.recovery and not s.env_ttl_hours
    code, _, err = cli("--values", values, "submit", "--action", "create")
    assert code == 0, err
    [create] = fakes.google.created
    src = recovery.build_request(s)["source"]["storageSource"]
    bucket = fakes.storage().bucket(src["bucket"])
    assert bucket.blob(src["object"]).download_as_bytes() == \
        bucket.blob(create["source"]["storageSource"]["object"]).download_as_bytes()


def test_submit_keeps_each_shipped_health_script_where_the_health_build_copies_it_from(fakes: Fakes, tmp_path: Path,
                                                                                      monkeypatch, cli):
    """mig's health-check ships as a file (over an argument's budget): submit keeps it at its
    content-addressed object, which the Scheduler job's body copies before it runs it, so a job
    applied earlier still finds its own script after a later submit (builder/inputs/build_limits.py)."""
    from builder.config import load
    from builder.inputs import build_limits, recovery

    values = make_repo(tmp_path / "repo", unique_env(), base=EXAMPLES / "mig-v6e-16-spot.env")
    monkeypatch.chdir(values.parent)
    s = load(values)
    assert s.recovery
    assert cli("--values", values, "initialize")[0] == 0
    code, _, err = cli("--values", values, "submit", "--action", "create")
    assert code == 0, err
    [check] = [st for st in recovery.build_request(s)["steps"] if st["id"] == "health-check"]
    path = build_limits.shipped_path(check["args"][1])
    assert path is not None and f"gcloud storage cp gs://{s.state_bucket}/{build_limits.object_name(path)} {path}" \
        in check["args"][1]
    blob = fakes.storage().bucket(s.state_bucket).blob(build_limits.object_name(path))
    assert blob.download_as_bytes().decode() == build_limits.shipped(path)
