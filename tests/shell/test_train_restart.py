"""models/roberta/train.sh restarts a run that dies on its host (not a preemption, not `tpubuild
stop`) from checkpoint_last.pt, a bounded number of times, the log saying why: real bash, a fake
training Python that fails as told (its argv recorded, so each restart resumes with the same
--restore-file)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "models" / "roberta" / "train.sh"

#: fails with the statuses in $FAIL_WITH (one per run, space-separated), then succeeds
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = -c ]; then exit 1; fi  # the torch_xla probe: no torch_xla here
n=0
if [ -f "$STATE/runs" ]; then read -r n < "$STATE/runs"; fi
n=$((n + 1))
echo "$n" > "$STATE/runs"
printf '%s\\n' "$*" >> "$STATE/argv"
read -r -a fail <<< "${FAIL_WITH:-}"
status=${fail[$((n - 1))]:-0}
echo "fake fairseq-train run $n exits $status"
exit "$status"
"""


def _train(tmp_path: Path, fail_with: str, restarts: str = "3") -> tuple[int, str, list[str]]:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    py = tmp_path / "python"
    py.write_text(FAKE_PYTHON)
    py.chmod(0o755)
    logs = tmp_path / "logs"
    done = subprocess.run(
        ["bash", str(TRAIN), "--log-dir", str(logs), "--arch", "local", "--", "data-bin", "--restore-file",
         "checkpoint_last.pt"], capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHON": str(py), "STATE": str(state), "FAIL_WITH": fail_with,
             "TPUBUILD_TRAIN_RESTARTS": restarts, "TPUBUILD_TRAIN_RESTART_WAIT_S": "0", "TPUBUILD_HOST_ID": "0"})
    log = (logs / "host-0.log").read_text()
    return done.returncode, log, (state / "argv").read_text().splitlines()


def test_a_run_that_dies_is_restarted_from_the_checkpoint_saying_why(tmp_path: Path) -> None:
    code, log, argv = _train(tmp_path, "1 134")
    assert code == 0, log
    assert len(argv) == 3 and len(set(argv)) == 1 and "--restore-file checkpoint_last.pt" in argv[0]
    assert "exited with status 1 (not a preemption); restart 1 of 3 from checkpoint_last.pt" in log
    assert "exited with status 134 (not a preemption); restart 2 of 3 from checkpoint_last.pt" in log


def test_restarts_are_bounded_and_the_log_says_it_gave_up(tmp_path: Path) -> None:
    code, log, argv = _train(tmp_path, "1 1 1", restarts="2")
    assert code == 1 and len(argv) == 3, log
    assert "gave up after 2 restarts" in log


@pytest.mark.parametrize("status", ["130", "143"])
def test_a_stopped_run_is_not_restarted(tmp_path: Path, status: str) -> None:
    code, log, argv = _train(tmp_path, status)
    assert code == int(status) and len(argv) == 1 and "was stopped" in log and "restart 1" not in log


def test_a_bad_restart_count_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(TRAIN), "--log-dir", str(tmp_path / "l"), "--arch", "local", "--", "x"],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHON": "false", "TPUBUILD_TRAIN_RESTARTS": "many",
                               "TPUBUILD_HOST_ID": "0"})
    assert done.returncode == 1
    assert "TPUBUILD_TRAIN_RESTARTS must be a whole number, not 'many'" in (tmp_path / "l" / "host-0.log").read_text()
