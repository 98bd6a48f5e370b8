"""The sandbox of tests/shell/test_step_scripts.py: a temporary folder laid out like a build's
/workspace, with stub ``terraform``/``gcloud``/``docker``/``pip``/``tpubuild`` executables that log
every call (``calls.log``), answer ``STUB_OUTPUT`` (else ``stub-<name>-output``) and fail the call
``STUB_FAIL`` names (``<name>:<n>``); and :class:`Script`, one rendered step's script."""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

STUBS = ("terraform", "gcloud", "docker", "pip", "tpubuild")

STUB = """#!/usr/bin/env bash
set -u
name="${0##*/}"
dir="${STUB_DIR:?}"
n=0
if [ -f "$dir/$name.count" ]; then read -r n < "$dir/$name.count"; fi
n=$((n + 1))
echo "$n" > "$dir/$name.count"
printf '%s:%s %s\\n' "$name" "$n" "$*" >> "$dir/calls.log"
if [ "${STUB_FAIL:-}" = "$name:$n" ]; then
  echo "stub $name: failing call $n" >&2
  exit 7
fi
if [ -n "${STUB_OUTPUT+set}" ]; then printf '%s' "$STUB_OUTPUT"; else echo "stub-$name-output"; fi
"""

SEEDER = """set -euo pipefail
env | grep -E '^(PROJECT_ID|ZONE|ENV_BUILD_NAME|DISK_NAME|GCS_DATASET|WORKSPACE_GCS|SEED_PREP_SCRIPT|ALLOW_WIPE|SEED_TIMEOUT_S|SEED_NETWORK|SEED_SUBNET|SEED_SERVICE_ACCOUNT)=' | sort > "$STUB_DIR/seeder.env"
gcloud compute instances create seeder-vm
gcloud compute instances delete seeder-vm
"""


#: ``terraform show -json`` of a plan that only creates (what <module>-plan leaves for a new slice)
ONLY_CREATES = ('{"format_version":"1.2","applyable":true,"errored":false,"resource_changes":[{"address":"a.b",'
                '"type":"google_tpu_v2_vm","change":{"actions":["create"]}}],"output_changes":{}}\n')


@dataclass(frozen=True)
class Script:
    step_id: str
    shell: str
    text: str
    env: tuple[tuple[str, str], ...]
    arch: str

    @property
    def id(self) -> str:
        return f"{self.step_id}-{self.arch}-{hashlib.sha1(self.text.encode()).hexdigest()[:6]}"


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.ws = root / "workspace"
        self.bin.mkdir()
        for name in STUBS:
            path = self.bin / name
            path.write_text(STUB)
            path.chmod(0o755)
        (self.ws / "tfvars").mkdir(parents=True)
        (self.ws / "plans").mkdir()
        for module in {"tpu", "filestore", "shared_pd", "mig", "dashboard"}:
            (self.ws / "tfvars" / f"{module}.tfvars.json").write_text("{}\n")
            for i in (0, 1):  # a failover's variables per candidate (builder.inputs.tfvars.by_candidate)
                (self.ws / "tfvars" / "candidates" / str(i)).mkdir(parents=True, exist_ok=True)
                (self.ws / "tfvars" / "candidates" / str(i) / f"{module}.tfvars.json").write_text("{}\n")
            (self.ws / "plans" / f"{module}.tfplan").write_text("saved plan\n")
            # its JSON: a plan that only creates (the slice's apply runs it before the guard's verdict)
            (self.ws / "plans" / f"{module}.json").write_text(ONLY_CREATES)
        for d in ("modules/tpu_node", "modules/tpu_vm", "modules/filestore", "modules/shared_pd", "modules/mig",
                  "modules/tpu_mig", "modules/tpu_mig_access", "modules/dashboard",
                  "env_setup/seeder"):
            (self.ws / d).mkdir(parents=True, exist_ok=True)
        (self.ws / "plans" / "shared_pd.snapshot").write_text("snap-from-restore\n")
        # what tpu-apply leaves tpu-swap (make-before-break): one slice, nothing to swap
        (self.ws / "plans" / "tpu.slices.json").write_text('{"a": {"name": "tpu-x"}}\n')
        (self.ws / "plans" / "tpu.name").write_text("tpu-x")
        # filestore-apply leaves the NFS export for filestore-publish
        (self.ws / "plans" / "filestore.export").write_text("nfs_ip=10.20.0.2\nnfs_share=tpushare\n")
        (self.ws / "env_setup" / "seeder" / "run_seeder.sh").write_text(SEEDER)
        # what tpu-swap and tpu-prepare leave tpu-checkpoint and tpu-resume (make-before-break with a
        # MODEL): an old slice where the model trains (each probe sees a newer checkpoint), and
        # the scripts `tpubuild stop --probe/stop/train --dry-run` print, each one gcloud call
        (self.ws / "plans" / "tpu.old").write_text("tpu-x-old\n")
        (self.ws / "plans" / "tpu.training").write_text("running\n")
        (self.ws / "plans" / "tpu.handover").mkdir()
        for name, line in (("probe", 'echo "tpubuild-probe 1 $(date +%s%N)"'), ("stop", ""), ("launch", "")):
            (self.ws / "plans" / "tpu.handover" / f"{name}.sh").write_text(
                f"set -euo pipefail\ngcloud compute tpus tpu-vm ssh {name}\n{line}\n")
        self.runs = 0

    def run(self, script: Script, *, fail: str | None = None, output: str | None = None,
            shell: tuple[str, ...] = ("bash",)) -> tuple[subprocess.CompletedProcess[str], list[str], Path]:
        self.runs += 1
        stub_dir = self.root / f"run{self.runs}"
        stub_dir.mkdir()
        env = {
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
            "WORKSPACE": str(self.ws),
            "STUB_DIR": str(stub_dir),
            # tpu-checkpoint polls at once; tpu-resume tries once (a retry would hide the failing call)
            "TPUBUILD_DRAIN_POLL_S": "0", "TPUBUILD_RESUME_TRIES": "1",
            **dict(script.env),
        }
        if fail:
            env["STUB_FAIL"] = fail
        if output is not None:
            env["STUB_OUTPUT"] = output
        proc = subprocess.run([*shell, "-c", script.text], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=60)
        log = stub_dir / "calls.log"
        calls = log.read_text().splitlines() if log.exists() else []
        return proc, calls, stub_dir
