"""The health check (TPU_RECOVERY) in the sandbox: the build Terraform hands the Scheduler job
(``health_build_body`` of the slice's module, builder/inputs/recovery.py) is played as Cloud Build plays
it: each step's script after Cloud Build's substitutions, in order, under real bash, stopping at
the first failing step. ``gcloud`` is the stateful local fake tests/support/fake_gcloud.py (Cloud
Storage, the TPU, the MIG, the TTL's job); ``tpubuild`` is the real CLI of this tree (the launch
is the real ``tpubuild train roberta --dry-run`` script), except ``dispatch``, whose pipeline
(proven by tests/integration/test_ttl_cloud.py's path) is played by recreating the TPU in the
slot its Terraform state holds (``held``: ``tpu-<env>``, or ``tpu-<env>-b`` after a
make-before-break swap); ``pip`` and ``sleep`` do nothing."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from builder.catalogue.modules import accelerator_module
from builder.config import load
from builder.inputs import recovery, tfvars
from tests.conftest import EXAMPLES, NO_CLOUD, REPO, require, rewrite_env
from tests.support.pipeline import step_env, step_script

VM = EXAMPLES / "vm-v2-32.env"  # preemptible: TPU_RECOVERY is auto, the slice's price is known
SPOT_VM = EXAMPLES / "vm-v5litepod-16.env"  # spot v5e: its price is unknown
MIG = EXAMPLES / "mig-v6e-16-spot.env"

TPUBUILD = f"""#!/usr/bin/env bash
set -u
echo "tpubuild $*" >> "$FAKE_GCLOUD_STATE/calls.log"
if [ "$1" = dispatch ]; then
  if [ -n "${{FAKE_DISPATCH_FAILS:-}}" ]; then echo "dispatch: the pipeline failed" >&2; exit 1; fi
  if [ -n "${{FAKE_DISPATCH_RECORD:-}}" ]; then  # the applied record the recreate's finalize writes
    mkdir -p "$(dirname "$FAKE_DISPATCH_RECORD")" && printf '%s\n' "$FAKE_DISPATCH_TEXT" > "$FAKE_DISPATCH_RECORD"
  fi
  if [ -n "${{FAKE_DISPATCH_MIG:-}}" ]; then  # mig: the group made again, its VMs' listing
    printf '%s' "$FAKE_DISPATCH_MIG" > "$FAKE_GCLOUD_STATE/migs/$(cat "$FAKE_GCLOUD_STATE/held")"
  else
    echo READY > "$FAKE_GCLOUD_STATE/tpus/$(cat "$FAKE_GCLOUD_STATE/held")"
  fi
  exit 0
fi
exec {sys.executable} -m builder "$@"
"""


@dataclass
class Sandbox:
    root: Path
    values: Path
    #: the state bucket in fake-gcs-server (``google.cloud.storage.Bucket``) when the sandbox's gcloud
    #: talks to it (``STORAGE_EMULATOR_HOST``); None: Cloud Storage is ``state/gcs`` on disk
    bucket: Any = None

    @property
    def state(self) -> Path:
        return self.root / "state"

    def put(self, name: str, text: str) -> None:
        (self.state / name).write_text(text)

    def mig(self, listing: str, slot: str = "") -> None:
        """The MIG ``slot`` (default ``tpu-<env>``) exists; ``listing``: its VMs' ``instanceStatus
        currentAction``, one a line."""
        self.put(f"migs/{slot or self.settings.tpu_name}", listing)

    def tpu(self, state: str, slot: str = "") -> None:
        """The TPU VM ``slot`` (default ``tpu-<env>``) is in ``state``."""
        self.put(f"tpus/{slot or self.settings.tpu_name}", state)

    def gcs(self, rel: str) -> Path:
        return self.state / "gcs" / self.settings.state_bucket / rel

    @property
    def settings(self):  # noqa: ANN201 - Settings
        return load(self.values)

    def calls(self) -> list[str]:
        log = self.state / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def text(self, rel: str) -> str | None:
        """The object ``rel`` of the state bucket, None when there is none."""
        if self.bucket is not None:
            blob = self.bucket.blob(rel)
            return blob.download_as_text() if blob.exists() else None
        path = self.gcs(rel)
        return path.read_text() if path.exists() else None

    def write(self, rel: str, text: str) -> None:
        if self.bucket is not None:
            self.bucket.blob(rel).upload_from_string(text)
            return
        self.gcs(rel).parent.mkdir(parents=True, exist_ok=True)
        self.gcs(rel).write_text(text)

    def records(self) -> list[dict]:
        folder = recovery.objects(self.settings)["records"]
        if self.bucket is not None:
            return [json.loads(b.download_as_text()) for b in sorted(self.bucket.list_blobs(prefix=folder),
                                                                      key=lambda b: b.name) if b.name.endswith(".json")]
        path = self.gcs(folder)
        return [json.loads(p.read_text()) for p in sorted(path.glob("*.json"))] if path.exists() else []

    def mark(self) -> dict[str, str]:
        text = self.text(recovery.objects(self.settings)["mark"])
        return dict(line.split("=", 1) for line in text.splitlines()) if text is not None else {}

    def run_build(self, build_id: str = "hb-1", **env: str) -> tuple[int, str]:
        """Every step of the health build, as Cloud Build runs them; (exit status, output)."""
        s = self.settings
        body = json.loads(tfvars.for_module(s, accelerator_module(s.arch))["health_build_body"])
        assert body == recovery.build_request(s)
        out = []
        for step in body["steps"]:
            script = step_script(step, {"BUILD_ID": build_id})
            proc = subprocess.run(
                ["bash", "-c", script], capture_output=True, text=True, timeout=120, cwd=self.values.parent,
                env={**{k: v for k, v in os.environ.items() if k not in NO_CLOUD},  # gcloud's world: state/
                     **step_env(step, {"BUILD_ID": build_id}), "WORKSPACE": str(self.values.parent),
                     "PATH": f"{self.root / 'bin'}:{os.environ['PATH']}", "FAKE_GCLOUD_STATE": str(self.state),
                     "PYTHONPATH": str(REPO), **env})
            out.append(f"--- {step['id']} ({proc.returncode})\n{proc.stdout}{proc.stderr}")
            if proc.returncode:
                return proc.returncode, "".join(out)
        return 0, "".join(out)


def _sandbox(tmp_path: Path, base: Path, **overrides: str) -> Sandbox:
    require("bash", shutil.which("bash") is not None, "apt-get install bash")
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True)
    values = workspace / "values.env"
    values.write_text(rewrite_env(base.read_text(), **overrides))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gcloud").write_text(f"#!/usr/bin/env bash\nexec {sys.executable} {REPO / 'tests/support/fake_gcloud.py'} \"$@\"\n")
    (bin_dir / "tpubuild").write_text(TPUBUILD)
    for noop in ("pip", "sleep"):
        (bin_dir / noop).write_text("#!/usr/bin/env bash\nexit 0\n")
    for exe in bin_dir.iterdir():
        exe.chmod(0o755)
    (tmp_path / "state" / "gcs").mkdir(parents=True)
    (tmp_path / "state" / "tpus").mkdir()
    (tmp_path / "state" / "migs").mkdir()
    (tmp_path / "state" / "mig_errors").mkdir()
    box = Sandbox(tmp_path, values)
    s = box.settings
    box.put("held", s.tpu_name)  # the slot the Terraform state holds
    if s.arch == "mig":  # the pipeline's mig-attach gave every VM the build made the dataset disk
        box.put("disk_users", "".join(f"{s.tpu_name}-{i:04d}\n" for i in range(s.hosts)))
    return box


def _launched(calls: list[str]) -> list[str]:
    """The launch's host commands: the ssh lines that start train.sh detached."""
    return [c for c in calls if c.startswith("gcloud") and "ssh" in c and "setsid nohup" in c and "train.sh" in c]


def test_a_preempted_tpu_vm_is_recreated_and_training_relaunched_and_recorded(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, VM)
    s = box.settings
    assert s.recovery and s.provisioning == "preemptible"
    box.tpu("PREEMPTED")
    code, out = box.run_build()
    assert code == 0, out
    calls = box.calls()
    delete = next(i for i, c in enumerate(calls) if "tpu-vm delete" in c)
    dispatch = next(i for i, c in enumerate(calls) if c.startswith("tpubuild dispatch"))
    assert delete < dispatch, calls
    assert calls[dispatch].split()[1:] == ["dispatch", "--action", "update", "--tpu", "true", "--mig", "false",
                                           "--allow-data-loss", "false", "--allow-wipe", "false"]
    launched = _launched(calls)
    assert launched and all(calls.index(c) > dispatch for c in launched), out
    assert all("--restore-file checkpoint_last.pt" in c for c in launched)
    [record] = box.records()
    assert (record["outcome"], record["reason"], record["try"], record["slice"]) == ("recovered", "PREEMPTED", 1, s.tpu_name)
    assert record["down_s"] >= 0 and record["hourly_usd"] == recovery.hourly_usd(s) > 0
    assert record["down_cost_usd"] == round(record["hourly_usd"] * record["down_s"] / 3600, 2)
    assert record["build"] == "hb-1" and record["detected_at"] <= record["ended_at"]
    assert box.mark() == {}, "a recovered slice leaves no mark"
    # the next check finds the slice whole and does nothing (idempotent)
    before = len(box.calls())
    code, out = box.run_build(build_id="hb-2")
    assert code == 0 and "is whole; nothing to do" in out, out
    assert not any(c.startswith(("tpubuild dispatch", "tpubuild train")) for c in box.calls()[before:])
    assert len(box.records()) == 1


def test_a_mig_whose_vms_were_deleted_relaunches_when_whole_again(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, MIG)
    s = box.settings
    assert s.recovery and s.hosts == 4
    box.mig("RUNNING NONE\nRUNNING NONE\n")  # two VMs deleted; the MIG is recreating them
    code, out = box.run_build()
    assert code == 0, out
    assert "2 of 4 VMs running" in out and "the MIG recreates its VMs" in out
    assert box.mark()["reason"] == "2 of 4 VMs running" and box.records() == []
    assert not _launched(box.calls()) and not any(c.startswith("tpubuild dispatch") for c in box.calls())
    box.mig("RUNNING NONE\nRUNNING NONE\nRUNNING NONE\nSTAGING CREATING\n")
    code, out = box.run_build(build_id="hb-2")
    assert code == 0 and not _launched(box.calls()), out
    box.mig("RUNNING NONE\n" * 4)
    code, out = box.run_build(build_id="hb-3")
    assert code == 0, out
    calls = box.calls()
    assert len(_launched(calls)) == 4, out  # on every host
    assert not any(c.startswith("tpubuild dispatch") for c in calls), "the MIG recreates VMs; nothing is applied"
    [record] = box.records()
    assert (record["outcome"], record["reason"], record["arch"], record["build"]) == \
        ("recovered", "2 of 4 VMs running", "mig", "hb-3")
    # spot v6e is priced (builder/data/prices.json): the record carries the slice's price and the down time's cost
    assert record["hourly_usd"] == recovery.hourly_usd(s) > 0 and record["down_cost_usd"] is not None
    assert box.mark() == {}


def test_after_a_swap_the_live_slot_b_is_checked_recreated_and_relaunched(tmp_path: Path) -> None:
    """After a make-before-break update the slice is tpu-<env>-b (tpu-<env> is gone): the check
    reads b, deletes b, the update recreates b (the slot its state holds), the launch reaches b."""
    box = _sandbox(tmp_path, VM)
    live = f"{box.settings.tpu_name}-b"
    box.put("held", live)
    box.tpu("READY", live)
    code, out = box.run_build()
    assert code == 0 and f"{live} is whole; nothing to do" in out, out
    assert not any(c.startswith("tpubuild") for c in box.calls()), "a whole slot b is not recreated"
    box.tpu("PREEMPTED", live)
    code, out = box.run_build("hb-2")
    assert code == 0, out
    calls = box.calls()
    [delete] = [c for c in calls if "tpu-vm delete" in c]
    assert delete.split()[5] == live, delete
    launched = _launched(calls)
    assert launched and all(f" ssh {live} " in c for c in launched), launched
    assert not any(f" {box.settings.tpu_name} " in c for c in calls if "tpu-vm" in c), calls
    assert f"tpubuild: the slice is {live}" in out
    [record] = box.records()
    assert (record["outcome"], record["slice"], record["reason"]) == ("recovered", live, "PREEMPTED")


def test_both_slots_without_a_build_is_left_to_tpubuild_update(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, VM)
    box.tpu("READY")
    box.tpu("PREEMPTED", f"{box.settings.tpu_name}-b")
    code, out = box.run_build()
    assert code == 0, out
    assert f"both {box.settings.tpu_name} and {box.settings.tpu_name}-b exist" in out and "tpubuild update" in out
    _nothing_happened(box)


def _nothing_happened(box: Sandbox) -> None:
    calls = box.calls()
    assert not any("tpu-vm delete" in c or c.startswith(("tpubuild dispatch", "tpubuild train")) for c in calls), calls
    assert box.records() == [] and box.mark() == {}


def test_a_held_lock_means_nothing_is_recovered(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, VM)
    box.tpu("PREEMPTED")
    lock = box.gcs(recovery.objects(box.settings)["lock"])
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"holder": "ana@laptop", "action": "update", "build_id": "b-42", "state": "held"}))
    code, out = box.run_build()
    assert code == 0 and "the environment lock is held" in out and "ana@laptop" in out, out
    _nothing_happened(box)
    assert not any("tpus tpu-vm list" in c for c in box.calls()), "the lock is read before the slice"


def test_another_running_health_build_owns_the_recovery(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, VM)
    box.tpu("PREEMPTED")
    box.put("ongoing", "hb-0\nhb-1\n")
    code, out = box.run_build(build_id="hb-1")
    assert code == 0 and "health build hb-0" in out, out
    _nothing_happened(box)


def _ttl_line(fires: datetime.datetime, fired: str = "") -> str:
    return f"{fires:%Y-%m-%dT%H:%M:%SZ}\t{fired}"


@pytest.mark.parametrize("ttl, says", [
    (None, "is gone"),
    (_ttl_line(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=365),
               "2026-01-01T00:00:00Z"), "the TTL fired at 2026-01-01T00:00:00Z"),
    (_ttl_line(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=20)), "sooner than a recovery"),
], ids=["job-gone", "fired", "due"])
def test_no_recovery_runs_past_the_ttl(tmp_path: Path, ttl: str | None, says: str) -> None:
    box = _sandbox(tmp_path, VM, ENV_TTL_HOURS="8")
    box.tpu("PREEMPTED")
    if ttl is not None:
        box.put("ttl", ttl)
    code, out = box.run_build()
    assert code == 0 and says in out, out
    _nothing_happened(box)


def test_a_ttl_far_away_lets_the_recovery_run(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, VM, ENV_TTL_HOURS="8")
    box.tpu("TERMINATED")
    box.put("ttl", _ttl_line(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=6)))
    code, out = box.run_build()
    assert code == 0, out
    assert [r["outcome"] for r in box.records()] == ["recovered"] and box.records()[0]["reason"] == "TERMINATED"


def test_after_max_tries_the_recovery_stops_and_says_so(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, SPOT_VM, TPU_RECOVERY_MAX_TRIES="2")
    box.tpu("PREEMPTED")
    code, out = box.run_build("hb-1", FAKE_DISPATCH_FAILS="1")
    assert code == 0, out
    [first] = box.records()
    assert (first["outcome"], first["try"], first["max_tries"]) == ("failed", 1, 2)
    assert "try 1 of 2" in first["message"] and box.mark()["tries"] == "1"
    # the slice is gone now (deleted, not recreated): the next check tries again, and gives up
    code, out = box.run_build("hb-2", FAKE_DISPATCH_FAILS="1")
    assert code == 1, "a build that gives up fails, so Cloud Build shows it"
    second = box.records()[-1]
    assert (second["outcome"], second["try"], second["reason"]) == ("gave-up", 2, "PREEMPTED")
    assert "stopped after 2 consecutive failed tries" in second["message"] and "tpubuild update" in second["message"]
    assert box.mark()["gave_up"] == "1"
    # given up: later checks touch nothing and say why
    before = len(box.calls())
    code, out = box.run_build("hb-3")
    assert code == 0 and "gave up after 2 failed tries" in out, out
    assert not any(c.startswith("tpubuild") or "delete" in c for c in box.calls()[before:])
    assert len(box.records()) == 2
    # a person recovers it (tpubuild update): the check sees it whole, clears the mark, relaunches nothing
    box.tpu("READY")
    code, out = box.run_build("hb-4")
    assert code == 0 and "a person recovered it" in out, out
    assert box.mark() == {} and not _launched(box.calls())


def test_a_launch_that_never_succeeds_is_a_failed_try(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, MIG)
    box.mig("RUNNING NONE\n")
    assert box.run_build()[0] == 0
    box.mig("RUNNING NONE\n" * 4)
    box.put("ssh_rc", "1")  # the hosts never become ready
    code, out = box.run_build("hb-2")
    assert code == 0, out
    [record] = box.records()
    assert record["outcome"] == "failed" and "did not launch on every host" in record["message"]
    assert out.count("failed (the hosts may still be starting)") == recovery.LAUNCH_TRIES


@pytest.mark.slow
def test_every_gcloud_line_of_the_health_build_parses_in_real_gcloud(gcloud, tmp_path: Path) -> None:
    """The argvs bash handed the fake gcloud through every branch (vm recreate with a TTL, a MIG
    waiting then relaunching, a given-up recovery), parsed by the REAL gcloud offline."""
    vm = _sandbox(tmp_path / "vm", VM, ENV_TTL_HOURS="8")
    vm.tpu("PREEMPTED")
    vm.put("ttl", _ttl_line(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=6)))
    # the lock of an update a health build dispatched, which ended without releasing it: asked of
    # Cloud Build (its status, the dispatcher's tags), taken over
    vm.gcs(recovery.objects(vm.settings)["lock"]).parent.mkdir(parents=True, exist_ok=True)
    vm.gcs(recovery.objects(vm.settings)["lock"]).write_text(
        '{\n  "build_id": "b-9",\n  "holder": "cloud build hb-0",\n  "state": "held"\n}\n')
    (vm.state / "builds").mkdir()
    vm.put("builds/b-9", "CANCELLED")  # the update a health build dispatched, dead with it
    vm.put("builds/hb-0", "CANCELLED")
    vm.put("builds/hb-0.tags", ";".join(recovery.build_request(vm.settings)["tags"]))
    assert vm.run_build()[0] == 0
    vm.gcs(recovery.objects(vm.settings)["lock"]).unlink()
    vm.tpu("PREEMPTED")
    vm.run_build("hb-2", FAKE_DISPATCH_FAILS="1")
    mig = _sandbox(tmp_path / "mig", MIG, TPU_RECOVERY_MAX_TRIES="1")
    mig.mig("RUNNING NONE\n")
    mig.run_build()
    mig.mig("RUNNING NONE\n" * 4)
    mig.put("disk_users", "")  # recreated by the MIG: the check gives them the dataset disk
    assert mig.run_build("hb-2")[0] == 0
    boxes = [vm, mig]
    argvs = [tuple(json.loads(line)) for box in boxes for line in (box.state / "argv.jsonl").read_text().splitlines()]
    assert any(a[:2] == ("builds", "list") for a in argvs) and any(a[:2] == ("storage", "cat") for a in argvs)
    assert sum(a[:2] == ("builds", "describe") for a in argvs) == 2
    assert any(a[:4] == ("compute", "tpus", "tpu-vm", "delete") for a in argvs)
    assert any(a[:3] == ("scheduler", "jobs", "describe") for a in argvs)
    assert any(a[:4] == ("compute", "instance-groups", "managed", "list-instances") for a in argvs)
    assert any(a[:3] == ("compute", "instances", "attach-disk") for a in argvs)
    assert any(a[:3] == ("compute", "disks", "describe") and "--format=value(accessMode)" in a for a in argvs)
    assert any(a[:2] == ("storage", "cp") for a in argvs) and any(a[:2] == ("storage", "rm") for a in argvs)
    failures = [r.why() for r in (gcloud.parse(list(a)) for a in dict.fromkeys(argvs)) if not r.ok]
    assert not failures, "\n\n".join(failures)
