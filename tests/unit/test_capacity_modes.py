"""Capacity modes (TPU_PROVISIONING; docs/capacity.md): one table of what each mode means
(builder.config.offers.MODES) read by `tpubuild plan` and written into the docs; calendar mode's
window, Terraform inputs and pipeline steps (Terraform where google-beta knows the generation, the
mig-calendar gcloud step where it does not); the guard's announcement of capacity requests."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.config import calendar, load, offers
from builder.config.keys import KEYS
from builder.facts import generations
from builder.inputs import tfvars
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, REPO
from tests.support.step_sandbox import ONLY_CREATES
from tests.support.pipeline import BUILTINS, step_script

TPU7X_CAL = EXAMPLES / "mig-tpu7x-8-calendar.env"
V6E_CAL = EXAMPLES / "mig-v6e-32-calendar.env"
FLEX = EXAMPLES / "mig-v6e-16-flex.env"
#: The calendar examples' "+14d" on the tests' day (tests/conftest.py TODAY).
START = calendar.resolve_start("+14d")


def test_every_mode_is_explained_and_every_offered_mode_is_a_key_value() -> None:
    spec = next(k for k in KEYS if k.name == "TPU_PROVISIONING")
    accepted = {spec.parse(m) for m in offers.MODES}
    assert accepted == set(offers.MODES)
    offered = {m for g in generations.records() for p in g.paths for m in g.provisioning_on(p)}
    assert offered <= set(offers.MODES), offered - set(offers.MODES)
    for name, mode in offers.MODES.items():
        line = mode.line(max_run_hours=72, calendar_start="2030-01-01T00:00:00Z", calendar_days=3,
                         calendar_end="2030-01-04T00:00:00Z")
        assert line.startswith("starts ") and "; runs " in line and "; costs " in line and "; at the end " in line, name


def test_calendar_is_offered_exactly_where_the_record_has_its_facts() -> None:
    for gen in generations.records():
        offered = any("calendar" in gen.provisioning_on(p) for p in gen.paths)
        assert offered == (gen.calendar is not None), gen.name
        assert not offered or ("calendar" in gen.provisioning_on("mig") and gen.calendar.zones), gen.name


def test_docs_table_is_written_from_the_modes() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "capacity_table.py")], capture_output=True, text=True)
    assert proc.returncode == 0, "docs/capacity.md is stale: python tools/capacity_table.py --write\n" + proc.stdout


@pytest.mark.parametrize("env", [TPU7X_CAL, V6E_CAL, FLEX], ids=lambda p: p.stem)
def test_plan_explains_the_mode_with_the_values(cli, env: Path) -> None:
    s = load(env)
    code, out, err = cli("plan", "--values", env)
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("provisioning:"))
    assert f"provisioning: {s.provisioning}: starts " in line
    if s.provisioning == "calendar":
        end = offers.calendar_window(s.calendar_start, s.calendar_days)[1]
        assert s.calendar_start in line and f"until {end:%Y-%m-%dT%H:%M:%SZ}" in line and f"{s.calendar_days} days" in line
    else:
        assert f"at most {s.max_run_hours} h" in line


def test_a_running_window_is_accepted_an_ended_one_refused() -> None:
    now = datetime.datetime(2030, 3, 5, tzinfo=datetime.timezone.utc)
    v = {"calendar_start": "2030-03-02T08:00:00Z", "calendar_days": 7, "zone": "us-east5-a"}
    gen = generations.get("v6e")
    failed: list[tuple[str, str, str]] = []

    def fail(key: str, what: str, fix: str) -> None:
        failed.append((key, what, fix))

    calendar.check(v, "calendar", "TPU_PROVISIONING", gen, fail, today=now)  # started, not ended: an update
    assert failed == []
    calendar.check(v, "calendar", "TPU_PROVISIONING", gen, fail, today=now + datetime.timedelta(days=5))
    assert [f[0] for f in failed] == ["TPU_CALENDAR_START"] and "ended at 2030-03-09T08:00:00Z" in failed[0][1]


def test_calendar_terraform_inputs_follow_the_generation_record() -> None:
    v6e, tpu7x = load(V6E_CAL), load(TPU7X_CAL)
    a, b = tfvars.for_module(v6e, "mig")["calendar"], tfvars.for_module(tpu7x, "mig")["calendar"]
    assert a == {"name": "tpu-v6e-cal-cal", "start": v6e.calendar_start, "days": 7, "chips": 32,
                 "vm_family": generations.get("v6e").calendar.vm_family}
    assert b["vm_family"] == "" and b["chips"] == 4  # google-beta 8.7 has no TPU7x vm_family: mig-calendar asks
    flex = tfvars.for_module(load(FLEX), "mig")
    assert flex["calendar"] is None and "flex_request_name" not in flex  # no resize request (docs/modules.md)


def _ids(env: Path, action: str = "create") -> list[str]:
    s = load(env)
    return [st["id"] for st in render(s, make_plan(s, action))["steps"]]


def test_the_gcloud_calendar_step_runs_only_where_terraform_cannot_request() -> None:
    ids = _ids(TPU7X_CAL)
    assert ids.index("mig-apply") < ids.index("mig-calendar") < ids.index("mig-resize")
    assert "mig-calendar" not in _ids(V6E_CAL) and "mig-calendar" not in _ids(FLEX)
    assert "mig-calendar" not in _ids(TPU7X_CAL, "destroy")  # Google cannot cancel it: nothing to run


STUB = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$STUB_DIR/calls.log"
case "$*" in
  *"future-reservations list"*) printf '%s\\n' "${FOUND:-}" ;;
  *"timeWindow.startTime"*) printf '%s\\n' "${WINDOW:-}" ;;
  *"procurementStatus"*) printf '%s\\n' "${STATE:-PENDING_APPROVAL}" ;;
esac
"""


def _run(tmp_path: Path, env: Path, step_id: str, **extra: str) -> subprocess.CompletedProcess[str]:
    s = load(env)
    [step] = [st for st in render(s, make_plan(s, "create"))["steps"] if st["id"] == step_id]
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "gcloud").write_text(STUB)
    (bindir / "gcloud").chmod(0o755)
    (tmp_path / "calls.log").unlink(missing_ok=True)
    (tmp_path / "plans").mkdir(exist_ok=True)  # mig-plan's, a new slice's: mig-calendar asks at once
    (tmp_path / "plans" / "mig.json").write_text(ONLY_CREATES)
    return subprocess.run(["bash", "-c", step_script(step, BUILTINS)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "STUB_DIR": str(tmp_path),
                               "WORKSPACE": str(tmp_path), "TPUBUILD_CALENDAR_POLL_S": "0", **extra})


def _calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls.log").read_text().splitlines()


def test_calendar_step_submits_once_and_waits_for_the_decision(tmp_path: Path) -> None:
    proc = _run(tmp_path, TPU7X_CAL, "mig-calendar", STATE="APPROVED")
    assert proc.returncode == 0, proc.stderr
    [create] = [c for c in _calls(tmp_path) if "future-reservations create" in c]
    assert "--tpu-version=TPU7X" in create and "--chip-count=4" in create and "--duration=1209600" in create
    assert "--reservation-mode=CALENDAR" in create and "--reservation-name=tpu-ironwood-cal-cal" in create
    assert f"APPROVED; the slice starts at {START}" in proc.stdout
    # already requested for the same window: not again; for another window: refused (Google cannot change it)
    proc = _run(tmp_path, TPU7X_CAL, "mig-calendar", FOUND="x", WINDOW=f"{START} 1209600", STATE="FULFILLED")
    assert proc.returncode == 0 and not [c for c in _calls(tmp_path) if " create " in c]
    proc = _run(tmp_path, TPU7X_CAL, "mig-calendar", FOUND="x", WINDOW="2030-04-01T00:00:00Z 86400")
    assert proc.returncode == 1 and "cannot change or cancel a submitted request" in proc.stderr
    proc = _run(tmp_path, TPU7X_CAL, "mig-calendar", STATE="DECLINED")
    assert proc.returncode == 1 and "DECLINED" in proc.stderr
    proc = _run(tmp_path, TPU7X_CAL, "mig-calendar", TPUBUILD_CALENDAR_WAIT_S="0")
    assert proc.returncode == 0 and "still PENDING_APPROVAL" in proc.stdout


def test_resize_before_the_calendar_start_waits_for_nothing(tmp_path: Path, make_env: Callable[..., Path]) -> None:
    proc = _run(tmp_path, V6E_CAL, "mig-resize")
    assert proc.returncode == 0 and f"starts at {START}" in proc.stdout
    assert not (tmp_path / "calls.log").exists()  # no resize, no wait before the start
    now = calendar.now()  # the tests' day; the step compares with the real clock, later still
    running = make_env(V6E_CAL, TPU_CALENDAR_START=f"{now - datetime.timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}")
    proc = _run(tmp_path, running, "mig-resize")
    assert proc.returncode == 0 and any("--size=8" in c for c in _calls(tmp_path))


def test_guard_announces_a_capacity_request_going() -> None:
    from builder.planning.guard import evaluate

    def doc(rtype: str, actions: list[str]) -> dict:
        return {"format_version": "1.2", "applyable": True, "errored": False, "resource_changes": [
            {"address": f"{rtype}.slice[0]", "type": rtype, "mode": "managed", "change": {"actions": actions}}]}

    for action in ("destroy", "update"):
        decision = evaluate(doc("google_compute_future_reservation", ["delete"]), "mig", action)
        assert decision.proceed and any("CAPACITY" in w and "cannot cancel" in w for w in decision.warnings)
    decision = evaluate(doc("google_compute_resize_request", ["delete", "create"]), "mig", "update")
    assert decision.proceed and any("flex-start resize request" in w for w in decision.warnings)
    assert not evaluate(doc("google_compute_resize_request", ["create"]), "mig", "create").warnings
