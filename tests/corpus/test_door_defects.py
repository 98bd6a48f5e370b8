"""Issue 43's defects, one test each: where two doors (validate, plan, plan --all, render, trigger,
a dry run, dispatch) disagreed about one file, they now agree (builder/config/gate.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, SHIPPED, rewrite_env

pytestmark = pytest.mark.usefixtures("no_cloud")


def _repo(tmp_path: Path, base: Path = SHIPPED, **edit: str | None) -> Path:
    """A repository holding only the root values.env (``base`` with ``edit``)."""
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / "values.env").write_text(rewrite_env(base.read_text(), **edit))
    return repo / "values.env"


def _torchtpu(tmp_path: Path, **edit: str | None) -> Path:
    """A v6e-16 TorchTPU environment whose script exists beside it."""
    values = _repo(tmp_path, EXAMPLES / "vm-v6e-16.env", MODEL="torchtpu", TORCHTPU_SCRIPT="train.py", **edit)
    (values.parent / "train.py").write_text("print('hello')\n")
    return values


def test_env_protected_with_only_the_root_values_gets_an_approval(cli, tmp_path: Path) -> None:
    """The root values.env alone: ``trigger`` prints one push trigger, and ENV_PROTECTED="true"
    makes it wait for an approval (approvalConfig.approvalRequired), never dropped."""
    for protected, want in (("true", {"approvalRequired": True}), ("false", None)):
        values = _repo(tmp_path, ENV_PROTECTED=protected)
        code, out, err = cli("trigger", "--values", values, "--repo-owner", "me", "--repo-name", "tpu-env")
        assert code == 0, err
        body = yaml.safe_load(out)
        assert body.get("approvalConfig") == want, body
        assert ("after an approval" in body["description"]) == (protected == "true")


def test_torchtpu_make_before_break_is_planned_as_the_build_runs_it(cli, tmp_path: Path) -> None:
    """TorchTPU's launcher has no checkpoint probe: a make-before-break update makes the new slice
    first, but renders no tpu-prepare/checkpoint/resume (the probe the build would stop at), and the
    plan says the training on the old slice stops instead of promising a checkpoint and a resume."""
    values = _torchtpu(tmp_path)
    applied = values.with_name("applied.env")
    applied.write_text(values.read_text())
    values.write_text(rewrite_env(values.read_text(), TPU_ACCELERATOR_TYPE="v6e-32"))
    code, out, err = cli("render", "--values", values, "--action", "update", "--applied", applied)
    assert code == 0, err
    ids = [step["id"] for step in yaml.safe_load(out)["steps"]]
    assert {"tpu-apply", "tpu-swap", "tpu-release"} <= set(ids), ids
    assert not {"tpu-prepare", "tpu-checkpoint", "tpu-resume"} & set(ids), ids
    code, out, err = cli("plan", "--values", values, "--action", "update", "--applied", applied)
    assert code == 0, err
    [note] = [line for line in out.splitlines() if "make-before-break" in line]
    assert "torchtpu is not moved" in note and "tpubuild train torchtpu" in note, note
    assert "tpu-checkpoint" not in note and "tpu-resume" not in note, note


def test_the_torchtpu_declaration_matches_its_launcher() -> None:
    """A model declares HANDOVER=False exactly when its launcher has no plan_probe."""
    from builder.config.model_registry import MODELS, declared, load
    from builder.facts.source_models import SOURCE_MODELS

    for model in MODELS:
        launcher = load(SOURCE_MODELS, f"{model}.launcher")
        assert declared(None, model, "HANDOVER") == hasattr(launcher, "plan_probe"), model
