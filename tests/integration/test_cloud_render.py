"""Pure parts of the cloud area: the root cloudbuild.yaml, the trigger, the tarball, auto's map."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, REPO
from tests.support.fakes.fixtures import make_repo, unique_env


def test_committed_root_cloudbuild_is_what_bootstrap_renders(cli) -> None:
    code, out, err = cli("bootstrap", "--output", "-")
    assert code == 0, err
    assert (REPO / "cloudbuild.yaml").read_text() == out, "run `tpubuild bootstrap` and commit cloudbuild.yaml"
    code, out, err = cli("bootstrap", "--check", "--output", REPO / "cloudbuild.yaml")
    assert code == 0 and "up to date" in out


def test_bootstrap_writes_and_check_detects_drift(cli, tmp_path: Path) -> None:
    target = tmp_path / "cloudbuild.yaml"
    assert cli("bootstrap", "--output", target)[0] == 0
    target.write_text(target.read_text().replace("auto", "create", 1))
    code, out, err = cli("bootstrap", "--check", "--output", target)
    assert code == 1 and "differs from what `tpubuild bootstrap` renders" in err


def test_root_cloudbuild_loads_into_the_real_build_type() -> None:
    from google.cloud.devtools import cloudbuild_v1

    config = yaml.safe_load((REPO / "cloudbuild.yaml").read_text())
    build = cloudbuild_v1.Build.from_json(json.dumps(config))
    assert dict(build.substitutions) == {"_BUILD_ACTION": "auto", "_TPU": "default", "_MIG": "default",
                                         "_ALLOW_DATA_LOSS": "false", "_ALLOW_WIPE": "false", "_MOVE_TO": ""}
    [step] = build.steps
    assert step.id == "dispatch" and step.entrypoint == "bash"
    assert step.name.startswith("python:3.11.") and step.name != "python:latest"
    script = step.args[1]
    assert script.startswith("set -euo pipefail\n")
    assert 'tpubuild dispatch --action "$_BUILD_ACTION" --tpu "$_TPU" --mig "$_MIG"' in script
    assert '--allow-data-loss "$_ALLOW_DATA_LOSS" --allow-wipe "$_ALLOW_WIPE" --move-to "$_MOVE_TO"' in script
    assert "TPUBUILD_DISPATCH_BUILD=$BUILD_ID" in step.env
    assert build.options.substitution_option == cloudbuild_v1.BuildOptions.SubstitutionOption.MUST_MATCH
    assert build.timeout.total_seconds() == 86400


def test_root_cloudbuild_script_is_valid_bash(tmp_path: Path) -> None:
    import shutil
    import subprocess

    config = yaml.safe_load((REPO / "cloudbuild.yaml").read_text())
    script = tmp_path / "dispatch.sh"
    script.write_text(config["steps"][0]["args"][1])
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    if shutil.which("shellcheck"):
        assert subprocess.run(["shellcheck", "-s", "bash", "-e", "SC2154", str(script)],
                              capture_output=True).returncode == 0


def test_trigger_is_a_github_push_trigger_for_auto(cli) -> None:
    from google.cloud.devtools import cloudbuild_v1

    code, out, err = cli("--values", REPO / "values.env", "trigger", "--repo-owner", "acme",
                         "--repo-name", "tpu-env", "--branch", "release/1.0")
    assert code == 0, err
    body = yaml.safe_load(out)
    trigger = cloudbuild_v1.BuildTrigger.from_json(json.dumps(body))
    assert trigger.github.owner == "acme" and trigger.github.name == "tpu-env"
    assert trigger.github.push.branch == r"^release/1\.0$"
    # the same rule as an environment's pair (tests/integration/test_gitops.py), plus the config it reads
    assert list(trigger.included_files) == ["values.env", "builder/**", "modules/**", "env_setup/**", "models/**",
                                            "setup.cfg", "pyproject.toml", "cloudbuild.yaml"]
    assert list(trigger.ignored_files) == ["**/*.md", "docs/**"]
    assert trigger.substitutions["_BUILD_ACTION"] == "auto"
    assert trigger.filename == "cloudbuild.yaml"
    assert trigger.name == "tpubuild-tpu-dev1-auto"


def test_trigger_on_a_node_file_is_refused_as_auto_is(cli) -> None:
    """Every build of the trigger runs auto, which refuses a TPU Node file: the trigger is refused
    with the same one line (the fix: tpubuild migrate), and prints nothing."""
    from tests.conftest import NODE

    code, out, err = cli("--values", NODE, "trigger", "--repo-owner", "acme", "--repo-name", "tpu-env")
    _, _, auto = cli("--values", NODE, "plan", "--action", "auto")
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "run tpubuild migrate" in err
    assert err == auto


def test_the_root_trigger_starts_on_the_code_it_runs_not_on_docs(cli) -> None:
    from tests.support.cloudbuild_filter import starts

    code, out, err = cli("--values", REPO / "values.env", "trigger", "--repo-owner", "acme", "--repo-name", "x")
    body = yaml.safe_load(out)
    for changed in (["builder/planning/plan.py"], ["setup.cfg"], ["pyproject.toml"], ["cloudbuild.yaml"],
                    ["values.env"], ["modules/tpu_vm/main.tf", "README.md"]):
        assert starts(body, changed), changed
    for changed in (["README.md"], ["docs/cloud.md", "modules/tpu_vm/README.md"], ["tools/x.py"]):
        assert not starts(body, changed), changed


@pytest.mark.parametrize("args, key", [
    (["--repo-owner", "acme", "--repo-name", "x", "--connection", "gh"], "--connection"),
    (["--repo-owner", "acme", "--repo-name", "x", "--region", "europe-west4"], "--region"),
    (["--repo-owner", "acme", "--repo-name", "x", "--linked-repository", "r"], "--linked-repository"),
    (["--repo-owner", "acme", "--repo-name", "x", "--connection", "gh", "--region", "Europe"], "--region"),
    (["--repo-owner", "acme", "--repo-name", "x", "--connection", "g h", "--region", "europe-west4"], "--connection"),
    (["--repo-owner", "acme corp", "--repo-name", "x"], "--repo-owner"),
    (["--repo-owner", "acme", "--repo-name", "a/b"], "--repo-name"),
    (["--repo-owner", "acme", "--repo-name", "x", "--branch", "a..b"], "--branch"),
])
def test_trigger_bad_names_exit_2(cli, args, key) -> None:
    code, out, err = cli("--values", REPO / "values.env", "trigger", *args)
    assert code == 2 and f"tpubuild: error: {key}:" in err and out == ""


def test_tarball_is_deterministic_and_content_addressed(tmp_path: Path) -> None:
    import gzip
    import hashlib
    import os

    from builder.cloud import source

    values = make_repo(tmp_path / "a", "t1")
    files = source.collect(values.parent, values.read_bytes(), {"tpu": {"b": 1, "a": [2]}})
    one = source.pack(files)
    os.utime(values.parent / "modules/mig/main.tf", (1, 1))  # mtimes do not matter
    two = source.pack(source.collect(values.parent, values.read_bytes(), {"tpu": {"a": [2], "b": 1}}))
    assert one.tgz == two.tgz and one.sha256 == two.sha256
    assert hashlib.sha256(gzip.decompress(one.tgz)).hexdigest() == one.sha256
    assert one.object_name == f"source/{one.sha256}.tgz"
    with tarfile.open(fileobj=io.BytesIO(one.tgz)) as tar:
        names = tar.getnames()
        assert names == sorted(names)
        assert json.loads(tar.extractfile("tfvars/tpu.tfvars.json").read()) == {"a": [2], "b": 1}
    three = source.pack(source.collect(values.parent, values.read_bytes() + b"#\n", {"tpu": {"a": [2], "b": 1}}))
    assert three.sha256 != one.sha256


def _settings(tmp_path: Path, **overrides: str):
    from builder.config import load

    # mig: the architecture with the most plan modules fed by keys (node's roots are destroy only)
    return load(make_repo(tmp_path / unique_env(), "t1", base=EXAMPLES / "mig-v6e-16-spot.env", **overrides))


def test_auto_key_map(tmp_path: Path) -> None:
    from builder.cloud import auto

    mig = ("filestore", "shared_pd", "tpu", "mig")
    old = _settings(tmp_path)

    def decide(**changes: str) -> auto.Decision:
        return auto.decide(_settings(tmp_path, **changes), old, plan_modules=mig, build_id="b1")

    assert decide().action == "none"
    assert decide(TPU_ACCELERATOR_TYPE="v6e-32").only == {"mig"}  # the slice; its access stays
    assert decide(TPU_PROVISIONING="standard").only == {"mig"}
    assert decide(BOOT_DISK_SIZE_GB="300").only == {"mig"}
    assert decide(SHARED_FS_CAPACITY="2048").only == {"filestore"}
    assert decide(SHARED_FS_TIER="STANDARD").action == "none"  # same tier, seed-era name
    assert decide(SHARED_PD_DISK_SIZE="600").only == {"shared_pd"}
    # the seeder copies the new dataset, and the hosts' read grant on its bucket moves with it
    assert decide(GCS_DATASET="gs://other-bucket/data/*").only == {"shared_pd", "tpu", "mig"}
    assert decide(MOUNT_POINT="/mnt/data").only == {"mig"}
    model = decide(ROBERTA_TRAIN_FILE="other.txt")  # read at training time
    assert model.action == "none" and "ROBERTA_TRAIN_FILE" in model.reasons[0]
    protect = decide(ENV_PROTECTED="true")  # read by the GitOps triggers only
    assert protect.action == "none" and "ENV_PROTECTED" in protect.reasons[0] and "triggers" in protect.reasons[0]
    for key, value in (("NETWORK", "other"), ("ZONE", "us-east5-a"), ("PROJECT_ID", "other-project")):
        with pytest.raises(Exception, match=f"{key}: changed from"):
            decide(**{key: value})
    assert auto.decide(old, None, plan_modules=mig).action == "create"


def test_auto_vm_hosts_are_the_tpu(tmp_path: Path) -> None:
    from builder.cloud import auto
    from builder.config import load

    def vm(**changes: str):
        values = make_repo(tmp_path / unique_env(), "t1")
        from tests.conftest import rewrite_env

        values.write_text(rewrite_env((EXAMPLES / "vm-v4-32.env").read_text(), **changes))
        return load(values)

    old = vm()
    mods = ("filestore", "shared_pd", "tpu")
    assert auto.decide(vm(MOUNT_POINT="/mnt/x"), old, plan_modules=mods).only == {"tpu"}
    assert auto.decide(vm(SHARED_FS="other"), old, plan_modules=mods).only == {"filestore", "tpu"}
    assert auto.decide(vm(GCS_DATASET="gs://bucket-two/x/*"), old, plan_modules=mods).only == {"shared_pd", "tpu"}
    assert auto.decide(vm(TPU_ACCELERATOR_TYPE="v4-64"), old, plan_modules=mods).only == {"tpu"}


def test_auto_sources_outstanding_and_absent(tmp_path: Path) -> None:
    from builder.cloud import auto

    s = _settings(tmp_path)
    node = ("filestore", "shared_pd", "tpu", "mig")
    d = auto.decide(s, s, plan_modules=node, sources_then={"tpu": "a", "mig": "b"},
                    sources_now={"tpu": "a", "mig": "c"}, outstanding=frozenset({"filestore"}))
    assert d.only == {"mig", "filestore"}
    d = auto.decide(s, s, plan_modules=node, outstanding=frozenset({"mig"}), absent=frozenset({"mig"}))
    assert d.action == "none" and any("absent" in r for r in d.reasons)
    d = auto.decide(s, s, plan_modules=node, absent=frozenset(node), build_id="b9")
    assert d.action == "none" and "destroyed by build b9" in d.reasons[0]


def test_digests_follow_local_child_modules(tmp_path: Path) -> None:
    """auto re-applies every root whose Terraform changed, also through a shared child module."""
    import shutil

    from builder.cloud import auto
    from builder.config import load

    for folder in ("modules", "env_setup"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    values = tmp_path / "values.env"
    values.write_bytes((EXAMPLES / "mig-v6e-16-spot.env").read_bytes())  # tpu and shared_pd call host_identity
    settings = load(values)
    every = ("filestore", "shared_pd", "tpu", "mig")
    assert "modules/host_identity" in auto.terraform_dirs(tmp_path, "modules/tpu_mig_access")
    assert "modules/ttl" in auto.terraform_dirs(tmp_path, "modules/tpu_mig")
    before = auto.digests(settings, tmp_path, every)
    child = tmp_path / "modules" / "host_identity" / "main.tf"
    child.write_text(child.read_text() + "\n# changed\n")
    after = auto.digests(settings, tmp_path, every)
    changed = {m for m in every if before[m] != after[m]}
    assert changed == {"tpu", "shared_pd"}  # the slice's access and shared_pd's seeder use host_identity
