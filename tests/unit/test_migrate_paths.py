"""`tpubuild migrate` moves a file onto the path Google recommends for its generation (the
record's ``preferred_path``): Compute Engine (mig) for the generations offered there, the Cloud
TPU API (vm) for the others; a file that says TPU_ARCH="vm" asked for that path and keeps it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builder.config import load
from builder.config.migrate import target_path
from builder.facts import generations
from tests.conftest import EXAMPLES, NODE, SHIPPED
from tests.unit.test_migrate import _migrate, _repo_copy

VM_FILES = [p for p in sorted(EXAMPLES.glob("*.env")) if load(p).arch == "vm"]
#: TPU VM examples of generations Compute Engine offers (v5p, v6e in the records today).
ON_BOTH = [p for p in VM_FILES if load(p).topology.record.offers("mig")]


def _without_arch(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not re.match(r"\s*(export\s+)?TPU_ARCH\s*=", ln)) + "\n"


@pytest.mark.parametrize("values", [SHIPPED, NODE, *sorted(EXAMPLES.glob("*.env"))], ids=lambda p: p.name)
def test_the_target_is_the_generations_preferred_path_unless_the_file_asks_for_vm(values: Path) -> None:
    s = load(values)
    preferred = generations.preferred_path(s.topology.record)
    asked_vm = s.arch == "vm" and s.raw.get("TPU_ARCH") == "vm"
    assert target_path(s) == ("vm" if asked_vm else preferred)


def test_some_vm_example_is_of_a_generation_compute_engine_offers() -> None:
    assert ON_BOTH, "the examples show the Cloud TPU API path kept for a generation that has both"


@pytest.mark.parametrize("values", ON_BOTH, ids=lambda p: p.name)
def test_a_vm_file_that_did_not_ask_for_vm_moves_to_compute_engine(cli, tmp_path: Path, values: Path) -> None:
    before = load(values)
    path = _repo_copy(tmp_path, "values.env", _without_arch(values.read_text()))
    out = _migrate(cli, path)
    assert f"migrated to {generations.api('mig').label}" in out
    after = load(path)
    assert after.arch == "mig" and after.runtime_version == ""
    for field in ("env_name", "project_id", "zone", "accelerator_type", "provisioning", "shared_fs_tier",
                  "shared_pd_attach", "model"):
        assert getattr(after, field) == getattr(before, field), field
    assert f"# TPU_RUNTIME_VERSION=\"{before.runtime_version}\"" in path.read_text()
    code, out, err = cli("validate", "--values", path)
    assert code == 0 and "mig architecture (Compute Engine" in out, err
    code, out, err = cli("plan", "--values", path, "--applied", "none")
    assert code == 0, err
    assert "architecture: mig" in out and f"path:         {generations.api('mig').label}" in out
    assert "nothing to migrate" in _migrate(cli, path)  # a second run changes nothing


@pytest.mark.parametrize("values", ON_BOTH, ids=lambda p: p.name)
def test_a_file_that_asks_for_vm_keeps_it_and_is_told_the_recommended_path(cli, tmp_path: Path,
                                                                           values: Path) -> None:
    path = _repo_copy(tmp_path, "values.env", values.read_text())
    out = _migrate(cli, path)
    assert "nothing to migrate" in out and path.read_text() == values.read_text()
    assert f"note: TPU_ARCH=\"vm\" is kept as the file asks; {generations.api('mig').label}" in out


@pytest.mark.parametrize("values", [p for p in VM_FILES if p not in ON_BOTH], ids=lambda p: p.name)
def test_a_generation_only_the_cloud_tpu_api_offers_stays_vm(cli, tmp_path: Path, values: Path) -> None:
    path = _repo_copy(tmp_path, "values.env", _without_arch(values.read_text()))
    text = path.read_text()
    assert "nothing to migrate" in _migrate(cli, path) and path.read_text() == text
