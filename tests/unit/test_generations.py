"""A TPU generation is one record (builder/facts/generations.py, the rows of builder/data/tpu_offers.json):
the records are consistent, what shell and Terraform keep is generated from them, names the record
knows under another name are answered with Google's, and adding a generation is adding its record."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from builder.config.keys import KEYS
from builder.facts import generations
from builder.facts.errors import BadInput
from builder.facts.topology import mig_shape, parse
from tests.conftest import EXAMPLES, REPO


KEY_TYPES = next(k for k in KEYS if k.name == "SHARED_PD_DISK_TYPE").parse


def _sync() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sync_generations", REPO / "tools" / "sync_generations.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# ---- the records ----

@pytest.mark.parametrize("gen", generations.records(), ids=lambda g: g.name)
def test_a_record_is_consistent(gen: generations.Generation) -> None:
    assert gen.name_counts in ("TensorCores", "chips") and set(gen.paths) <= set(generations.PATHS)
    assert gen.cores_per_chip == 1 or gen.name_counts == "TensorCores"
    assert bool(gen.runtimes) == gen.offers("vm"), "a vm generation has a runtime; no other has one"
    assert (gen.mig is not None) == gen.offers("mig")
    # the dataset disk: at least one type (the first is SHARED_PD_DISK_TYPE's default), each one the key takes
    assert gen.shared_pd_types and all(KEY_TYPES(t) == t for t in gen.shared_pd_types)
    for size in gen.sizes:
        t = parse(f"{gen.prefix}-{size}")
        assert t.chips * gen.cores_per_chip == t.cores and t.chips % t.hosts == 0
        assert t.hosts == 1 or t.chips == t.hosts * gen.chips_per_host
        if gen.mig is not None:
            shape = mig_shape(t)
            x, y, z = shape.dims
            assert x * y * z == t.chips == shape.vms * shape.chips_per_vm and shape.vms == t.hosts
    for accel in gen.zones:
        assert accel == "*" or parse(accel).generation == gen.name
    names = [w for g in generations.records() for w in {g.name, g.prefix, *g.aliases}]
    assert len(names) == len(set(names)), "a name or alias belongs to one generation"


def test_every_accelerator_type_is_named_by_exactly_one_record() -> None:
    for gen in generations.records():
        assert generations.by_prefix(gen.prefix) is gen and generations.get(gen.name.upper()) is gen


# ---- what shell and Terraform keep ----

def test_shell_and_terraform_lists_are_generated_from_the_records() -> None:
    """startup.sh and modules/*/variables.tf cannot import Python: their lines of generation facts
    are what tools/sync_generations.py writes from the records."""
    stale = _sync().stale()
    assert stale == [], f"{stale}: run python tools/sync_generations.py"


def test_the_generated_lines_name_the_records_paths() -> None:
    sync = _sync()
    startup = (REPO / sync.STARTUP).read_text()
    assert "^(" + "|".join(g.prefix for g in generations.on_path("mig")) + ")-[0-9]+$" in startup
    vm = (REPO / sync.TPU_VM).read_text()
    assert "^(" + "|".join(g.prefix for g in generations.on_path("vm")) + ")-[0-9]+$" in vm
    mig = (REPO / sync.TPU_MIG).read_text()
    for gen in generations.on_path("mig"):
        assert gen.mig is not None and all(f'"{m}"' in mig for m in gen.mig.machine_types())


# ---- naming: Google's name for a generation the user called otherwise ----

_OTHER_NAMES = [(g, word) for g in generations.records() for word in dict.fromkeys((g.name, *g.aliases))
                if word != g.prefix]


@pytest.mark.parametrize("gen,word", _OTHER_NAMES, ids=[w for _, w in _OTHER_NAMES])
def test_another_name_of_a_generation_suggests_the_records_name(gen: generations.Generation, word: str) -> None:
    size = gen.sizes[len(gen.sizes) // 2]
    with pytest.raises(BadInput, match=rf"; did you mean {gen.prefix}-{size}\?$"):
        parse(f"{word}-{size}")


def test_v5e_16_is_answered_with_v5litepod_16_on_the_key_line(make_env, cli) -> None:
    path = make_env(EXAMPLES / "vm-v5litepod-16.env", TPU_ACCELERATOR_TYPE="v5e-16")
    code, out, err = cli("validate", "--values", path)
    line = path.read_text().splitlines().index('TPU_ACCELERATOR_TYPE="v5e-16"') + 1
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"tpubuild: error: {path}:{line}: TPU_ACCELERATOR_TYPE: unknown accelerator type 'v5e-16' "
        "(Cloud TPU names v5e types v5litepod-N); did you mean v5litepod-16?"]


# ---- adding a generation is adding its record ----

#: A generation Google might add: like v6e, under a new name, on vm and mig.
FAKE = {
    "prefix": "v9z", "aliases": ["fakium"], "name_counts": "chips", "cores_per_chip": 1, "chips_per_host": 4,
    "single_host_max_chips": 4, "sizes": [4, 16, 32], "paths": ["vm", "mig"], "xla_devices_per_chip": 1,
    "shared_pd_types": ["hyperdisk-ml"], "runtimes": ["v2-alpha-tpuv9z"], "provisioning": ["on-demand", "spot"],
    "zones": {"*": ["us-central1-b"]},
    "mig": {"machine_type": "ct9z-standard-4t", "chips_per_vm": 4, "single_host_machine_types": {},
            "image_project": "ubuntu-os-accelerator-images", "image_family": "ubuntu-accel-2404-amd64-tpu-v9z",
            "boot_disk_type": "hyperdisk-balanced", "shapes": {"4": "2x2", "16": "4x4", "32": "4x8"}},
}


@pytest.mark.slow
def test_adding_a_generation_is_its_record(tmp_path: Path) -> None:
    """docs/architecture.md's worked example, done for real on a copy of the repository: one row in
    builder/data/tpu_offers.json, and validate, plan (hosts, MIG shape), cost, the naming hint and
    the roberta launch know the generation; the shell and Terraform lists follow by regenerating."""
    for part in ("builder", "models", "tools", "env_setup", "modules"):
        shutil.copytree(REPO / part, tmp_path / part, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    data = tmp_path / "builder/data/tpu_offers.json"
    table = json.loads(data.read_text())
    table["generations"]["v9z"] = FAKE
    data.write_text(json.dumps(table, indent=2))

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *argv], cwd=tmp_path, capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)})

    base = (EXAMPLES / "vm-v6e-16.env").read_text().replace('ZONE="us-east1-d"', 'ZONE="us-central1-b"')
    vm = tmp_path / "vm.env"
    vm.write_text(base.replace('"v6e-16"', '"v9z-16"').replace('"v2-alpha-tpuv6e"', '"v2-alpha-tpuv9z"'))
    assert run("-m", "builder", "validate", "--values", str(vm)).returncode == 0
    plan = run("-m", "builder", "plan", "--values", str(vm), "--applied", "none", "--format", "json")
    assert plan.returncode == 0, plan.stderr
    info = json.loads(plan.stdout)
    assert (info["generation"], info["chips"], info["hosts"]) == ("v9z", 16, 4)
    tpu = next(i for i in info["cost"]["after"]["items"] if i["module"] == "tpu")
    assert tpu["hourly"] is None and "no v9z prices" in tpu["unknown_why"]  # unknown, never $0
    train = run("-m", "builder", "train", "roberta", "--dry-run", "--values", str(vm))
    assert train.returncode == 2 and "ROBERTA_TORCH_XLA_VERSION" in train.stderr, train.stderr  # the model's pin
    vm.write_text(vm.read_text() + 'ROBERTA_TORCH_XLA_VERSION="2.9.0"\n')
    train = run("-m", "builder", "train", "roberta", "--dry-run", "--values", str(vm))
    assert train.returncode == 0 and "--distributed-world-size 16" in train.stdout, train.stderr

    mig = tmp_path / "mig.env"
    mig.write_text(base.replace('TPU_ARCH="vm"', 'TPU_ARCH="mig"').replace('"v6e-16"', '"v9z-32"')
                   .replace('TPU_RUNTIME_VERSION="v2-alpha-tpuv6e"\n', ""))
    plan = run("-m", "builder", "plan", "--values", str(mig), "--applied", "none", "--format", "json")
    assert plan.returncode == 0, plan.stderr
    info = json.loads(plan.stdout)
    assert (info["hosts"], info["slice"]["machine_type"], info["slice"]["topology"]) == (8, "ct9z-standard-4t", "4x8")
    render = run("-m", "builder", "render", "--values", str(mig), "--applied", "none", "--format", "json")
    assert render.returncode == 0 and "mig-apply" in render.stdout, render.stderr

    (tmp_path / "x.env").write_text(vm.read_text().replace('"v9z-16"', '"fakium-16"'))
    hint = run("-m", "builder", "validate", "--values", str(tmp_path / "x.env"))
    assert hint.returncode == 2 and "did you mean v9z-16?" in hint.stderr

    check = run("tools/sync_generations.py", "--check")
    assert check.returncode == 1
    assert run("tools/sync_generations.py").returncode == 0 and run("tools/sync_generations.py", "--check").returncode == 0
    assert "v9z" in (tmp_path / "modules/tpu_vm/variables.tf").read_text()
    assert "ct9z-standard-4t" in (tmp_path / "modules/tpu_mig/variables.tf").read_text()
    assert "v9z" in (tmp_path / "env_setup/scripts/startup.sh").read_text()


# ---- the shipped files ----

def test_every_generation_and_path_google_offers_has_an_example() -> None:
    """One shipped values file (values.env or examples/*.env) per generation × path that Google
    still creates (the paths whose API is not retired): read from the records, so a new
    generation or path without an example fails here."""
    from builder.config import load

    shipped = {(s.topology.generation, s.arch) for s in map(load, [REPO / "values.env", *EXAMPLES.glob("*.env")])}
    offered = {(gen.name, path) for gen in generations.records() for path in gen.paths
               if generations.api(path).status != "retired"}
    assert offered - shipped == set(), "add an example under examples/ for each"


def test_the_dataset_disk_default_is_the_record_s() -> None:
    """SHARED_PD_DISK_TYPE left out is the generation's first shared_pd_types entry: Hyperdisk ML
    where the hosts attach only Hyperdisk, pd-balanced where they attach Persistent Disk."""
    from builder.config import load

    for path in [REPO / "values.env", *EXAMPLES.glob("*.env")]:
        s = load(path)
        assert s.shared_pd_type in s.topology.record.shared_pd_types, path.name
    hyperdisk_only = [g for g in generations.records() if g.mig and g.mig.boot_disk_type.startswith("hyperdisk")]
    assert hyperdisk_only and all(g.shared_pd_types == ("hyperdisk-ml",) for g in hyperdisk_only)


def test_every_quota_in_the_records_covers_the_models_that_use_one():
    """The capacity check reads a quota for every provisioning model that consumes one: on vm every
    model but reservation (where a record has a quota), on mig on-demand, spot and flex-start
    (reservation and calendar consume reserved capacity and are read as such); Compute Engine's
    are per region, flex-start lists the preemptible quota before the standard one."""
    for gen in generations.records():
        if gen.quota is not None:
            assert gen.quota.service == "tpu.googleapis.com" and gen.quota.per == "zone", gen.name
            assert set(gen.quota.ids) == set(gen.provisioning_on("vm")) - {"reservation"}, gen.name
        if gen.offers("mig"):
            q = gen.mig.quota
            assert q is not None and q.service == "compute.googleapis.com" and q.per == "region", gen.name
            assert set(q.ids) == set(gen.provisioning_on("mig")) - {"reservation", "calendar"}, gen.name
            assert q.ids["flex-start"] == (*q.ids["spot"], *q.ids["on-demand"]), gen.name
            assert set(q.dimensions) <= {i for ids in q.ids.values() for i in ids}, gen.name
