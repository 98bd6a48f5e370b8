"""Every gcloud command line tpubuild emits, parsed by the REAL gcloud offline
(``tests/support/gcloud.py``): the step scripts of every rendered pipeline, and the scripts of
``tpubuild train/stop/logs/run --dry-run`` (vm with and without IAP, node); the commands shown in
the documentation: tests/integration/test_gcloud_doc_lines.py.

The command lines are not cut out of the text with regular expressions: each script runs under
real bash with a recording ``gcloud`` on PATH (it writes its argv, NUL-separated, and prints a
name, or nothing, so both branches of ``found="$(gcloud ... list)"`` run), so the argv is exactly
what bash would hand gcloud.
"""

from __future__ import annotations


import datetime
import os
import subprocess
from pathlib import Path

import pytest

from builder.config.calendar import now as calendar_now
from tests.conftest import EXAMPLES, NODE, REPO, run_tpubuild
from tests.support.step_sandbox import ONLY_CREATES

pytestmark = pytest.mark.slow

RECORDER = """#!/usr/bin/env bash
n=$(ls "$RECORD_DIR" | wc -l)
printf '%s\\0' "$@" > "$RECORD_DIR/call-$n"
if [ -n "${RECORD_ANSWER:-}" ]; then echo "$RECORD_ANSWER"; fi
exit 0
"""
OTHERS = ("terraform", "pip", "tpubuild", "sudo", "curl", "gsutil")
#: The steps that poll a request (flex-start, calendar) look once: the recorder answers no state.
QUICK = {"TPUBUILD_RESIZE_WAIT_S": "0", "TPUBUILD_RESIZE_POLL_S": "0", "TPUBUILD_CALENDAR_WAIT_S": "0",
         "TPUBUILD_CALENDAR_POLL_S": "0", "TPUBUILD_SWAP_WAIT_S": "0", "TPUBUILD_SWAP_POLL_S": "0",
         "TPUBUILD_DRAIN_WAIT_S": "0", "TPUBUILD_DRAIN_POLL_S": "0",
         "TPUBUILD_ACQUIRE_WAIT_S": "0", "TPUBUILD_ACQUIRE_POLL_S": "0"}


def record(script: str, tmp: Path, env: dict[str, str] | None = None,
           answers: tuple[str, ...] = ("stub-name", "")) -> list[tuple[str, ...]]:
    """The gcloud argvs ``script`` runs under bash, with gcloud answering each of ``answers`` (a
    name, and nothing)."""
    calls: list[tuple[str, ...]] = []
    bindir = tmp / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    (bindir / "gcloud").write_text(RECORDER)
    for name in OTHERS:
        (bindir / name).write_text("#!/bin/sh\nexit 0\n")
    for f in bindir.iterdir():
        f.chmod(0o755)
    for answer in answers:
        rec = tmp / f"calls-{answer or 'empty'}"
        rec.mkdir(exist_ok=True)
        ws = tmp / "workspace"
        (ws / "plans").mkdir(parents=True, exist_ok=True)
        for module in ("tpu", "mig"):  # the slice's plan, a new slice's (its apply and mig-calendar ask at once)
            (ws / "plans" / f"{module}.json").write_text(ONLY_CREATES)
        # as tpu-apply leaves it under make-before-break: a new slice beside the old (tpu-swap reads it)
        (ws / "plans" / "tpu.slices.json").write_text('{"a": {"name": "tpu-old"}, "b": {"name": "tpu-new"}}')
        (ws / "plans" / "tpu.name").write_text("tpu-new")
        # ... and mig-apply on mig (mig-resize, mig-attach and mig-swap read the new group's name)
        (ws / "plans" / "mig.slices.json").write_text('{"a": {"name": "tpu-old"}, "b": {"name": "tpu-old-b"}}')
        (ws / "plans" / "mig.name").write_text("tpu-old-b")
        # ... and mig-plan of a failover (mig-apply runs its Terraform, which names the group), the candidates' tfvars
        carried = ws / ".tpubuild" / "bin" / "terraform"
        carried.parent.mkdir(parents=True, exist_ok=True)
        carried.write_text('#!/bin/sh\n[ "$1 $2" = "output -raw" ] && printf tpu-old-b\nexit 0\n')
        carried.chmod(0o755)
        (ws / "plans" / "mig.tfplan").write_text("saved plan\n")
        (ws / "modules" / "tpu_mig").mkdir(parents=True, exist_ok=True)
        for i in range(9):
            (ws / "tfvars" / "candidates" / str(i)).mkdir(parents=True, exist_ok=True), (ws / "tfvars" / "candidates" / str(i) / "mig.tfvars.json").write_text("{}\n")
        # ... and filestore-apply (filestore-publish copies the NFS export to the workspace)
        (ws / "plans" / "filestore.export").write_text("nfs_ip=10.20.0.2\nnfs_share=tpushare\n")
        # ... and <module>-prepare and -swap: the model trains on the old slice (<module>-checkpoint
        # records the move before it stops it)
        for module in ("tpu", "mig"):
            (ws / "plans" / f"{module}.old").write_text("tpu-old\n")
            (ws / "plans" / f"{module}.handover").mkdir(exist_ok=True)
            (ws / "plans" / f"{module}.handover" / "probe.sh").write_text("echo tpubuild-probe 1 1000\n")
            (ws / "plans" / f"{module}.handover" / "stop.sh").write_text("true\n")
        full = {**os.environ, **QUICK, **(env or {}), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
                "RECORD_DIR": str(rec), "RECORD_ANSWER": answer, "WORKSPACE": str(ws), "HOME": str(tmp)}
        subprocess.run(["bash", "-c", script], cwd=ws, env=full, capture_output=True, text=True, timeout=60)
        for call in sorted(rec.iterdir()):
            calls.append(tuple(call.read_bytes().decode().split("\0")[:-1]))
    return calls


def _parse_all(gcloud, argvs: list[tuple[str, ...]]) -> None:
    failures = []
    for argv in dict.fromkeys(argvs):
        result = gcloud.parse(list(argv))
        if not result.ok:
            failures.append(result.why())
    assert not failures, "\n\n".join(failures)


# ---------------------------------------------------------------- step scripts

#: values.env variants that change the gcloud steps (restore, Filestore tiers), per architecture
VARIANTS = [
    ("node", {}), ("vm", {}), ("mig", {}), ("mig", {"TPU_PROVISIONING": "flex-start"}),
    # a calendar window that has begun (mig-resize resizes; before the start it calls nothing)
    ("mig", {"TPU_PROVISIONING": "calendar", "ZONE": "us-east5-a", "TPU_CALENDAR_DAYS": "7", "TPU_CALENDAR_START":
             f"{calendar_now() - datetime.timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}"}),
    ("node", {"SHARED_PD_RESTORE": "latest"}), ("vm", {"SHARED_PD_RESTORE": "snap-1"}),
    ("node", {"SHARED_FS_TIER": "HIGH_SCALE_SSD", "SHARED_FS_CAPACITY": "10240"}),
    ("vm", {"SHARED_FS_TIER": "REGIONAL", "SHARED_FS_CAPACITY": "1024"}),
    # candidates: the failover loop (docs/capacity.md); later steps read the granted zone
    ("vm", {"TPU_PROVISIONING": "spot,on-demand"}),
    # ... on mig: mig-apply reads the group's errors and a flex-start request's state with gcloud
    ("mig", {"TPU_PROVISIONING": "flex-start,spot"}),
]


def _step_scripts() -> list[tuple[str, str, dict[str, str]]]:
    """Every distinct step script with a gcloud line: every action × scope × allow flag that the
    planner accepts (a combination it refuses is not a pipeline), for each variant."""
    from builder.config import load_text
    from builder.facts.errors import BadInput
    from builder.render.pipeline import render
    from builder.planning.plan import make_plan
    from tests.conftest import rewrite_env
    from tests.support.pipeline import ENVS, all_cases, step_env, step_script

    found: dict[str, tuple[str, str, dict[str, str]]] = {}
    for arch, overrides in VARIANTS:
        base = ENVS[arch]
        settings = load_text(rewrite_env(base.read_text(), **overrides), REPO / base.name)
        for case in all_cases():
            if case.arch != arch or not case.valid or case.action == "initialize":
                continue
            try:
                plan = make_plan(settings, case.action, tpu=case.tpu, mig=case.mig)
            except BadInput:
                continue
            for allow in (False, True):
                for step in render(settings, plan, allow_data_loss=allow, allow_wipe=allow)["steps"]:
                    text = step_script(step)
                    if "gcloud" in text:
                        found.setdefault(text, (step["id"], text, step_env(step)))
    return list(found.values())


STEPS = _step_scripts()


def test_step_scripts_with_gcloud_are_covered():
    ids = {step_id for step_id, _, _ in STEPS}
    assert len(STEPS) >= 3 and ids, ids  # backups, snapshots, restores at least


@pytest.mark.parametrize("step_id,text,env", STEPS, ids=[f"{s[0]}-{i}" for i, s in enumerate(STEPS)])
def test_step_script_gcloud_lines_parse(gcloud, tmp_path, step_id, text, env):
    argvs = record(text, tmp_path, env)
    assert argvs, f"{step_id}: no gcloud call recorded"
    _parse_all(gcloud, argvs)


# ---------------------------------------------------------------- the seeder

#: gcloud as run_seeder.sh meets it when a blank Hyperdisk ML disk is seeded: no VM left over, the
#: disk READ_WRITE_SINGLE and unused, the seeder VM reports done.
SEEDER_GCLOUD = """#!/usr/bin/env bash
n=$(ls "$RECORD_DIR" | wc -l)
printf '%s\\0' "$@" > "$RECORD_DIR/call-$n"
case "$1 $2 $3" in
  "compute instances describe") [[ -f "$RECORD_DIR/../vm" ]]; exit ;;
  "compute instances create") touch "$RECORD_DIR/../vm" ;;
  "compute instances delete") rm -f "$RECORD_DIR/../vm" ;;
  "compute instances get-guest-attributes") echo "done:copied" ;;
  "compute disks describe") [[ "$*" == *accessMode* ]] && echo READ_WRITE_SINGLE ;;
esac
exit 0
"""


@pytest.mark.parametrize("disk_type", ["pd-balanced", "hyperdisk-ml"])
def test_seeder_gcloud_lines_parse(gcloud, tmp_path, disk_type):
    """env_setup/seeder/run_seeder.sh (the shared_pd-seed step's script): every gcloud line, the
    Hyperdisk ML access-mode switch (gcloud compute disks update --access-mode) included."""
    from tests.shell.test_startup_sandbox import SEEDER_PIPELINE_ENV

    bindir, rec = tmp_path / "bin", tmp_path / "calls"
    bindir.mkdir()
    rec.mkdir()
    (bindir / "gcloud").write_text(SEEDER_GCLOUD)
    (bindir / "gcloud").chmod(0o755)
    env = {**os.environ, **SEEDER_PIPELINE_ENV, "DISK_TYPE": disk_type, "RECORD_DIR": str(rec),
           "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    proc = subprocess.run(["bash", str(REPO / "env_setup/seeder/run_seeder.sh")], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    argvs = [tuple(c.read_bytes().decode().split("\0")[:-1]) for c in sorted(rec.iterdir())]
    switched = [a for a in argvs if a[:3] == ("compute", "disks", "update")]
    assert switched if disk_type == "hyperdisk-ml" else not switched
    _parse_all(gcloud, argvs)


def test_calendar_request_lines_parse(gcloud, tmp_path):
    """mig-calendar (TPU7x: google-beta 8.7 cannot request it in calendar mode). gcloud 528, the
    tests' gcloud, predates --tpu-version=TPU7X (the pipeline's image, builder.render.pipeline.IMAGES, is
    587): the create line must then fail on that choice alone and parse whole with a version 528
    lists, so every other flag is proven; with a newer gcloud it must parse as it is."""
    from builder.config import load
    from builder.render.pipeline import render
    from builder.planning.plan import make_plan
    from tests.support.pipeline import step_env, step_script

    s = load(EXAMPLES / "mig-tpu7x-8-calendar.env")
    [step] = [st for st in render(s, make_plan(s, "create"))["steps"] if st["id"] == "mig-calendar"]
    argvs = list(dict.fromkeys(record(step_script(step), tmp_path, step_env(step))))
    creates = [a for a in argvs if "create" in a]
    assert creates and "--tpu-version=TPU7X" in creates[0]
    _parse_all(gcloud, [a for a in argvs if a not in creates])
    result = gcloud.parse(list(creates[0]))
    if not result.ok:
        assert "argument --tpu-version: Invalid choice: 'TPU7X'" in result.stderr, result.why()
        _parse_all(gcloud, [tuple("--tpu-version=V6E" if a == "--tpu-version=TPU7X" else a for a in creates[0])])


#: gcloud as mig-attach meets it: a Hyperdisk ML disk READ_ONLY_MANY that no VM holds yet, a group of
#: two VMs (so every line runs, the attach-disk ones included).
MIG_ATTACH_GCLOUD = """#!/usr/bin/env bash
n=$(ls "$RECORD_DIR" | wc -l)
printf '%s\\0' "$@" > "$RECORD_DIR/call-$n-$$"  # the attach-disk calls run in parallel
case "$1 $2 $3" in
  "compute disks describe") [[ "$*" == *accessMode* ]] && echo READ_ONLY_MANY ;;
  "compute instance-groups managed") printf 'tpu-x-a2bc\\ntpu-x-m0nz\\n' ;;
esac
exit 0
"""


@pytest.mark.parametrize("values", ["mig-v6e-16-spot.env", "mig-v5p-32.env"])
def test_mig_attach_lines_parse(gcloud, tmp_path, values):
    """mig-attach (and the health check's attach, the same function): the access-mode and users
    lookups, the group's listing and one attach-disk per VM, parsed by the real gcloud."""
    from builder.config import load
    from builder.render.pipeline import render
    from builder.planning.plan import make_plan
    from tests.support.pipeline import stand_in_bin, step_env, step_script

    s = load(EXAMPLES / values)
    [step] = [st for st in render(s, make_plan(s, "create"))["steps"] if st["id"] == "mig-attach"]
    bindir, rec = stand_in_bin(tmp_path, "calls", gcloud=MIG_ATTACH_GCLOUD)
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "mig.name").write_text(s.tpu_name)  # as mig-apply leaves it
    env = {**os.environ, **step_env(step), "RECORD_DIR": str(rec), "WORKSPACE": str(tmp_path),
           "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    proc = subprocess.run(["bash", "-c", step_script(step)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    argvs = [tuple(c.read_bytes().decode().split("\0")[:-1]) for c in sorted(rec.iterdir())]
    attaches = [a for a in argvs if a[:3] == ("compute", "instances", "attach-disk")]
    assert sorted(a[3] for a in attaches) == ["tpu-x-a2bc", "tpu-x-m0nz"]
    assert any("--format=value(accessMode)" in a for a in argvs) == (s.shared_pd_type == "hyperdisk-ml")
    _parse_all(gcloud, argvs)


#: gcloud as mig's acquisition meets it: the flex-start group made empty (grown from 0 by a resize),
#: then a stockout in its errors; the next candidate's group shows none
ACQUIRE_GCLOUD = """#!/usr/bin/env bash
n=$(ls "$RECORD_DIR" | wc -l)
printf '%s\\0' "$@" > "$RECORD_DIR/call-$n"
[[ "$*" == *"value(targetSize)"* ]] && echo 0
if [[ "$*" == *"list-errors"* ]] && [ ! -e "$RECORD_DIR.errored" ]; then
  touch "$RECORD_DIR.errored"
  printf 'ZONE_RESOURCE_POOL_EXHAUSTED\\tno capacity\\n'
fi
exit 0
"""


def test_mig_acquisition_lines_parse(gcloud, tmp_path):
    """mig-apply of a failover (docs/capacity.md): the flex-start group grown from 0 (its target
    size, a plain resize: no resize request), its errors (a stockout), then the next candidate's
    errors and wait-until, with the group's real name."""
    from builder.config import load_text
    from builder.render.pipeline import render
    from builder.planning.plan import make_plan
    from tests.conftest import rewrite_env
    from tests.support.pipeline import step_env, step_script

    base = EXAMPLES / "mig-v6e-16-spot.env"
    s = load_text(rewrite_env(base.read_text(), TPU_PROVISIONING="flex-start,spot"), base)
    [step] = [st for st in render(s, make_plan(s, "create"))["steps"] if st["id"] == "mig-apply"]
    bindir, rec, ws = tmp_path / "bin", tmp_path / "calls", tmp_path / "ws"
    for d in (bindir, rec, ws / "plans", ws / ".tpubuild" / "bin", ws / "modules" / "tpu_mig", ws / "tfvars" / "candidates" / "1"):
        d.mkdir(parents=True)
    (ws / "tfvars" / "candidates" / "1" / "mig.tfvars.json").write_text("{}\n"), (ws / "plans" / "mig.tfplan").write_text("plan\n")
    (ws / "plans" / "mig.json").write_text(ONLY_CREATES)
    terraform = ws / ".tpubuild" / "bin" / "terraform"  # as mig-plan leaves it
    for f, text in ((bindir / "gcloud", ACQUIRE_GCLOUD), (terraform, f'#!/bin/sh\n[ "$1 $2" = "output -raw" ] && printf %s {s.tpu_name}\nexit 0\n')):
        f.write_text(text), f.chmod(0o755)
    env = {**os.environ, **step_env(step), "RECORD_DIR": str(rec), "WORKSPACE": str(ws), "TPUBUILD_ACQUIRE_POLL_S": "0",
           "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    proc = subprocess.run(["bash", "-c", step_script(step)], env=env, capture_output=True, text=True, timeout=60)
    argvs = [tuple(c.read_bytes().decode().split("\0")[:-1]) for c in sorted(rec.iterdir(), key=lambda c: int(c.name[5:]))]
    assert proc.returncode == 0, proc.stderr
    kinds = [next((w for w in ("describe", "resize", "list-errors", "wait-until") if w in a), a) for a in argvs]
    assert kinds == ["describe", "resize", "list-errors", "list-errors", "wait-until"], argvs
    assert not any("resize-requests" in a for a in argvs)
    assert all(s.tpu_name in a for a in argvs)
    _parse_all(gcloud, argvs)


# ---------------------------------------------------------------- train / stop / logs / run

VM = EXAMPLES / "vm-v4-32.env"

COMMANDS = [
    ("train", "roberta", "--dry-run"),
    ("stop", "--dry-run"),
    ("stop", "--probe", "--dry-run"),  # what the make-before-break build's tpu-checkpoint waits on
    ("logs", "--host", "1", "--follow", "--dry-run"),
    ("logs", "--run", "--host", "1", "--dry-run"),
    ("run", "--dry-run", "--", "python3", "models/examples/torch_xla_launch.py", "--steps", "10"),
    ("run", "--dry-run", "--hosts", "2", "--", "python3", "models/examples/lightning_tpu.py"),
    # shipped from the repository root: a file at the top, a folder, a file two folders down
    ("run", "--dry-run", "--ship", "README.md", "--ship", "env_setup", "--", "python3",
     "models/examples/torch_xla_launch.py", "--steps", "10"),
    ("profile", "--host", "1", "--dry-run"),
    ("logs", "--metrics", "--dry-run"),
]


def _script(stdout: str) -> str:
    """The dry run's script (the header comments are harmless to bash)."""
    return stdout


@pytest.mark.parametrize("variant", ["vm-iap", "vm-external", "node"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:3]))
def test_host_command_lines_parse(gcloud, make_env, tmp_path, variant, command):
    from builder.config import load

    values = {"vm-iap": make_env(VM), "vm-external": make_env(VM, TPU_EXTERNAL_IPS="true"),
              "node": make_env(NODE)}[variant]
    cut = command.index("--") if "--" in command else len(command)  # --values before run's command
    r = run_tpubuild(*command[:cut], "--values", values, *command[cut:])
    if variant == "node" and command[0] == "run" or "--run" in command and variant == "node":
        assert r.returncode == 2 and 'works on TPU_ARCH="vm"' in r.stderr, r.stderr
        return  # tpubuild run is vm only
    if variant == "node" and "--probe" in command:
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "has no probe" in r.stderr, r.stderr
        return  # the probe is the TPU VMs' (make-before-break)
    if r.returncode == 2 and variant == "node" and "legacy" in r.stderr:
        pytest.skip("node is legacy here")
    assert r.returncode == 0, r.stderr
    # vm: the listing of the zone's TPU VMs answers the slice's slot b (after a make-before-break
    # swap), then the ssh/scp lines run against it; then a name that is no slot, then nothing
    argvs = record(_script(r.stdout), tmp_path, answers=(f"{load(values).tpu_name}-b", "stub-name", ""))
    assert argvs, r.stdout
    hosts = [a for a in argvs if "ssh" in a or "scp" in a]
    if variant != "node":
        assert ("compute", "tpus", "tpu-vm", "list") == argvs[0][:4] and hosts, argvs
        assert all(f"{load(values).tpu_name}-b" in " ".join(a) for a in hosts if "tpu-vm" in a)
    if variant == "vm-iap":
        assert all("--tunnel-through-iap" in a for a in hosts)
        assert {a[0] for a in hosts} == {"alpha"}  # tpu-vm ssh/scp --tunnel-through-iap exists only there
    _parse_all(gcloud, argvs)
