"""Failure propagation: every generated step script, run under real bash against stub
``terraform``/``gcloud``/``docker``/``pip``/``tpubuild`` executables, exits non-zero when any stub call fails
(and stops right there), and exits 0 when they all succeed.

The scripts are taken from real renderings (every valid action × flag combination, both
architectures, with and without _ALLOW_DATA_LOSS, plus SHARED_PD_RESTORE and Filestore-tier
variants), after the substitutions Cloud Build would make. ``$WORKSPACE`` points them at a
temporary folder laid out like /workspace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from builder.catalogue.modules import NAMES as MODULE_NAMES
from builder.config import load_text
from builder.planning.plan import make_plan, module_dir
from builder.render.pipeline import render
from tests.conftest import REPO, require, rewrite_env
from tests.support.pipeline import ENVS, NODE_ENV, VM_ENV, all_cases, moving_settings, step_env, step_script
from tests.support.step_sandbox import Sandbox, Script


def _variants() -> list[tuple[str, str, dict[str, str]]]:
    return [
        ("node", "base", {}), ("vm", "base", {}),
        ("node", "restore-latest", {"SHARED_PD_RESTORE": "latest"}),
        ("vm", "restore-named", {"SHARED_PD_RESTORE": "snap-1"}),
        ("node", "high-scale", {"SHARED_FS_TIER": "HIGH_SCALE_SSD", "SHARED_FS_CAPACITY": "10240"}),
        ("vm", "regional", {"SHARED_FS_TIER": "REGIONAL", "SHARED_FS_CAPACITY": "1024"}),
        # candidates: tpu-apply is the failover loop (docs/capacity.md)
        ("vm", "failover", {"TPU_PROVISIONING": "spot,on-demand"}),
    ]


def collect() -> list[Script]:
    found: dict[tuple[str, str], Script] = {}
    for arch, _name, overrides in _variants():
        base = ENVS[arch]
        settings = load_text(rewrite_env(base.read_text(), **overrides), REPO / base.name)
        for case in all_cases():
            # node create/update are refused by the CLI (legacy) but still render: their step
            # scripts are the same templates, so they stay in the collection
            legacy = case.arch == "node" and (case.action == "update" or (case.action == "create"
                                                                          and not (case.tpu or case.mig)))
            renderable = case.valid or legacy
            if case.arch != arch or not renderable or case.action == "initialize":
                continue
            plan = make_plan(settings, case.action, tpu=case.tpu, mig=case.mig)
            for allow in (False, True):
                for step in render(settings, plan, allow_data_loss=allow, allow_wipe=allow)["steps"]:
                    text = step_script(step)
                    found.setdefault((step["entrypoint"], text), Script(
                        step["id"], step["entrypoint"], text, tuple(step_env(step).items()), arch))
    # the move to another zone: its copies, the plans that read them, the releases (docs/capacity.md)
    moving = moving_settings()
    for step in render(moving, make_plan(moving, "update"))["steps"]:
        text = step_script(step)
        found.setdefault((step["entrypoint"], text), Script(
            step["id"], step["entrypoint"], text, tuple(step_env(step).items()), "vm"))
    return list(found.values())


SCRIPTS = collect()


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def test_collection_covers_every_kind_of_step():
    kinds = {s.step_id.split("-", 1)[-1] if s.step_id.split("-", 1)[0] in MODULE_NAMES else s.step_id
             for s in SCRIPTS}
    assert {"plan", "guard", "apply", "seed", "snapshot", "backup", "restore", "tpubuild-image",
            "finalize", "final-backup", "release-plan", "release-guard", "release"} <= kinds, kinds
    assert len(SCRIPTS) > 40


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.id for s in SCRIPTS])
def test_step_fails_when_any_command_fails(sandbox: Sandbox, script: Script):
    proc, calls, _ = sandbox.run(script)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert calls, "every step runs at least one tool"
    for call in calls:
        position = call.split(" ", 1)[0]  # e.g. terraform:2
        failed, failed_calls, _ = sandbox.run(script, fail=position)
        assert failed.returncode != 0, f"{script.step_id}: {position} failed but the step exited 0"
        assert f"stub {position.replace(':', ': failing call ')}" in failed.stderr
        # it stopped right there: the failing call is the last tool call
        assert failed_calls[-1].split(" ", 1)[0] == position, failed_calls


SH_SCRIPTS = [s for s in SCRIPTS if s.shell == "sh"]


@pytest.mark.parametrize("script", SH_SCRIPTS, ids=[s.id for s in SH_SCRIPTS])
def test_terraform_steps_under_busybox_sh(sandbox: Sandbox, script: Script):
    """The Terraform image has no bash; its steps run under BusyBox sh. .ci/run installs busybox
    (Debian), so CI runs these; elsewhere they skip (require)."""
    busybox = shutil.which("busybox")
    require("busybox", busybox is not None, "apt-get install busybox")
    shell = (busybox, "sh")
    proc, calls, _ = sandbox.run(script, shell=shell)
    assert proc.returncode == 0, proc.stderr
    for call in calls:
        position = call.split(" ", 1)[0]
        failed, failed_calls, _ = sandbox.run(script, fail=position, shell=shell)
        assert failed.returncode != 0 and failed_calls[-1].split(" ", 1)[0] == position


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.id for s in SCRIPTS])
def test_step_is_shellcheck_clean(script: Script):
    exe = shutil.which("shellcheck")
    require("shellcheck", exe is not None, "apt-get install shellcheck")
    dialect = "dash" if script.shell == "sh" else "bash"  # BusyBox sh: POSIX plus pipefail
    proc = subprocess.run([exe, "-s", dialect, "-"], input=script.text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def _first(prefix: str, **where: str) -> Script:
    for s in SCRIPTS:
        if s.step_id == prefix and all(w in s.text for w in where.values()):
            return s
    raise AssertionError(f"no {prefix} script")


def test_plan_writes_json_only_when_show_succeeds(sandbox: Sandbox):
    script = _first("mig-plan")
    json_file = sandbox.ws / "plans" / "mig.json"
    json_file.unlink()
    proc, calls, _ = sandbox.run(script, fail="terraform:3")  # init, plan, show
    assert proc.returncode != 0 and calls[-1].startswith("terraform:3 show -json")
    assert not json_file.exists()
    proc, calls, _ = sandbox.run(script)
    assert proc.returncode == 0 and json_file.read_text() == "stub-terraform-output\n"
    assert [c.split()[1] for c in calls] == ["init", "plan", "show"]


def test_plan_refuses_a_workspace_without_tfvars(sandbox: Sandbox):
    (sandbox.ws / "tfvars" / "tpu.tfvars.json").unlink()
    proc, calls, _ = sandbox.run(_first("tpu-plan"))
    assert proc.returncode != 0 and calls == []
    assert "tfvars/tpu.tfvars.json is missing" in proc.stderr


def test_apply_refuses_a_missing_plan(sandbox: Sandbox):
    (sandbox.ws / "plans" / "filestore.tfplan").unlink()
    proc, calls, _ = sandbox.run(_first("filestore-apply"))
    assert proc.returncode != 0 and calls == []


def test_terraform_steps_run_in_the_module_dir(sandbox: Sandbox):
    for arch, env in (("node", NODE_ENV), ("vm", VM_ENV)):
        settings = load_text(env.read_text(), env)
        script = next(s for s in SCRIPTS if s.step_id == "tpu-plan" and s.arch == arch)
        # the stub records where it ran
        # the module's own init is the last (on vm the slice's plan first makes sure the storage's
        # states exist, each with a backend-only init in a folder of its own)
        head, _, tail = script.text.rpartition("terraform init")
        probe = Script(script.step_id, script.shell, head + 'pwd > "$STUB_DIR/cwd"; terraform init' + tail,
                       script.env, arch)
        proc, _, stub_dir = sandbox.run(probe)
        assert proc.returncode == 0
        assert (stub_dir / "cwd").read_text().strip() == str(sandbox.ws / module_dir(settings, "tpu"))


def test_restore_fails_without_a_snapshot(sandbox: Sandbox):
    script = _first("shared_pd-restore")
    proc, _, _ = sandbox.run(script, output="")
    assert proc.returncode != 0
    assert "no READY snapshot labelled tpubuild-env=tpu-dev1" in proc.stderr
    proc, _, _ = sandbox.run(script, output="pd-tpu-dev1-20240101-000000\n")
    assert proc.returncode == 0
    assert (sandbox.ws / "plans" / "shared_pd.snapshot").read_text() == "pd-tpu-dev1-20240101-000000\n"


def _skips_or_creates(sandbox: Sandbox, step_id: str, skipped: str,
                      create: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The step's script against a gcloud that lists nothing (one call, ``skipped`` printed, exit 0),
    then against one that lists the resource (the second call is ``create``); returns that run."""
    script = _first(step_id)
    proc, calls, _ = sandbox.run(script, output="")
    assert proc.returncode == 0 and len(calls) == 1 and skipped in proc.stdout
    proc, calls, _ = sandbox.run(script)
    assert proc.returncode == 0 and create in calls[1]
    return proc, calls


def test_snapshot_names_the_snapshot_or_skips_a_missing_disk(sandbox: Sandbox):
    proc, calls = _skips_or_creates(sandbox, "shared_pd-snapshot", "nothing to snapshot",
                                    "compute snapshots create pd-tpu-dev1-")
    taken = (sandbox.ws / "plans" / "shared_pd.snapshot-taken").read_text().strip()
    assert f"took snapshot {taken} of disk pd-tpu-dev1" in proc.stdout
    assert "tpubuild-build=0b5c3a5e-1f2d-4c1e-9a7b-3d2f1e0c9b8a" in calls[1]


def test_backup_skips_a_missing_instance(sandbox: Sandbox):
    _skips_or_creates(sandbox, "filestore-backup", "nothing to back up", "filestore backups create nfs-")


def test_seeder_gets_its_environment(sandbox: Sandbox):
    script = next(s for s in SCRIPTS if s.step_id == "shared_pd-seed" and s.arch == "vm" and "ALLOW_WIPE=true" in s.text)
    proc, calls, stub_dir = sandbox.run(script)
    assert proc.returncode == 0, proc.stderr
    seen = dict(line.split("=", 1) for line in (stub_dir / "seeder.env").read_text().splitlines())
    assert seen == {
        "ALLOW_WIPE": "true", "DISK_NAME": "pd-v4-pod", "ENV_BUILD_NAME": "v4-pod",
        "GCS_DATASET": "gs://my-tpu-project-datasets/wikitext/*", "PROJECT_ID": "my-tpu-project",
        "SEED_PREP_SCRIPT": "", "SEED_TIMEOUT_S": seen["SEED_TIMEOUT_S"],
        "WORKSPACE_GCS": "gs://my-tpu-project-v4-pod-tf-backend/workspace/v4-pod", "ZONE": "us-central2-b",
        "SEED_NETWORK": "default", "SEED_SUBNET": "",
        "SEED_SERVICE_ACCOUNT": "tb-v4-pod-sd@my-tpu-project.iam.gserviceaccount.com",
    }
    assert int(seen["SEED_TIMEOUT_S"]) > 0
    assert [c.split(" ", 1)[1] for c in calls] == ["compute instances create seeder-vm",
                                                   "compute instances delete seeder-vm"]


#: gcloud for the real run_seeder.sh: no seeder VM left over, a free disk, the VM reports done.
SEED_GCLOUD = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "${STUB_DIR:?}/gcloud.log"
case "$*" in
  "compute instances describe "*) exit 1 ;;
  "compute disks describe "*) echo "" ;;
  "compute instances get-guest-attributes "*) echo "done:copied 3 objects" ;;
esac
"""


@pytest.mark.parametrize(("arch", "overrides", "network", "subnet"), [
    ("vm", {"NETWORK": "tpu-net", "SUBNETWORK": "tpu-subnet-us"}, "tpu-net", "tpu-subnet-us"),
    ("node", {"NETWORK": "corp-vpc", "SUBNETWORK": None}, "corp-vpc", None),
])
def test_seeder_vm_uses_the_environments_network_and_seeder_account(
        tmp_path: Path, arch: str, overrides: dict[str, str | None], network: str, subnet: str | None) -> None:
    """The rendered seed step, run under bash with the real run_seeder.sh, creates the VM in
    NETWORK/SUBNETWORK as the account shared_pd creates (the id tfvars gives it), never with
    gcloud's defaults (network default, the project's default compute account)."""
    from builder.inputs import tfvars

    base = ENVS[arch]
    settings = load_text(rewrite_env(base.read_text(), **overrides), REPO / base.name)
    step = next(st for st in render(settings, make_plan(settings, "create"))["steps"] if st["id"] == "shared_pd-seed")
    ws, bin_dir, stub_dir = tmp_path / "workspace", tmp_path / "bin", tmp_path / "stub"
    shutil.copytree(REPO / "env_setup" / "seeder", ws / "env_setup" / "seeder")
    bin_dir.mkdir()
    stub_dir.mkdir()
    (bin_dir / "gcloud").write_text(SEED_GCLOUD)
    (bin_dir / "gcloud").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "WORKSPACE": str(ws), "STUB_DIR": str(stub_dir), "SEED_POLL_S": "0", **step_env(step)}
    proc = subprocess.run(["bash", "-c", step_script(step)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    [create] = [c.split() for c in (stub_dir / "gcloud.log").read_text().splitlines()
                if c.startswith("compute instances create ")]
    flags = {create[i]: create[i + 1] for i in range(len(create) - 1) if create[i].startswith("--")}
    assert create[3] == f"seed-{settings.env_name}"
    assert flags["--network"] == network
    assert flags.get("--subnet") == subnet
    account = flags["--service-account"]
    assert account == f"{tfvars.for_module(settings, 'shared_pd')['seeder_service_account_id']}@{settings.project_id}.iam.gserviceaccount.com"
    assert account == f"tb-{settings.env_name}-sd@{settings.project_id}.iam.gserviceaccount.com"
    assert account != settings.worker_service_account, "the hosts' account does not exist yet on a first create"


def test_finalize_gets_the_build_id(sandbox: Sandbox):
    proc, calls, _ = sandbox.run(_first("finalize"))
    assert proc.returncode == 0
    assert calls[-1].startswith("tpubuild:1 finalize --build-id 0b5c3a5e-1f2d-4c1e-9a7b-3d2f1e0c9b8a --action ")
    assert not any(c.startswith("pip:") for c in calls), "the builder image has tpubuild: no install"


MISSING_IMAGE_DOCKER = """#!/usr/bin/env bash
set -u
printf '%s\\n' "$*" >> "${STUB_DIR:?}/docker.log"
if [ "$1" = manifest ]; then echo "${MANIFEST_ERROR:-no such manifest: $3}" >&2; exit 1; fi
"""


@pytest.mark.parametrize("error, built", [("no such manifest: x", True), ("manifest unknown", True),
                                          ("denied: Permission 'artifactregistry.repositories.downloadArtifacts' denied", False)])
def test_image_step_builds_a_missing_image_once_and_fails_on_other_errors(sandbox: Sandbox, error: str, built: bool):
    """The pipeline's first step: an image that is missing is built from builder/image/Dockerfile
    and pushed; any other answer (no permission, no network) fails the step naming the image,
    never a build over it."""
    from builder.catalogue.builder_image import DOCKERFILE
    from builder.render.pipeline import IMAGES, image

    (sandbox.bin / "docker").write_text(MISSING_IMAGE_DOCKER)
    script = _first("tpubuild-image")
    settings = load_text(ENVS[script.arch].read_text(), ENVS[script.arch])
    ref = image(settings, "tpubuild")
    proc, calls, stub_dir = sandbox.run(Script(script.step_id, script.shell, script.text,
                                               (*script.env, ("MANIFEST_ERROR", error)), script.arch),
                                        shell=("bash",))
    docker = (stub_dir / "docker.log").read_text().splitlines()
    assert docker[0] == f"manifest inspect {ref}"
    if built:
        assert proc.returncode == 0, proc.stderr
        assert docker[1:] == [f"build --pull --build-arg BASE={IMAGES['python']} --tag {ref} --file {DOCKERFILE} .",
                              f"push {ref}"]
        assert "is missing; building it once" in proc.stdout
    else:
        assert proc.returncode != 0 and docker == [f"manifest inspect {ref}"]
        assert f"cannot look up the builder image {ref}" in proc.stderr and "artifactregistry.writer" in proc.stderr
