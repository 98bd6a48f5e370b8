"""Before → after (builder.planning.diff), auto preview (plan/render --action auto) and cost (builder.catalogue.cost)
on the headline story: a TPU VM v3-32 (4 hosts) grown to v3-128 (16 hosts). Own fixture files,
not the shipped values.env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.catalogue import cost
from builder.catalogue.modules import modules as arch_modules
from builder.config import load
from builder.config.keys import KEYS
from builder.facts import generations
from builder.planning import diff
from builder.planning.plan import make_plan
from tests.conftest import run_tpubuild

BASE = """ENV_BUILD_NAME="story"
PROJECT_ID="my-tpu-project"
ZONE="europe-west4-a"
TPU_ARCH="vm"
TPU_ACCELERATOR_TYPE="{accel}"
TPU_RUNTIME_VERSION="tpu-ubuntu2204-base"
SHARED_FS_TIER="BASIC_HDD"
SHARED_FS_CAPACITY="{fs}"
SHARED_PD_DISK_ATTACH="true"
SHARED_PD_DISK_SIZE="{pd}"
SHARED_PD_DISK_TYPE="pd-balanced"
GCS_DATASET="gs://my-data/wikitext/*"
"""


def write(tmp_path: Path, name: str, accel: str = "v3-32", fs: int = 1024, pd: int = 500) -> Path:
    path = tmp_path / name
    path.write_text(BASE.format(accel=accel, fs=fs, pd=pd))
    return path


@pytest.fixture
def story(tmp_path):
    return write(tmp_path, "applied.env"), write(tmp_path, "values.env", accel="v3-128")


def test_v3_32_to_v3_128_replaces_the_tpu_and_goes_from_4_to_16_hosts(story):
    old, new = load(story[0]), load(story[1])
    d = diff.compare(old, new, make_plan(new, "update", tpu=True))
    tpu = d.get("tpu")
    assert tpu.status == "replace" and tpu.hosts_recreated and tpu.interrupts_training
    assert [(c.var, c.before, c.after, c.effect) for c in tpu.changes] == [
        ("accelerator_type", "v3-32", "v3-128", "replace")]
    assert (d.hosts_before, d.hosts_after) == (4, 16)
    assert d.get("filestore").status == "untouched" and d.get("shared_pd").status == "untouched"
    text = diff.lines(d)
    assert "tpu: accelerator_type v3-32 → v3-128 (replaced beside the running slice: the build moves the training at a checkpoint)" in text
    assert "hosts: 4 → 16, v3-32 → v3-128" in text
    assert "hosts recreated: yes; training is interrupted" in text


def test_growing_the_share_and_disk_is_in_place_and_shrinking_the_disk_replaces_it(tmp_path):
    old = load(write(tmp_path, "a.env", fs=1024, pd=500))
    grown = load(write(tmp_path, "b.env", fs=2048, pd=800))
    d = diff.compare(old, grown, make_plan(grown, "update"))
    assert d.get("filestore").status == "update" and not d.get("filestore").loses_data
    assert d.get("shared_pd").status == "update"
    assert d.get("tpu").status == "unchanged" and not d.hosts_recreated
    shrunk = load(write(tmp_path, "c.env", pd=200))
    d = diff.compare(old, shrunk, make_plan(shrunk, "update"))
    assert d.get("shared_pd").status == "replace" and d.get("shared_pd").loses_data


def test_no_applied_snapshot_means_every_module_is_created(story):
    new = load(story[1])
    d = diff.compare(None, new, make_plan(new, "create"))
    assert [m.status for m in d.modules] == ["create"] * len(arch_modules(new.arch))
    assert (d.hosts_before, d.hosts_after) == (0, 16)


def test_destroy_tpu_keeps_the_data_modules(story):
    old = load(story[0])
    d = diff.compare(old, old, make_plan(old, "destroy", tpu=True))
    assert d.get("tpu").status == "destroy" and (d.hosts_before, d.hosts_after) == (4, 0)
    assert d.get("filestore").status == "untouched" and d.get("shared_pd").status == "untouched"


def test_plan_json_carries_before_after_and_cost(story):
    proc = run_tpubuild("plan", "--values", str(story[1]), "--action", "update", "--tpu",
                        "--applied", str(story[0]), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    ba = info["before_after"]
    assert ba["hosts_before"] == 4 and ba["hosts_after"] == 16 and ba["hosts_recreated"] is True
    tpu = next(m for m in ba["modules"] if m["module"] == "tpu")
    assert tpu["status"] == "replace" and tpu["changes"][0]["var"] == "accelerator_type"
    before, after = info["cost"]["before"], info["cost"]["after"]
    tpu_before = next(i for i in before["items"] if i["module"] == "tpu")["hourly"]
    tpu_after = next(i for i in after["items"] if i["module"] == "tpu")["hourly"]
    assert tpu_after == pytest.approx(4 * tpu_before)  # 16 chips → 64 chips, same price per chip
    assert "+$" in info["cost"]["change"] and "$0.00" not in info["cost"]["change"]


@pytest.mark.parametrize("extra,note", [
    ('MODEL=""\n', "replaced: training interrupted"),  # nothing to move: deleting the old slice stops it
    ('TPU_REPLACE="break-before-make"\n', "replaced: training interrupted"),
    ("", "replaced beside the running slice: the build moves the training at a checkpoint"),
])
def test_the_replaced_note_says_whether_the_build_moves_the_training(story, extra, note):
    new_path = story[1]
    new_path.write_text(new_path.read_text() + extra)
    old, new = load(story[0]), load(new_path)
    d = diff.compare(old, new, make_plan(new, "update", tpu=True))
    assert d.get("tpu").note == note


def test_plan_text_shows_the_story_and_its_cost(story):
    proc = run_tpubuild("plan", "--values", str(story[1]), "--action", "update", "--tpu",
                        "--applied", str(story[0]))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "tpu: accelerator_type v3-32 → v3-128 (replaced beside the running slice: the build moves the training at a checkpoint)" in out
    assert "hosts: 4 → 16" in out and "Cost per hour:" in out and "/chip-h on-demand, europe-west4" in out


def test_auto_preview_nothing_to_do(story):
    for cmd in ("plan", "render"):
        proc = run_tpubuild(cmd, "--values", str(story[0]), "--action", "auto", "--applied", str(story[0]))
        assert proc.returncode == 0, proc.stderr
        if cmd == "plan":
            assert "auto: nothing to do" in proc.stdout
        else:
            assert proc.stdout == "" and "nothing to do" in proc.stderr
    proc = run_tpubuild("plan", "--values", str(story[0]), "--action", "auto", "--applied", str(story[0]),
                        "--format", "json")
    info = json.loads(proc.stdout)
    assert info["auto"]["decision"] == "none" and info["nothing_to_do"] is True and info["operations"] == []


def test_auto_preview_something_renders_exactly_that_update(story):
    proc = run_tpubuild("plan", "--values", str(story[1]), "--action", "auto", "--applied", str(story[0]),
                        "--format", "json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["auto"]["decision"] == "update" and info["auto"]["modules"] == ["tpu"]
    assert [o["module"] for o in info["operations"]] == ["tpu"] and info["action"] == "update"
    auto_yaml = run_tpubuild("render", "--values", str(story[1]), "--action", "auto", "--applied", str(story[0]))
    manual = run_tpubuild("render", "--values", str(story[1]), "--action", "update", "--only", "tpu")
    assert auto_yaml.returncode == 0 and auto_yaml.stdout == manual.stdout and "tpu-apply" in auto_yaml.stdout


def test_auto_preview_with_nothing_applied_is_create(story, tmp_path):
    empty = tmp_path / "empty.env"
    empty.write_text("")
    proc = run_tpubuild("plan", "--values", str(story[1]), "--action", "auto", "--applied", str(empty),
                        "--format", "json")
    assert json.loads(proc.stdout)["auto"]["decision"] == "create"


def test_auto_without_applied_values_or_credentials_is_bad_input(story, monkeypatch, tmp_path):
    env = {"CLOUDSDK_CONFIG": str(tmp_path / "none"), "GOOGLE_APPLICATION_CREDENTIALS": "", "STORAGE_EMULATOR_HOST": ""}
    proc = run_tpubuild("plan", "--values", str(story[1]), "--action", "auto", env=env)
    assert proc.returncode == 2 and "--applied" in proc.stderr and proc.stderr.count("\n") == 1


# ---- prices ----

def test_every_generation_tier_and_disk_type_we_accept_has_a_price_or_says_why_not():
    t = cost.table()
    for gen in (g.name for g in generations.records()):
        row = t["tpu_chip_hour"].get(cost.generation_key(gen))
        assert row is not None, f"no prices for {gen}"
        assert row["on-demand"].get("default") or row.get("_unpublished"), gen
    tiers = next(k for k in KEYS if k.name == "SHARED_FS_TIER")
    for tier in ("BASIC_HDD", "BASIC_SSD", "ZONAL", "REGIONAL", "ENTERPRISE", "HIGH_SCALE_SSD"):
        assert tiers.parse(tier) == tier and t["filestore_gib_month"][tier]["price"]["default"] > 0
    disks = next(k for k in KEYS if k.name == "SHARED_PD_DISK_TYPE")
    for disk in ("pd-standard", "pd-balanced", "pd-ssd"):
        assert disks.parse(disk) == disk and t["disk_gb_month"][disk]["price"]["default"] > 0
    for gen in ("v5p", "v6e", "tpu7x"):
        assert gen in t["tpu_chip_hour"]
    assert t["retrieved"] and all(u.startswith("https://cloud.google.com/") for u in t["sources"].values())


def test_unknown_prices_are_said_never_zero():
    price, approx, why = cost.tpu_chip_hour("v9", "us-central1", "on-demand")
    assert price is None and "no v9 prices" in why
    price, _, why = cost.tpu_chip_hour("v6e", "us-east1", "queued-forever")
    assert price is None and "no price rule" in why
    est = cost.Estimate((cost.Item("tpu", "TPU tpu7x-64", None, unknown_why="unpublished"),))
    assert est.total_text() == "unknown" and "$0" not in est.total_text()
    est = cost.Estimate((cost.Item("tpu", "TPU", None, unknown_why="x"), cost.Item("filestore", "fs", 0.2)))
    assert est.total_text() == "$0.20/h + unknown"


def test_provisioning_keys_the_tpu_price(story, tmp_path):
    s = load(story[0])
    spot = tmp_path / "spot.env"
    spot.write_text(story[0].read_text() + 'TPU_SPOT="true"\n')
    assert cost.provisioning(s) == "on-demand" and cost.provisioning(load(spot)) == "spot"
    on_demand = cost.estimate(s, ("tpu",)).known
    cheaper = cost.estimate(load(spot), ("tpu",)).known
    assert 0 < cheaper < on_demand
