"""The guard as the generated pipeline runs it: each rendered `<module>-guard` step script runs under
bash (Cloud Build's `$$` unescaped to `$`), with WORKSPACE holding the module's plan JSON, the
real `tpubuild` console script on PATH and `pip` stubbed (the step installs tpubuild from the
build's wheel folder, which doesn't exist here). The step must fail on a data-losing plan and pass
otherwise, and `_ALLOW_DATA_LOSS` must reach the guard."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builder.config import load
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, NODE, require

PLANS = Path(__file__).resolve().parents[1] / "data" / "plans"
BIN = Path(sys.executable).parent


def guard_script(values: Path, action: str, module: str, *, tpu: bool = False, allow_data_loss: bool = False) -> str:
    settings = load(values)
    config = render(settings, make_plan(settings, action, tpu=tpu), allow_data_loss=allow_data_loss)
    steps = {s["id"]: s for s in config["steps"]}
    step = steps[f"{module}-guard"]
    assert step["entrypoint"] == "bash" and step["args"][0] == "-c"
    # The guard runs between this module's plan and apply (the slice's apply beside it, waiting for
    # its verdict unless the plan only creates: builder.planning.plan.asks_first)
    assert f"{module}-plan" in step["waitFor"]
    apply = steps.get(f"{module}-apply")
    if apply is not None:
        assert f"{module}-guard" in apply["waitFor"] or (
            f"{module}-plan" in apply["waitFor"] and f"{module}.guard.ok" in apply["args"][1] or f"{module}.drain.ok" in apply["args"][1])
    return step["args"][1].replace("$$", "$")


def run_step(script: str, tmp_path: Path, module: str, fixture: str) -> subprocess.CompletedProcess[str]:
    require("the tpubuild console script", (BIN / "tpubuild").exists(), "pip install -e . into this interpreter's venv")
    (tmp_path / "plans").mkdir(exist_ok=True)
    shutil.copy(PLANS / f"{fixture}.json", tmp_path / "plans" / f"{module}.json")
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    (stubs / "pip").write_text("#!/bin/sh\nexit 0\n")
    (stubs / "pip").chmod(0o755)
    env = {**os.environ, "WORKSPACE": str(tmp_path), "PATH": f"{stubs}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("values, action, module, fixture, allow, code, said", [
    (NODE, "update", "filestore", "filestore_replace_tier", False, 2, "_ALLOW_DATA_LOSS=true"),
    (NODE, "update", "filestore", "filestore_replace_tier", True, 0, "DATA LOSS ALLOWED"),
    (NODE, "create", "shared_pd", "shared_pd_replace_create_before_destroy", False, 2, "google_compute_disk.this"),
    (NODE, "update", "shared_pd", "shared_pd_resize", False, 0, "1 to change"),
    (NODE, "destroy", "tpu", "tpu_node_destroy", False, 0, "google_tpu_node.this will be destroyed"),
    (NODE, "destroy", "shared_pd", "shared_pd_destroy", False, 0, "will be destroyed"),
    (EXAMPLES / "vm-v4-32.env", "update", "tpu", "tpu_vm_replace", False, 0, "interrupts training"),
    (EXAMPLES / "vm-v4-32.env", "update", "filestore", "filestore_destroy", False, 2, "google_filestore_instance.this"),
], ids=["fs-replace", "fs-replace-allowed", "pd-replace-on-create", "pd-resize", "node-tpu-destroy",
        "pd-destroy", "vm-tpu-replace", "vm-fs-delete"])
def test_rendered_guard_step(tmp_path: Path, values: Path, action: str, module: str, fixture: str,
                             allow: bool, code: int, said: str) -> None:
    script = guard_script(values, action, module, allow_data_loss=allow)
    assert script.startswith("set -euo pipefail")
    assert ("--allow-data-loss" in script) == allow
    proc = run_step(script, tmp_path, module, fixture)
    assert proc.returncode == code, proc.stderr
    assert said in (proc.stderr if code else proc.stdout)
    if code:
        assert proc.stderr.count("tpubuild: error:") == 1 and "Traceback" not in proc.stderr
