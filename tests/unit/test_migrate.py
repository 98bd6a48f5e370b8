"""`tpubuild migrate` turns seed-era and TPU Node values.env files into TPU VM files;
TPU Node is read-only legacy (create/update/auto refused, destroy/status still work)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from builder.config import load
from tests.conftest import NODE, REPO, SHIPPED
from tests.unit.test_config import SEED_VALUES

from google.cloud.devtools.cloudbuild_v1.types import Build  # noqa: E402  (a dependency: setup.cfg)


def _repo_copy(tmp_path: Path, name: str, text: str) -> Path:
    """values.env in a folder that has the repository's env_setup/ and models/ (as a clone has)."""
    for folder in ("env_setup", "models"):
        target = tmp_path / folder
        if not target.exists():
            target.symlink_to(REPO / folder)
    path = tmp_path / name
    path.write_text(text)
    return path


def _migrate(cli, path: Path, *extra: str) -> str:
    code, out, err = cli("migrate", "--values", path, *extra)
    assert code == 0, err
    return out


@pytest.mark.parametrize("source", ["seed", "node"])
def test_migrate_then_validate_plan_render_and_a_second_migrate_is_a_no_op(cli, tmp_path: Path, source: str) -> None:
    original = SEED_VALUES if source == "seed" else NODE.read_text()
    path = _repo_copy(tmp_path, "values.env", original)
    before = load(path)
    assert before.arch == "node"
    # unmigrated: plan says what to do instead of failing on the seed's missing scripts
    code, out, err = cli("plan", "--values", path)
    assert code == 2 and out == ""
    [line] = [ln for ln in err.splitlines() if ln.startswith("tpubuild: error: ")]
    assert "run tpubuild migrate" in line and "2025-04-25" in line
    key = "TPU_PYTORCH_VERSION" if source == "seed" else "TPU_ARCH"  # the line that makes it node
    assert line.startswith(f"tpubuild: error: {path}:{before.line_of(key)}: {key}:")

    out = _migrate(cli, path)
    assert "before → after:" in out and "TPU_RUNTIME_VERSION='tpu-ubuntu2204-base'" in out
    assert (tmp_path / "values.env.bak").read_text() == original
    migrated_text = path.read_text()
    after = load(path)
    assert after.arch == "vm" and after.runtime_version == "tpu-ubuntu2204-base"
    # same environment: name, project, zone, Filestore and PD settings
    for field in ("env_name", "project_id", "zone", "region", "accelerator_type", "shared_fs_name",
                  "shared_fs_capacity_gb", "shared_fs_tier", "shared_pd_attach", "shared_pd_size_gb",
                  "gcs_dataset", "mount_point", "network", "tpu_preemptible"):
        assert getattr(after, field) == getattr(before, field), field
    # an attached disk becomes pd-balanced: TPU VMs attach Balanced Persistent Disk only
    assert after.shared_pd_type == ("pd-balanced" if before.shared_pd_attach else before.shared_pd_type)
    # node-only keys are commented out with a one-line reason, comments are kept
    for key in ("MACHINE_TYPE", "SOURCE_IMAGE_FAMILY", "SOURCE_IMAGE_PROJECT", "GCE_IMAGE_VERSION", "BOOT_DISK_SIZE_GB"):
        assert key not in after.lines, key
        i = next(n for n, ln in enumerate(migrated_text.splitlines()) if ln.startswith(f"# {key}="))
        assert migrated_text.splitlines()[i - 1].startswith("# tpubuild migrate: ")
    for comment in (ln for ln in original.splitlines() if ln.lstrip().startswith("#")):
        assert comment in migrated_text
    if source == "seed":
        # the seed's own scripts are recognised and cleared with a note; colour keys stay
        assert after.mig_setup_script == "" and after.mig_seed_data_prep_script == ""
        assert "env_setup/scripts/setup_mig.sh was the seed's MIG setup" in migrated_text
        assert "RED='\\033[0;31m'" in migrated_text and "NC='\\033[0m' # No Color" in migrated_text
        assert "# SOURCE_IMAGE_BASE=" in migrated_text  # it referred to GCE_IMAGE_VERSION
        assert not [w for w in after.warnings if "does not exist" in w]
    else:
        assert "# node only: a private /29 for the TPU workers" in migrated_text  # comment kept
        assert "TPU_CIDR_BLOCK" not in after.lines

    code, out, err = cli("validate", "--values", path)
    assert code == 0 and "vm architecture" in out, err
    code, out, err = cli("plan", "--values", path)
    assert code == 0, err
    assert "architecture: vm" in out and "apply    tpu        TPU VM" in out
    code, out, err = cli("render", "--values", path, "--format", "json")
    assert code == 0, err
    Build.from_json(out)  # the real Cloud Build type

    # idempotent: nothing to migrate, the file and its .bak are untouched
    bak = (tmp_path / "values.env.bak").read_text()
    out = _migrate(cli, path)
    assert "nothing to migrate" in out
    assert path.read_text() == migrated_text and (tmp_path / "values.env.bak").read_text() == bak


def test_migrate_output_leaves_the_original(cli, tmp_path: Path) -> None:
    path = _repo_copy(tmp_path, "values.env", NODE.read_text())
    out_file = tmp_path / "vm.env"
    out = _migrate(cli, path, "--output", out_file)
    assert f"into {out_file}" in out
    assert path.read_text() == NODE.read_text() and not (tmp_path / "values.env.bak").exists()
    assert load(out_file).arch == "vm"


def test_migrate_maps_external_ip_and_keeps_a_real_setup_script(cli, tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "host.sh").write_text("#!/bin/bash\nset -euo pipefail\n")
    text = NODE.read_text().replace('MIG_SETUP_SCRIPT=""', 'MIG_SETUP_SCRIPT="scripts/host.sh"')
    text += 'MIG_EXTERNAL_IP="true"\n'
    path = _repo_copy(tmp_path, "values.env", text)
    out = _migrate(cli, path)
    after = load(path)
    assert after.tpu_external_ips is True and "MIG_EXTERNAL_IP" not in after.lines
    assert after.mig_setup_script == "scripts/host.sh"
    assert "now runs on every TPU VM host" in out
    from builder.inputs import tfvars

    assert tfvars.for_module(after, "tpu")["setup_script"] == "scripts/host.sh"  # the boot script runs it


def test_shipped_file_has_nothing_to_migrate(cli, tmp_path: Path) -> None:
    path = tmp_path / "values.env"
    shutil.copy(SHIPPED, path)
    assert "nothing to migrate" in _migrate(cli, path)
    assert path.read_bytes() == SHIPPED.read_bytes() and not (tmp_path / "values.env.bak").exists()


# ---- node is read-only legacy ----

@pytest.mark.parametrize("action", ["create", "update"])
def test_node_apply_is_refused_in_one_line(cli, action: str) -> None:
    for command in ("plan", "render"):
        code, out, err = cli(command, "--values", NODE, "--action", action)
        assert code == 2 and out == ""
        [line] = err.strip().splitlines()
        assert line.startswith(f"tpubuild: error: {NODE}:18: TPU_ARCH: ")
        assert "2025-04-25" in line and "run tpubuild migrate" in line


def test_node_destroy_still_renders_into_the_real_build_type(cli) -> None:
    for args in ([], ["--tpu"], ["--mig"], ["--tpu", "--mig"]):
        code, out, err = cli("render", "--values", NODE, "--action", "destroy", *args, "--format", "json")
        assert code == 0, err
        build = Build.from_json(out)
        ids = [s.id for s in build.steps]
        assert any(i.startswith("tpu-") or i.startswith("mig-") for i in ids)
        assert "-destroy" in out  # terraform plan -destroy: the node is taken down, never applied
    config = json.loads(cli("render", "--values", NODE, "--action", "destroy", "--format", "json")[1])
    assert any("modules/tpu_node" in json.dumps(s) for s in config["steps"])


def test_plan_on_a_vm_file_with_a_seed_script_says_run_migrate(cli, make_env) -> None:
    path = make_env(SHIPPED, MIG_SEED_DATA_PREP_SCRIPT="roberta/env_setup/data_prep_seed_shared_disk_pd.sh")
    code, out, err = cli("plan", "--values", path)
    assert code == 2 and out == ""
    [line] = [ln for ln in err.splitlines() if ln.startswith("tpubuild: error: ")]
    assert "MIG_SEED_DATA_PREP_SCRIPT:" in line and "seed's shared-PD preparation" in line
    assert line.endswith("run tpubuild migrate (it clears the seed's script paths)")
    assert "nothing to migrate" not in _migrate(cli, path)
    assert load(path).mig_seed_data_prep_script == ""
    code, out, err = cli("plan", "--values", path)
    assert code == 0, err
