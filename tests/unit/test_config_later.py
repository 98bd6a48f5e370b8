"""builder/config/later.py: `tpubuild validate` refuses what a later command would, with the same
line, and reports every mistake of a file in one run (root causes, not their echoes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import model_registry
from tests.conftest import EXAMPLES, NODE, REPO, SHIPPED, rewrite_env

pytestmark = pytest.mark.usefixtures("no_cloud")

TPU7X = EXAMPLES / "mig-tpu7x-128.env"


def _errors(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("tpubuild: error: ")]


def _line(path: Path, key: str) -> int:
    return next(n for n, ln in enumerate(path.read_text().splitlines(), 1) if ln.startswith(f"{key}="))


# ---------------------------------------------------------------- the model's own rules

@pytest.mark.parametrize("overrides, key", [
    ({"TPU_ACCELERATOR_TYPE": "v3-128", "ROBERTA_TOTAL_BATCH": "1536"}, "ROBERTA_TOTAL_BATCH"),  # 2048 per step
    ({"ROBERTA_TOTAL_BATCH": "1000"}, "ROBERTA_TOTAL_BATCH"),  # not a multiple of 32 x 16
    ({"ROBERTA_WARMUP_UPDATES": "200000"}, "ROBERTA_WARMUP_UPDATES"),
], ids=["v3-128-batch-1536", "batch-1000", "warmup"])
def test_validate_refuses_what_train_refuses_with_the_same_line(cli, make_env, overrides, key) -> None:
    path = make_env(SHIPPED, **overrides)
    code, out, err = cli("train", "roberta", "--values", path, "--dry-run")
    assert code == 2
    [train] = _errors(err)
    assert f"{path}:{_line(path, key)}: {key}: " in train
    code, out, err = cli("validate", "--values", path)
    assert code == 2 and out == "" and _errors(err) == [train], err
    # create would bill a slice the model cannot use: plan refuses it too; destroy still works
    code, _, err = cli("plan", "--values", path, "--applied", "none")
    assert code == 2 and _errors(err) == [train]
    assert cli("plan", "--values", path, "--action", "destroy", "--applied", "none")[0] == 0


def test_unknown_model_is_one_line_listing_the_known_ones(cli, make_env) -> None:
    path = make_env(SHIPPED, MODEL="bert")
    code, out, err = cli("validate", "--values", path)
    [line] = _errors(err)
    known = model_registry.available(path.parent)
    assert code == 2 and known and f"{path}:{_line(path, 'MODEL')}: MODEL: 'bert' is not a model" in line
    assert f"the known models are {', '.join(known)}" in line and 'MODEL=""' in line


def test_a_default_model_says_it_is_the_default(cli, tmp_path: Path) -> None:
    """A file without MODEL selects roberta; its refusal says so, and how to select none."""
    path = tmp_path / "v.env"
    path.write_text(rewrite_env(SHIPPED.read_text(), MODEL=None, TPU_ACCELERATOR_TYPE="v3-256",
                                **{k: None for k in ("ROBERTA_TOTAL_BATCH", "ROBERTA_BATCH_PER_DEVICE")}))
    code, _, err = cli("validate", "--values", path)
    [line] = _errors(err)
    assert code == 2 and ": ROBERTA_TOTAL_BATCH: " in line and 'MODEL is "roberta" by default; MODEL="" selects none' in line
    path.write_text(path.read_text() + 'MODEL=""\n')
    assert cli("validate", "--values", path)[0] == 0


def test_the_core_runs_any_model_plugins_own_check(cli, tmp_path: Path) -> None:
    """A model of the user's own (models/<name>/ beside values.env) declares its rules in its
    keys.py ``check``; validate reports them though builder/ names no such model."""
    toy = tmp_path / "models" / "toy"
    toy.mkdir(parents=True)
    members = "\n".join(f"def {name}(*a, **k):\n    return []\n" for name in model_registry.LAUNCHER_MEMBERS[2:])
    (toy / "launcher.py").write_text("from dataclasses import dataclass\n\n\n@dataclass\nclass Job:\n    listing: tuple = ()\n"
                                     "\n\nclass LaunchError(ValueError):\n    pass\n\n\n" + members)
    (toy / "keys.py").write_text("KEYS = ()\n\n\ndef check(settings):\n"
                                 "    return [('TPU_ACCELERATOR_TYPE', f'toy needs 8 hosts, not {settings.hosts}', "
                                 "'choose v3-64')]\n")
    path = tmp_path / "values.env"
    path.write_text(rewrite_env(SHIPPED.read_text(), MODEL="toy"))
    code, _, err = cli("validate", "--values", path)
    assert code == 2 and _errors(err) == [f"tpubuild: error: {path}:{_line(path, 'TPU_ACCELERATOR_TYPE')}: "
                                          "TPU_ACCELERATOR_TYPE: toy needs 8 hosts, not 4; choose v3-64"]


# ---------------------------------------------------------------- every mistake in one run

def test_four_mistakes_are_four_lines_of_one_run(cli, make_env) -> None:
    edits = {"SHARED_FS_CAPACITY": "500", "TPU_ACCELERATOR_TYPE": "v3-33", "SHARED_PD_DISK_TYPE": "pd-fast",
             "MOUNT_POINT": "mnt/common"}
    path = make_env(SHIPPED, **edits)
    code, _, err = cli("validate", "--values", path)
    lines = _errors(err)
    assert code == 2 and len(lines) == 4, err
    for key in edits:  # in file order, each at its own line
        assert any(ln.startswith(f"tpubuild: error: {path}:{_line(path, key)}: {key}: ") for ln in lines), key
    assert "4 problems" in err


def test_a_bad_accelerator_hides_only_the_rules_that_need_the_slice(cli, make_env) -> None:
    path = make_env(SHIPPED, TPU_ACCELERATOR_TYPE="v3-33", REGION="us-central1", SHARED_FS_TIER="BASIC_SSD")
    code, _, err = cli("validate", "--values", path)
    assert code == 2 and [ln.split(": ")[3] for ln in _errors(err)] == ["REGION", "TPU_ACCELERATOR_TYPE",
                                                                        "SHARED_FS_CAPACITY"], err


def test_mig_on_a_generation_without_mig_is_its_root_cause_only(cli, make_env) -> None:
    """v3 has no MIG of TPU VMs: say use TPU_ARCH=vm, not also 'remove TPU_RUNTIME_VERSION'
    (which only follows from mig)."""
    path = make_env(SHIPPED, TPU_ARCH="mig")
    code, _, err = cli("validate", "--values", path)
    [line] = _errors(err)
    assert code == 2 and ": TPU_ACCELERATOR_TYPE: v3-32 is a v3 slice" in line and 'set TPU_ARCH="vm"' in line
    assert "TPU_RUNTIME_VERSION" not in line


# ---------------------------------------------------------------- a legacy TPU Node file

def test_node_file_validate_says_what_plan_will_do(cli) -> None:
    code, out, err = cli("validate", "--values", NODE)
    [line] = _errors(err)
    assert code == 2 and out == ""
    assert f"{NODE}:{_line(NODE, 'TPU_ARCH')}: TPU_ARCH: " in line
    assert "refuse create, update and auto" in line and "destroy and status still work" in line
    assert "tpubuild migrate" in line
    code, _, err = cli("plan", "--values", NODE, "--applied", "none")
    assert code == 2 and "create is refused" in err
    for verb in ("plan", "render"):  # destroy keeps working on such a file
        assert cli(verb, "--values", NODE, "--action", "destroy", "--applied", "none")[0] == 0


# ---------------------------------------------------------------- tpu7x

def test_tpu7x_example_validates_and_selects_no_model(cli) -> None:
    code, out, err = cli("validate", "--values", TPU7X)
    assert code == 0 and ": ok: " in out, err
    assert cli("run", "--values", TPU7X, "--dry-run", "--", "python3", "train.py")[0] == 0


def test_tpu7x_with_roberta_is_refused_by_validate_as_by_train(cli, make_env) -> None:
    path = make_env(TPU7X, MODEL="roberta")
    code, _, err = cli("train", "roberta", "--values", path, "--dry-run")
    [train] = _errors(err)
    assert code == 2 and "no proven PyTorch/XLA device count for tpu7x" in train and 'MODEL=""' in train
    code, _, err = cli("validate", "--values", path)
    assert code == 2 and _errors(err) == [train]


def test_tpu7x_on_vm_blames_the_architecture(cli, make_env) -> None:
    path = make_env(SHIPPED, TPU_ACCELERATOR_TYPE="tpu7x-128", ZONE="us-central1-c", REGION=None)
    code, _, err = cli("validate", "--values", path)
    [line] = _errors(err)
    assert code == 2 and ": TPU_ARCH: " in line and 'set TPU_ARCH="mig"' in line and "Traceback" not in err


def test_repo_root_is_the_models_folder_of_the_examples() -> None:
    """The examples find the shipped models (the tests above rely on it)."""
    assert model_registry.available(EXAMPLES) == model_registry.available(REPO) != []


def test_a_vm_file_without_runtime_keeps_its_architecture(cli, make_env) -> None:
    """TPU_ARCH="vm" is settled without a runtime: the fix names the slice's TPU VM runtime, and the
    rules that read the architecture still run."""
    path = make_env(SHIPPED, TPU_RUNTIME_VERSION=None, SHARED_PD_DISK_TYPE="pd-ssd")
    code, _, err = cli("validate", "--values", path)
    lines = _errors(err)
    assert code == 2 and len(lines) == 2, err
    assert ": SHARED_PD_DISK_TYPE: " in lines[0]  # file order; the key the file lacks comes last
    assert ": TPU_PYTORCH_VERSION: " in lines[1] and 'TPU_RUNTIME_VERSION="tpu-ubuntu2204-base"' in lines[1]
