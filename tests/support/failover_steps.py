"""What the failover sandboxes share (tests/shell/test_failover.py on vm, test_failover_mig.py on
mig): the terraform stand-in's frame (a Python script keeping one state per root, the folder it
runs in, as (address, zone) pairs, and a journal), and the sandbox that runs a create's rendered
steps with every candidate's variables in the workspace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builder.inputs.tfvars import all_for, by_candidate
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import REPO
from tests.support import swap_steps
from tests.support.pipeline import step_script

FIXTURES = REPO / "tests" / "data" / "capacity_errors"

#: the stand-in's head: its state, journal, options; ``init`` does nothing
HEAD = r"""#!/usr/bin/env python3
import json, os, sys
from pathlib import Path

j = Path(os.environ["JOURNAL_DIR"])
root = Path.cwd().name
state = j / f"state-{root}.json"
held = json.loads(state.read_text()) if state.exists() else []
argv = sys.argv[1:]
def log(line):
    with open(j / "journal", "a") as f:
        f.write(line + "\n")
def save():
    state.write_text(json.dumps(held))
def opt(name):
    return next((a.split("=", 1)[1] for a in argv if a.startswith(name + "=")), "")
log(f"terraform {root} " + " ".join(argv))
cmd = argv[0]
if cmd == "init":
    sys.exit(0)
"""

#: ``show`` (a plan that creates), ``state list`` and a targeted ``apply -destroy``
COMMON = r"""if cmd == "show":
    print(json.dumps({"resource_changes": [{"change": {"actions": ["create"]}}]}))
    sys.exit(0)
if cmd == "state":
    print("\n".join(a for a, _z in held))
    sys.exit(0)
if cmd == "apply" and "-destroy" in argv:
    target = opt("-target")
    held[:] = [(a, z) for a, z in held if a != target]
    save()
    log(f"destroyed {target}")
    sys.exit(0)
"""


def terraform(*parts: str) -> str:
    """The terraform stand-in: :data:`HEAD`, :data:`COMMON` and the test's own commands."""
    return HEAD + COMMON + "".join(parts)


def sandbox(tmp_path: Path, settings: Any, module: str, tfdir: str, terraform_text: str, gcloud: str,
            ) -> tuple[dict[str, tuple[str, str]], dict[str, str], dict[str, Any]]:
    """A create of ``settings`` rendered (step id → (entrypoint, script)), the sandbox's environment
    with every module's and every candidate's variables in the workspace, and the rendered Build."""
    config = render(settings, make_plan(settings, "create"))
    steps = {st["id"]: (st["entrypoint"], step_script(st)) for st in config["steps"]}
    env = swap_steps.sandbox(tmp_path, module, tfdir, terraform_text, gcloud)
    ws = Path(env["WORKSPACE"])
    for sub in ("filestore", "shared_pd"):
        (ws / "modules" / sub).mkdir(parents=True)
    for name, values in {**all_for(settings), **by_candidate(settings)}.items():
        path = ws / "tfvars" / f"{name}.tfvars.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env["FIXTURES"] = str(FIXTURES)
    return steps, env, config


def checked_health_build(settings: Any, tmp_path: Path) -> list[Path]:
    """The health build of ``settings`` loaded into the real Build type, its step scripts written
    out and shellcheck-clean; the scripts, in step order."""
    import shutil
    import subprocess

    from builder.inputs import recovery
    from tests.conftest import require

    from google.cloud.devtools.cloudbuild_v1.types import Build as build
    require("shellcheck", shutil.which("shellcheck") is not None, "apt-get install shellcheck")
    body = recovery.build_request(settings)
    build.from_json(json.dumps(body), ignore_unknown_fields=False)
    files = []
    for step in body["steps"]:
        f = tmp_path / f"{step['id']}.sh"
        f.write_text(step_script(step, {"BUILD_ID": "b"}))
        files.append(f)
    proc = subprocess.run(["shellcheck", "-s", "bash", "-f", "gcc", *map(str, files)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return files


def gcloud_lines_parse(gcloud: Any, box: Any, *prefixes: tuple[str, ...]) -> None:
    """Every gcloud line the recovery sandbox ``box`` ran parses in the real gcloud, and a line starts
    with each of ``prefixes``."""
    argvs = [tuple(json.loads(line)) for line in (box.state / "argv.jsonl").read_text().splitlines()]
    for prefix in prefixes:
        assert any(a[:len(prefix)] == prefix for a in argvs), (prefix, argvs)
    failures = [r.why() for r in (gcloud.parse(list(a)) for a in dict.fromkeys(argvs)) if not r.ok]
    assert not failures, "\n\n".join(failures)


def stops_at_the_first(steps: dict[str, tuple[str, str]], env: dict[str, str], order: tuple[str, ...], module: str,
                       zone: str, error: str) -> list[str]:
    """A permission error at the first candidate (``zone``, spot): the build stops at ``<module>-apply``
    with one line naming the candidate and ``error``, and the second candidate is never planned.
    The journal."""
    done, journal = swap_steps.run_in_workspace(steps, order, env, STANDIN_DENIED=zone)
    assert list(done) == [f"{module}-plan", f"{module}-apply"] and done[f"{module}-apply"].returncode == 1
    lines = [line for line in done[f"{module}-apply"].stderr.splitlines() if line.startswith("tpubuild:")]
    assert len(lines) == 1, lines
    assert f"{zone} (spot) failed, not for want of capacity" in lines[0]
    assert error in lines[0] and "no other candidate is tried" in lines[0]
    assert not any("candidates/1/" in line for line in journal)  # the second candidate was never planned
    return journal
