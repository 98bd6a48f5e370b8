"""`tpubuild plan` output (text and JSON), bold warnings, and the import budget of plan/render/validate."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, NODE, REPO, SHIPPED, tpubuild_cmd
from tests.support.pipeline import NODE_ENV, VM_ENV


def plan_json(cli, *args: str) -> dict:
    code, out, err = cli("plan", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_plan_text_node_create(cli):
    """A TPU Node can no longer be created: plan shows the refusal (one line, exit 2), not a plan;
    the same file's destroy still plans (people must be able to clean up)."""
    code, out, err = cli("plan", "--values", NODE_ENV)
    assert code == 2 and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith(f"tpubuild: error: {NODE_ENV}:18: TPU_ARCH:")
    assert "2025-04-25" in line and "tpubuild migrate" in line
    code, out, _ = cli("plan", "--values", NODE_ENV, "--action", "destroy")
    assert code == 0 and "architecture: node" in out
    assert "Destroyed: mig, tpu, filestore, shared_pd" in out


def test_plan_text_shipped_create(cli):
    code, out, _ = cli("plan", "--values", SHIPPED)
    assert code == 0
    assert "tpubuild plan: create tpu-dev1 in my-tpu-project/europe-west4-a" in out
    assert "architecture: vm" in out
    assert "accelerator:  v3-32 (v3, 16 chips), runtime tpu-ubuntu2204-base" in out
    assert "provisioning: on-demand" in out
    assert "hosts:        4" in out
    lines = out.splitlines()
    s1 = lines.index("  stage 1, in parallel:")
    # the slice first: the TPU VM is asked for beside the share and the disk (docs/pipeline.md)
    assert [ln.split()[1] for ln in lines[s1 + 1:s1 + 5]] == ["filestore", "shared_pd", "tpu", "dashboard"]
    assert "  stage 2:" not in lines
    assert "Created: filestore, shared_pd, tpu, dashboard" in out
    assert "copied onto pd-tpu-dev1" in out          # the seed is announced
    assert "a guard checks every Terraform plan" in out


def test_plan_text_vm_update_tpu(cli):
    code, out, _ = cli("plan", "--values", VM_ENV, "--action", "update", "--tpu")
    assert code == 0
    assert "architecture: vm" in out and "hosts:        4" in out
    assert "Created or changed: tpu" in out
    assert "Untouched: filestore, shared_pd" in out
    # make-before-break with a MODEL: the build moves the training (stopped at a checkpoint, resumed)
    assert "tpu-checkpoint waits" in out and "tpu-resume starts" in out


def test_plan_text_destroy_names_snapshot_and_backup(cli):
    code, out, _ = cli("plan", "--values", NODE_ENV, "--action", "destroy")
    assert code == 0
    assert "Destroyed: mig, tpu, filestore, shared_pd" in out
    assert "a snapshot of pd-tpu-dev1 is taken before it is destroyed" in out
    assert "a backup of nfs-tpu-dev1:/tpushare is taken" in out
    assert "**WARNING" not in out
    assert "the buckets are kept" in out


def test_plan_warns_in_bold_when_the_share_has_no_backups(cli, make_env):
    env = make_env(SHARED_FS_TIER="HIGH_SCALE_SSD", SHARED_FS_CAPACITY="10240")
    code, out, _ = cli("plan", "--values", env, "--action", "destroy")
    assert code == 0
    warning = next(line for line in out.splitlines() if "WARNING" in line)
    assert warning.startswith("**WARNING: filestore tier HIGH_SCALE_SSD has no backups")
    assert warning.endswith("**") and "share /tpushare" in warning and "for good" in warning
    assert "a snapshot of pd-tpu-dev1 is taken" in out
    data = plan_json(cli, "--values", str(env), "--action", "destroy")
    assert any("has no backups" in w for w in data["warnings"])
    # no warning when the share is not destroyed
    code, out, _ = cli("plan", "--values", env, "--action", "destroy", "--tpu")
    assert "WARNING" not in out


def test_plan_bold_is_ansi_on_a_terminal(make_env):
    env = make_env(SHARED_FS_TIER="HIGH_SCALE_SSD", SHARED_FS_CAPACITY="10240")
    master, slave = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.Popen([*tpubuild_cmd(), "plan", "--values", str(env), "--action", "destroy"],
                            stdout=slave, stderr=subprocess.PIPE, cwd=REPO, env=environ)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    out = b"".join(chunks).decode()
    assert "\x1b[1mWARNING: filestore tier HIGH_SCALE_SSD has no backups" in out
    assert "**WARNING" not in out


def test_plan_json_shape(cli):
    data = plan_json(cli, "--values", str(VM_ENV))
    for key in ("action", "arch", "accelerator_type", "hosts", "operations"):
        assert key in data
    assert (data["action"], data["arch"], data["accelerator_type"], data["hosts"]) == ("create", "vm", "v4-32", 4)
    assert [{k: o[k] for k in ("module", "op", "after")} for o in data["operations"]] == [
        {"module": "filestore", "op": "apply", "after": []},
        {"module": "shared_pd", "op": "apply", "after": []},
        {"module": "tpu", "op": "apply", "after": []},
        {"module": "dashboard", "op": "apply", "after": []},
    ]
    assert data["stages"] == [["filestore", "shared_pd", "tpu", "dashboard"]]  # the slice first
    assert data["created"] == ["filestore", "shared_pd", "tpu", "dashboard"] and data["destroyed"] == []


def test_plan_initialize(cli):
    data = plan_json(cli, "--values", str(NODE_ENV), "--action", "initialize")
    assert data["operations"] == [] and data["action"] == "initialize"
    assert any("runs no pipeline" in n for n in data["notes"])
    code, out, _ = cli("plan", "--values", NODE_ENV, "--action", "initialize")
    assert code == 0 and "initialize runs no pipeline" in out and "stage" not in out


def test_plan_allow_data_loss_is_shown(cli):
    data = plan_json(cli, "--values", str(VM_ENV), "--action", "update", "--allow-data-loss")
    assert data["allow_data_loss"] is True
    assert any("data loss is allowed" in w for w in data["warnings"])
    code, out, _ = cli("plan", "--values", VM_ENV, "--action", "update", "--allow-data-loss")
    assert "**WARNING: data loss is allowed" in out


def test_plan_restore_notes(cli, make_env):
    data = plan_json(cli, "--values", str(make_env(SHARED_PD_RESTORE="latest")))
    assert any("newest snapshot labelled tpubuild-env=tpu-dev1" in n for n in data["notes"])
    data = plan_json(cli, "--values", str(make_env(SHARED_PD_RESTORE="snap-1")))
    assert any("restored from snapshot snap-1" in n for n in data["notes"])


# ---- import budget: plan/render/validate never load the Google clients ----
# nor what only a rarer path needs (benchmarks/cli_startup.py): difflib (a typo's "did you mean"),
# PyYAML (yamlout's fallback), the package metadata; and without jinja2, not even shutil (argparse's
# help formatter wants it for the terminal width; only help and usage text need that)

HEAVY = ("difflib", "yaml", "importlib.metadata", "pkg_resources", "shutil")

PROBE = f"""
import sys
HEAVY = {HEAVY!r}
from builder.cli import main
rc = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m == "google" or m.startswith("google."))
print("GOOGLE=" + ",".join(loaded), file=sys.stderr)
print("JINJA=" + str("jinja2" in sys.modules), file=sys.stderr)
print("HEAVY=" + ",".join(m for m in HEAVY if m in sys.modules), file=sys.stderr)
raise SystemExit(rc)
"""


@pytest.mark.parametrize("args,jinja", [
    (["render", "--action", "create"], True),
    (["render", "--action", "destroy", "--format", "json"], True),
    (["plan", "--action", "create"], False),
    (["plan", "--action", "update", "--format", "json"], False),
    (["validate"], False),
])
@pytest.mark.parametrize("env", [NODE_ENV, VM_ENV], ids=["node", "vm"])
def test_no_google_imports(args, jinja, env):
    proc = subprocess.run([sys.executable, "-c", PROBE, *args[:1], "--values", str(env), *args[1:]],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    # node is legacy: create/update are refused, and validate says so in advance
    refused = env == NODE_ENV and (args[0] == "validate" or args[2] in ("create", "update"))
    assert proc.returncode == (2 if refused else 0), proc.stderr
    assert "GOOGLE=\n" in proc.stderr, proc.stderr
    assert f"JINJA={jinja and not refused}" in proc.stderr
    # jinja2's bytecode cache imports tempfile, and so shutil
    heavy = [m for m in HEAVY if not (m == "shutil" and jinja and not refused)]
    loaded = next(line for line in proc.stderr.splitlines() if line.startswith("HEAVY="))[6:]
    assert not set(loaded.split(",")) & set(heavy), loaded


@pytest.mark.parametrize("values", [SHIPPED, NODE, *sorted(EXAMPLES.glob("*.env"))], ids=lambda p: p.name)
def test_every_operation_line_describes_its_own_module(cli, values: Path) -> None:
    """Each `apply <module>` line names what that module is (a fall-through once described the
    dashboard as the node MIG)."""
    code, out, err = cli("plan", "--values", values, "--action", "destroy")
    assert code == 0, err
    kinds = {"filestore": "Filestore", "shared_pd": "disk", "dashboard": "dashboard", "tpu": "TPU", "mig": "MIG"}
    rows = [ln.split(None, 2) for ln in out.splitlines() if ln.strip().startswith("destroy ")]
    assert rows, out
    for _, module, what in rows:
        want = "slice access" if (module == "tpu" and "mig (" in out) else kinds[module]
        assert want in what, (module, what)
