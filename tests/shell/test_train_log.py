"""The training log reaches Cloud Logging for the dashboard's step-rate tile: lib.sh's
send_train_steps (real bash, logger stubbed to record what syslog would get), startup.sh's rsyslog
rule and Ops Agent config (real bash in the startup sandbox), and builder/inputs/dashboard.py's
step_log_filter evaluated against the entry shapes the Ops Agent can produce from that line."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from test_startup import vm_box
from test_startup_sandbox import STARTUP

from builder.config import model_registry
from builder.inputs import dashboard

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "models" / "roberta" / "lib.sh"
FAIRSEQ = [
    "2026-11-23 10:00:01 | INFO | fairseq_cli.train | begin training epoch 1",
    "2026-11-23 10:00:09 | INFO | train_inner | epoch 001:     10 / 50 loss=15.2, ppl=37612.5, wps=812",
    "2026-11-23 10:00:17 | INFO | train_inner | epoch 001:     20 / 50 loss=14.1, ppl=17550.9, wps=830",
    "2026-11-23 10:00:30 | INFO | train | epoch 001 | loss 13.9",
]


def sent_lines(tmp_path: Path, env: str, *, with_logger: bool = True) -> list[str]:
    bin_ = tmp_path / "bin"
    bin_.mkdir(parents=True)
    record = tmp_path / "syslog"
    if with_logger:
        (bin_ / "logger").write_text('#!/bin/bash\nprintf "%s\\n" "$*" >>"$RECORD"\n')
        (bin_ / "logger").chmod(0o755)
    script = f'set -euo pipefail; source "{LIB}"; send_train_steps "$1"'
    done = subprocess.run(["bash", "-c", script, "bash", env], input="\n".join(FAIRSEQ) + "\n", text=True,
                          capture_output=True, env={"PATH": f"{bin_}:/usr/bin:/bin", "RECORD": str(record)},
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return record.read_text().splitlines() if record.exists() else []


def test_only_train_inner_lines_go_to_syslog_tagged_and_labelled(tmp_path):
    sent = sent_lines(tmp_path, "env1")
    assert sent == [f"-t {dashboard.TRAIN_LOG} -- [tpubuild_env=env1] {x}" for x in FAIRSEQ[1:3]]


def test_a_host_without_logger_trains_all_the_same(tmp_path):
    assert sent_lines(tmp_path, "env1", with_logger=False) == []


def test_startup_writes_rsyslog_rule_and_ops_agent_receiver_and_installs_the_agent_once(tmp_path, md):
    box = vm_box(tmp_path, md)
    first = box.run(STARTUP)
    assert first.returncode == 0, box.console()
    rule = (box.root / "etc/rsyslog.d/30-tpubuild-train.conf").read_text().splitlines()
    assert ':programname, isequal, "tpubuild-train" /var/log/tpubuild-train.log' in rule and "& stop" in rule
    agent = yaml.safe_load((box.root / "etc/google-cloud-ops-agent/config.yaml").read_text())
    receiver = agent["logging"]["receivers"][dashboard.TRAIN_LOG]  # the receiver id is the log name
    assert receiver == {"type": "files", "include_paths": ["/var/log/tpubuild-train.log"]}
    assert agent["logging"]["service"]["pipelines"][dashboard.TRAIN_LOG]["receivers"] == [dashboard.TRAIN_LOG]
    assert "metrics" not in agent  # the built-in host metrics (agent.googleapis.com) stay
    calls = box.calls()
    assert "add-google-cloud-ops-agent-repo.sh --also-install" in calls
    assert "systemctl restart rsyslog google-cloud-ops-agent" in calls
    (box.state / "calls.log").unlink()
    box.reboot()
    assert box.run(STARTUP).returncode == 0, box.console()
    assert not any(c.startswith("add-google-cloud-ops-agent-repo.sh") for c in box.calls())


def test_no_ops_agent_is_a_warning_not_a_failed_host(tmp_path, md):
    box = vm_box(tmp_path, md)
    (box.state / "ops_agent_fail").touch()
    done = box.run(STARTUP)
    assert done.returncode == 0, box.console()
    assert (box.run_dir / "ready").exists()
    assert "WARNING: the Ops Agent could not be installed" in box.console()


# --- the metric's filter against the entries the agent makes from a sent line ----------------

def _matches(filter_: str, entry: dict) -> bool:
    """Evaluates the subset of the Logging query language that step_log_filter emits:
    field="v" (equality), field:"v" (substring, case-insensitive), AND, OR, parentheses."""
    tokens = re.findall(r'\(|\)|AND|OR|[A-Za-z.]+[=:]"[^"]*"', filter_)
    assert "".join(tokens).replace(" ", "") == filter_.replace(" ", ""), "unsupported syntax"

    def value(path: str) -> str | None:
        cur: object = entry
        for part in path.split("."):
            if not isinstance(cur, dict) or part not in cur:
                return None
            cur = cur[part]
        return cur if isinstance(cur, str) else None

    pos = 0

    def expr() -> bool:
        nonlocal pos
        result = term()
        while pos < len(tokens) and tokens[pos] in ("AND", "OR"):
            op = tokens[pos]
            pos += 1
            rhs = term()
            result = (result and rhs) if op == "AND" else (result or rhs)
        return result

    def term() -> bool:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            r = expr()
            assert tokens[pos] == ")"
            pos += 1
            return r
        m = re.fullmatch(r'([A-Za-z.]+)([=:])"([^"]*)"', tok)
        assert m
        got = value(m[1])
        if got is None:
            return False
        return got == m[3] if m[2] == "=" else m[3].lower() in got.lower()

    # no precedence mixing in what we emit: top-level ANDs of terms or parenthesised ORs
    result = expr()
    assert pos == len(tokens)
    return result


def _entries(project: str, sent: str) -> list[dict]:
    """What the Ops Agent can make of the rsyslog line (traditional format) for this message."""
    message = sent.split(" -- ", 1)[1]
    line = f"Nov 23 10:00:09 t1v-n-1234-w-0 tpubuild-train: {message}"
    log_name = f"projects/{project}/logs/{dashboard.TRAIN_LOG}"
    resource = {"type": "gce_instance", "labels": {"instance_id": "1", "zone": "europe-west4-a"}}
    return [{"logName": log_name, "resource": resource, "textPayload": line},
            {"logName": log_name, "resource": resource, "jsonPayload": {"message": line}}]


@pytest.mark.parametrize("shape", [0, 1], ids=["textPayload", "jsonPayload.message"])
def test_step_filter_counts_exactly_this_environments_train_inner_lines(tmp_path, shape):
    word = model_registry.declared(None, "roberta", "STEP_WORD")  # models/roberta/keys.py: fairseq's
    filter_ = dashboard.step_log_filter("proj", "env1", word)
    mine = sent_lines(tmp_path / "a", "env1")
    other = sent_lines(tmp_path / "b", "env10")  # a prefix of another env's name must not match
    assert len(mine) == 2
    assert all(_matches(filter_, _entries("proj", s)[shape]) for s in mine)
    assert not any(_matches(filter_, _entries("proj", s)[shape]) for s in other)
    assert not _matches(filter_, _entries("other-proj", mine[0])[shape])
    # a syslog line of the same environment that is not a progress line is not counted
    not_progress = dict(_entries("proj", mine[0])[shape])
    key = "textPayload" if shape == 0 else "jsonPayload"
    not_progress[key] = ("Nov 23 tpubuild-train: [tpubuild_env=env1] | train | done" if shape == 0
                         else {"message": "Nov 23 tpubuild-train: [tpubuild_env=env1] | train | done"})
    assert not _matches(filter_, not_progress)
