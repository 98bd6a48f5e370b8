"""The gcloud lines of a move to another zone (docs/capacity.md, "Moving an environment to another
zone"), parsed by the REAL gcloud offline (tests/support/gcloud.py), as tests/integration/
test_gcloud_lines.py parses every other step's: the copy steps run under real bash with a recording
``gcloud`` that answers as the old zone and the new one would, so every create line runs."""

from __future__ import annotations

import os
import subprocess

import pytest

pytestmark = pytest.mark.slow


def _parse_all(gcloud, argvs: list[tuple[str, ...]]) -> None:
    failures = [r.why() for r in (gcloud.parse(list(a)) for a in dict.fromkeys(argvs)) if not r.ok]
    assert not failures, "\n\n".join(failures)


#: gcloud as a move meets it (docs/capacity.md, "Moving an environment to another zone"): the old
#: zone has the disk and the share, the new zone (MOVE_TO) nothing yet, so every create line runs.
MOVE_GCLOUD = """#!/usr/bin/env bash
n=$(ls "$RECORD_DIR" | wc -l)
printf '%s\\0' "$@" > "$RECORD_DIR/call-$n"
case " $* " in *"$MOVE_TO"*) ;; *) echo stub-name ;; esac
exit 0
"""


def test_move_copy_lines_parse(gcloud, tmp_path):
    """The move's copies in the old zone: the dataset disk's snapshot, the share's backup, the last
    backup before the old share's release (and the lookups in the new zone that skip them once its
    copies exist)."""
    from builder.planning.plan import make_plan
    from builder.render.pipeline import render
    from tests.support.pipeline import moving_settings, step_env, step_script

    moving = moving_settings()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "gcloud").write_text(MOVE_GCLOUD)
    (bindir / "gcloud").chmod(0o755)
    argvs: list[tuple[str, ...]] = []
    for step in render(moving, make_plan(moving, "update"))["steps"]:
        if step["id"] not in ("shared_pd-snapshot", "filestore-backup", "filestore-final-backup"):
            continue
        rec, ws = tmp_path / step["id"], tmp_path / f"{step['id']}-ws"
        rec.mkdir()
        ws.mkdir()
        env = {**os.environ, **step_env(step), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
               "RECORD_DIR": str(rec), "MOVE_TO": moving.zone, "WORKSPACE": str(ws), "HOME": str(tmp_path)}
        proc = subprocess.run(["bash", "-c", step_script(step)], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        argvs += [tuple(c.read_bytes().decode().split("\0")[:-1]) for c in sorted(rec.iterdir())]
    made = {a[:3] for a in argvs if a[2] == "create"}
    assert made == {("compute", "snapshots", "create"), ("filestore", "backups", "create")}, argvs
    _parse_all(gcloud, argvs)
