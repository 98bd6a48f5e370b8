"""A recovery that moves (TPU_RECOVERY_MOVE, docs/recovery.md "A recovery that moves"): a spot slice
preempted where its zone now grants it in no mode of the list is placed in the next zone of ``ZONE``.

The health build Terraform hands the Scheduler job is played step by step, as in
test_recovery_sandbox.py, with the sandbox's stateful gcloud (tests/support/fake_gcloud.py) talking
to fake-gcs-server, so the real ``tpubuild train --dry-run`` reads the applied snapshot (where the
slice was granted) through the real storage client. ``tpubuild dispatch`` is played: the recreate in
the granted zone fails, and its pipeline's log (what ``gcloud builds log`` gives back) is the real
output of the failover loop's ``tpu-apply`` (test_recovery_failover.py's stand-in: us-east5-a refuses
spot and on-demand with Google's stockout text); the move (``--move-to us-east5-b``) grants the slice
there, and its finalize records the granted place in the applied snapshot (the real
``builder.cloud.snapshot.write``). The move's own pipeline (slice first, disk from snapshot,
Filestore, old zone removed last) is docs/capacity.md's, proven with it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_recovery_failover import LIST, _recreate
from test_recovery_sandbox import _launched, _sandbox

from builder.catalogue.status_rows import recovery_row
from builder.config.candidates import acting
from builder.inputs import recovery
from tests.conftest import EXAMPLES, REPO, rewrite_env
from tests.support import failover_steps
from tests.support.fakes.fixtures import Fakes, fakes, unique_env  # noqa: F401 - fixture

BASE = EXAMPLES / "vm-v5litepod-16.env"
RECREATE = "rec-1"

#: tpubuild: the real CLI, but dispatch: the recreate (no --move-to) fails as its pipeline did, naming its
#: build as the real dispatch does; the move (--move-to Z) grants the slice in Z and records it as finalize does
TPUBUILD = f"""#!/usr/bin/env bash
set -u
echo "tpubuild $*" >> "$FAKE_GCLOUD_STATE/calls.log"
if [ "$1" = dispatch ]; then
  zone=$(printf '%s\\n' "$@" | sed -n '/^--move-to$/{{n;p;}}')
  if [ -z "$zone" ]; then
    echo "dispatch: update of $FAKE_ENV (project p, vm architecture)"
    if [ -n "${{FAKE_LOCK_ONLY:-}}" ]; then  # its output lost: the lock its failure marked stale names the build
      printf '{{"build_id": "{RECREATE}", "state": "stale"}}\n' > lock.json
      gcloud storage cp lock.json "$FAKE_LOCK"
      exit 1
    fi
    echo "build {RECREATE}: update of $FAKE_ENV (update tpu) from gs://b/source.tgz"
    echo "build {RECREATE}: FAILURE"
    echo "tpubuild: error: build {RECREATE} FAILURE at step tpu-apply" >&2
    exit 1
  fi
  if [ -n "${{FAKE_MOVE_FAILS:-}}" ]; then echo "tpubuild: error: build mv-1 FAILURE at step tpu-apply" >&2; exit 1; fi
  echo READY > "$FAKE_GCLOUD_STATE/tpus/$(cat "$FAKE_GCLOUD_STATE/held")"
  exec python3 -P - "$zone" <<'EOF'
import sys
from builder.cloud import clients, snapshot
from builder.config import load
s = load("values.env")
bucket = clients.storage(s.project_id).bucket(s.state_bucket)
applied = snapshot.Applied(values=open("values.env", "rb").read(), build_id="mv-1", action="update",
                           time="2026-12-06T12:00:00Z", granted={{"zone": sys.argv[1], "mode": "spot"}})
snapshot.write(bucket, s.env_name, applied, expected_generation=snapshot.generation(bucket, s.env_name))
EOF
fi
exec python3 -P -m builder "$@"
"""


def _refused_log(tmp_path: Path) -> str:
    """The recreate's pipeline log: the real failover loop of tpu-apply, us-east5-a refusing every mode."""
    from builder.config import load_text

    s = load_text(rewrite_env(BASE.read_text(), **LIST), BASE)
    done, _journal, _ws = _recreate(tmp_path / "recreate", acting(s, s.candidates[0], "update"), STANDIN_LOST="1",
                                    STANDIN_NO_SPOT="1", STANDIN_NO_ON_DEMAND="1")
    assert done["tpu-apply"].returncode == 1
    return done["tpu-apply"].stdout + done["tpu-apply"].stderr


def _box(tmp_path: Path, fakes: Fakes, log: str | None, **overrides: str):  # noqa: F811 - fixture
    box = _sandbox(tmp_path / "health", BASE, **{**LIST, "ENV_BUILD_NAME": unique_env(), **overrides})
    (box.root / "bin" / "tpubuild").write_text(TPUBUILD)
    s = box.settings
    box.bucket = fakes.storage(s.project_id).create_bucket(s.state_bucket)
    if log is not None:
        (box.state / "builds").mkdir()
        (box.state / "builds" / f"{RECREATE}.log").write_text(log)
    box.tpu("PREEMPTED")
    return box


def _run(box, build_id: str = "hb-1", **env: str) -> tuple[int, str]:
    import os

    return box.run_build(build_id, STORAGE_EMULATOR_HOST=os.environ["STORAGE_EMULATOR_HOST"],
                         FAKE_ENV=box.settings.env_name, PYTHONPATH=str(REPO), **env)


def test_a_zone_that_refuses_every_mode_moves_the_environment_to_the_next_zone(tmp_path, fakes) -> None:  # noqa: F811
    box = _box(tmp_path, fakes, _refused_log(tmp_path))
    s = box.settings
    assert [sid for sid, _i, _t in recovery.steps(s)] == ["health-check", "health-prepare", "health-refusals",
                                                          "health-move", "health-relaunch"]
    code, out = _run(box)
    assert code == 0, out
    calls = box.calls()
    recreate = calls.index("tpubuild dispatch --action update --tpu true --mig false --allow-data-loss false "
                           "--allow-wipe false")
    log = calls.index(f"gcloud builds log {RECREATE} --project={s.project_id}")
    move = calls.index("tpubuild dispatch --action update --move-to us-east5-b --tpu false --mig false "
                       "--allow-data-loss false --allow-wipe false")
    assert recreate < log < move, calls
    launched = _launched(calls)
    assert launched and all(calls.index(c) > move for c in launched)
    assert all("--zone=us-east5-b" in c and "us-east5-a" not in c for c in launched), launched  # the new zone's hosts
    assert "us-east5-a granted the slice in no mode (us-east5-a (spot): There is no more capacity in the zone" in out
    [record] = box.records()
    assert (record["outcome"], record["place"], record["moved_from"]) == ("recovered", "us-east5-b spot",
                                                                          "us-east5-a spot")
    assert record["refused"].startswith("us-east5-a (spot): There is no more capacity in the zone")
    assert ";us-east5-a (on-demand): There is no more capacity in the zone" in record["refused"]
    assert record["now_hourly_usd"] == record["hourly_usd"]  # spot in either zone: the same regional price
    assert record["down_cost_usd"] == round(record["hourly_usd"] * record["down_s"] / 3600, 2)
    assert "the environment moved from us-east5-a to us-east5-b (TPU_RECOVERY_MOVE)" in record["message"]
    assert box.mark() == {}
    row = recovery_row({**recovery.summary(box.records(), 5), "mark": None, "max_tries": 3, "interval_min": 10})
    assert "PREEMPTED -> recovered, moved us-east5-a -> us-east5-b (us-east5-a refused: us-east5-a (spot): There is " \
           "no more capacity" in row, row


def test_the_recreate_build_is_found_through_the_lock_when_the_dispatch_said_nothing(tmp_path, fakes) -> None:  # noqa: F811
    box = _box(tmp_path, fakes, _refused_log(tmp_path))
    lock = f"gs://{box.settings.state_bucket}/{recovery.objects(box.settings)['lock']}"
    code, out = _run(box, FAKE_LOCK_ONLY="1", FAKE_LOCK=lock)
    assert code == 0, out
    assert f"gcloud builds log {RECREATE} --project={box.settings.project_id}" in box.calls()
    assert [c for c in box.calls() if c.startswith("tpubuild dispatch") and "--move-to us-east5-b" in c]
    assert box.records()[-1]["moved_from"] == "us-east5-a spot"


def test_a_recreate_that_failed_for_another_reason_stays_in_its_zone(tmp_path, fakes) -> None:  # noqa: F811
    box = _box(tmp_path, fakes, "tpubuild: tpu: us-east5-a (spot) failed, not for want of capacity: Error 403; no "
                                "other candidate is tried\n")
    code, out = _run(box)
    assert code == 0, out
    assert not [c for c in box.calls() if c.startswith("tpubuild dispatch") and "--move-to" in c]
    assert not _launched(box.calls())
    assert "failed for another reason than capacity in us-east5-a; the environment stays there" in out
    [record] = box.records()
    assert record["outcome"] == "failed" and record["moved_from"] == "" and record["refused"] == ""
    assert box.mark()["tries"] == "1" and "refused_zones" not in box.mark()


def test_a_move_that_fails_is_a_failed_try_that_names_both_zones(tmp_path, fakes) -> None:  # noqa: F811
    box = _box(tmp_path, fakes, _refused_log(tmp_path))
    code, out = _run(box, FAKE_MOVE_FAILS="1")
    assert code == 0, out
    [record] = box.records()
    assert record["outcome"] == "failed" and record["refused"].startswith("us-east5-a (spot):")
    assert "the move to us-east5-b (tpubuild dispatch --action update --move-to us-east5-b) failed" in record["message"]
    assert box.mark()["refused_zones"] == "us-east5-a,us-east5-b" and box.mark()["tries"] == "1"
    row = recovery_row({**recovery.summary(box.records(), 5), "mark": box.mark(), "max_tries": 3, "interval_min": 10})
    assert "refused every mode this time: us-east5-a, us-east5-b" in row, row


@pytest.mark.parametrize("upto", range(4), ids=["check", "prepare", "refusals", "move"])
def test_a_health_build_killed_anywhere_in_a_move_converges_on_the_next_check(tmp_path, fakes, upto) -> None:  # noqa: F811
    """Kill it anywhere, run it again (docs/safety.md): the build stops after step ``upto`` (its
    workspace gone with it); the next check, a new build, ends where an uninterrupted one does: the
    slice READY, training launched after the last dispatch, the mark cleared, the last record
    recovered, and the environment moved at most once (nothing of it is dispatched twice once
    moved)."""
    import os
    import subprocess

    from tests.support.pipeline import step_env, step_script

    box = _box(tmp_path, fakes, _refused_log(tmp_path))
    steps = recovery.build_request(box.settings)["steps"]
    for step in steps[:upto + 1]:
        proc = subprocess.run(["bash", "-c", step_script(step, {"BUILD_ID": "hb-1"})], capture_output=True, text=True,
                              timeout=120, cwd=box.values.parent,
                              env={**os.environ, **step_env(step, {"BUILD_ID": "hb-1"}),
                                   "WORKSPACE": str(box.values.parent), "FAKE_GCLOUD_STATE": str(box.state),
                                   "PATH": f"{box.root / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(REPO),
                                   "FAKE_ENV": box.settings.env_name})
        assert proc.returncode == 0, proc.stdout + proc.stderr
    shutil.rmtree(box.values.parent / recovery.WORKDIR)  # the killed build's workspace is gone
    code, out = _run(box, build_id="hb-2")
    assert code == 0, out
    calls = box.calls()
    moves = [i for i, c in enumerate(calls) if c.startswith("tpubuild dispatch") and "--move-to us-east5-b" in c]
    assert len(moves) == 1, calls
    assert _launched(calls) and all(calls.index(c) > moves[0] for c in _launched(calls))
    assert (box.state / "tpus" / box.settings.tpu_name).read_text().strip() == "READY"
    assert box.mark() == {} and box.records()[-1]["outcome"] == "recovered"


def test_move_off_keeps_the_recovery_in_its_zone() -> None:
    from builder.config import load_text

    s = load_text(rewrite_env(BASE.read_text(), **LIST, TPU_RECOVERY_MOVE="false"), BASE)
    assert not s.recovery_move and recovery.next_zones(s) == []
    assert [sid for sid, _i, _t in recovery.steps(s)] == ["health-check", "health-prepare", "health-relaunch"]
    assert "(never in another zone)" in recovery.plan_text(s)
    on = load_text(rewrite_env(BASE.read_text(), **LIST), BASE)
    assert on.recovery_move and recovery.next_zones(on) == ["us-east5-b"]
    text = recovery.plan_text(on)
    assert "when no mode of us-east5-a grants it, the environment moves to us-east5-b (TPU_RECOVERY_MOVE" in text
    assert f"down ~{recovery.move_minutes(on):.0f} min" in text and "(modelled:" in text
    three = load_text(rewrite_env(BASE.read_text(), **{**LIST, "ZONE": "us-east5-a,us-east5-b,us-east5-c"}), BASE)
    placed = acting(three, three.candidates[2], "update")  # granted in us-east5-b: c first, then round to a
    assert placed.zone == "us-east5-b" and recovery.next_zones(placed) == ["us-east5-c", "us-east5-a"]


def test_the_health_build_that_moves_is_a_real_build_and_shellcheck_clean(tmp_path: Path) -> None:
    from builder.config import load_text

    files = failover_steps.checked_health_build(load_text(rewrite_env(BASE.read_text(), **LIST, ENV_TTL_HOURS="8"),
                                                          BASE), tmp_path)
    assert [f.stem for f in files] == ["health-check", "health-prepare", "health-refusals", "health-move",
                                       "health-relaunch"]
    assert "gcloud builds log" in files[2].read_text() and "--move-to" in files[3].read_text()


@pytest.mark.slow
def test_every_gcloud_line_of_a_recovery_that_moves_zones_parses_in_real_gcloud(gcloud, tmp_path, fakes) -> None:  # noqa: F811
    box = _box(tmp_path, fakes, _refused_log(tmp_path))
    assert _run(box)[0] == 0
    failover_steps.gcloud_lines_parse(gcloud, box, ("builds", "log", RECREATE))
