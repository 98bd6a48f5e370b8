"""Every shipped example can train as shipped; a file that cannot gets a validate warning saying why."""

from __future__ import annotations

import pytest

from builder.config import load
from builder.config.readiness import train_warnings
from tests.conftest import REPO, rewrite_env

EXAMPLES = sorted((REPO / "examples").glob("*.env"))


@pytest.mark.parametrize("values", EXAMPLES, ids=lambda p: p.name)
def test_shipped_examples_validate_plan_and_can_train(values, cli):
    code, out, err = cli("--values", values, "validate")
    assert code == 0 and ": ok: " in out, err
    assert "tpubuild train" not in err
    assert cli("--values", values, "plan", "--applied", "none")[0] == 0


def _variant(tmp_path, **overrides):
    path = tmp_path / "v.env"
    path.write_text(rewrite_env((REPO / "examples" / "vm-v5litepod-16.env").read_text(), **overrides))
    return path


def test_unattached_disk_means_train_cannot_run(tmp_path, cli):
    path = _variant(tmp_path, SHARED_PD_DISK_ATTACH="false")
    code, _, err = cli("--values", path, "validate")
    assert code == 0
    [line] = [ln for ln in err.splitlines() if "tpubuild train" in ln]
    number = path.read_text().splitlines().index('SHARED_PD_DISK_ATTACH="false"') + 1
    assert f"{path}:{number}:" in line and "SHARED_PD_DISK_ATTACH is false" in line and "gs://" in line


def test_attached_but_empty_disk_is_named(tmp_path):
    s = load(_variant(tmp_path, GCS_DATASET=None))
    assert any("nothing fills the disk" in w for w in train_warnings(s))
    assert s.warnings == ()  # only validate says it; load() does not


def test_data_from_gcs_needs_no_disk(tmp_path):
    s = load(_variant(tmp_path, SHARED_PD_DISK_ATTACH="false", ROBERTA_DATA_SOURCE="gs://my-bucket/wikitext"))
    assert train_warnings(s) == []
