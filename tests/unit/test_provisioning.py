"""Ways to pay for a TPU (TPU_PROVISIONING and the legacy booleans, TPU_RESERVATION,
TPU_QUEUED / TPU_QUEUED_VALID_FOR) and the zone x generation x runtime table
(builder/data/tpu_offers.json)."""

from __future__ import annotations

import importlib

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.config import load
from builder.config import offers
from builder.config.keys import duration_seconds
from builder.facts.errors import ConfigError
from builder.facts.topology import parse
from builder.inputs import tfvars
from tests.conftest import EXAMPLES, NODE, REPO, SHIPPED

SCHEMA = json.loads((REPO / "tests" / "data" / "provider_schema.json").read_text())
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.env"))


@pytest.mark.parametrize(("overrides", "mode", "flags"), [
    ({}, "on-demand", (False, False, False)),
    ({"TPU_PROVISIONING": "spot"}, "spot", (False, True, False)),
    ({"TPU_PROVISIONING": "Reserved"}, "reservation", (False, False, True)),
    ({"TPU_PROVISIONING": "preemptible"}, "preemptible", (True, False, False)),
    ({"TPU_SPOT": "true"}, "spot", (False, True, False)),                       # legacy booleans map
    ({"TPU_PREEMPTIBLE": "yes"}, "preemptible", (True, False, False)),
    ({"TPU_RESERVED": "true"}, "reservation", (False, False, True)),
    ({"TPU_PROVISIONING": "spot", "TPU_SPOT": "true"}, "spot", (False, True, False)),  # agreeing: fine
])
def test_provisioning_resolves_and_reaches_the_tpu_vm_module(make_env: Callable[..., Path], overrides, mode, flags) -> None:
    s = load(make_env(SHIPPED, **overrides))
    assert s.provisioning == mode
    assert (s.tpu_preemptible, s.tpu_spot, s.tpu_reserved) == flags
    v = tfvars.for_module(s, "tpu")
    assert (v["preemptible"], v["spot"], v["reserved"]) == flags


def test_conflict_with_the_legacy_boolean_is_one_error_on_its_line(make_env: Callable[..., Path]) -> None:
    path = make_env(SHIPPED, TPU_PROVISIONING="on-demand", TPU_PREEMPTIBLE="true")
    with pytest.raises(ConfigError) as exc:
        load(path)
    s_text = path.read_text().splitlines()
    line = next(i for i, ln in enumerate(s_text, 1) if ln.startswith("TPU_PREEMPTIBLE="))
    assert str(exc.value).startswith(f"{path}:{line}: TPU_PREEMPTIBLE: ")
    assert 'TPU_PROVISIONING is "on-demand"' in str(exc.value)


@pytest.mark.parametrize("generation", list(offers.generations()))
def test_each_generation_accepts_exactly_its_provisioning_models(make_env: Callable[..., Path], generation: str) -> None:
    row = offers.generations()[generation]
    accel = next(t for t in _types() if parse(t).generation == generation)
    zone = offers.zones_for(parse(accel))[0]
    # a generation without TPU VM runtimes (tpu7x) exists only as a MIG of TPU VMs
    arch = dict(TPU_RUNTIME_VERSION=row["runtimes"][0], SHARED_PD_DISK_ATTACH="false") if row["runtimes"] else dict(
        TPU_ARCH="mig", TPU_RUNTIME_VERSION=None, TPU_PYTORCH_VERSION=None, SHARED_PD_DISK_ATTACH="false",
        GCS_DATASET=None)
    for mode in ("on-demand", "spot", "preemptible", "reservation"):
        path = make_env(SHIPPED, TPU_ACCELERATOR_TYPE=accel, ZONE=zone, REGION=None, TPU_PROVISIONING=mode, **arch)
        if mode in row["provisioning"]:
            assert load(path).provisioning == mode
        else:
            with pytest.raises(ConfigError, match=f"{mode} is not offered for {generation}"):
                load(path)


def _types() -> list[str]:
    from builder.facts.topology import valid_types

    return valid_types()


def test_preemptible_is_for_older_generations_only() -> None:
    gens = offers.generations()
    assert [g for g, row in gens.items() if "preemptible" in row["provisioning"]] == ["v2", "v3", "v4"]
    assert all("spot" in row["provisioning"] and "reservation" in row["provisioning"] for row in gens.values())


def test_plan_says_which_provisioning_and_what_it_means(cli, make_env: Callable[..., Path]) -> None:
    code, out, _ = cli("plan", "--values", make_env(SHIPPED, TPU_PROVISIONING="spot"))
    assert code == 0 and "provisioning: spot: starts " in out and "until Google preempts it" in out
    code, out, _ = cli("plan", "--values", make_env(SHIPPED, TPU_PROVISIONING="reservation"), "--format", "json")
    info = json.loads(out)
    assert info["provisioning"] == "reservation" and "any matching reservation" in info["provisioning_meaning"]
    code, out, _ = cli("plan", "--values", SHIPPED, "--action", "destroy")
    assert code == 0 and "provisioning: on-demand" in out


def test_queued_meaning_and_duration() -> None:
    assert "may wait for at most 6h" in offers.describe("spot", True, "6h", "")
    assert "until capacity is free" in offers.describe("on-demand", True, "", "")
    assert duration_seconds("1h30m") == 5400 and duration_seconds("2d") == 172800


def test_queued_vm_plans_and_renders_the_queue_steps(cli, make_env) -> None:
    """TPU_QUEUED on vm is built (tests/unit/test_queued.py has the steps themselves); a named
    reservation on vm stays refused because google_tpu_v2_vm (and gcloud's --reserved) has only
    reserved=true (tests/corpus/test_bad_input_corpus.py reservation-named-on-vm)."""
    vm = SCHEMA["google-beta"]["resources"]["google_tpu_v2_vm"]
    assert set(vm["blocks"]["scheduling_config"]["attributes"]) == {"preemptible", "spot", "reserved"}  # no reservation name
    path = make_env(SHIPPED, TPU_QUEUED="true", TPU_QUEUED_VALID_FOR="6h")
    s = load(path)
    assert (s.queued, s.queued_valid_for) == (True, "6h")
    code, out, err = cli("plan", "--values", path)
    assert code == 0, err
    assert "queued resource" in out and "6h" in out
    code, out, err = cli("plan", "--values", path, "--action", "destroy")
    assert code == 0, err


# ---- zone x generation x runtime ----

def test_offers_file_names_its_sources_and_date() -> None:
    t = offers.table()
    assert t["_checked"] and any("cloud.google.com/tpu/docs/regions-zones" in s for s in t["_sources"])
    assert offers.vm_runtimes()["tpu-ubuntu2204-base"] == ("v2", "v3", "v4")


@pytest.mark.parametrize(("accel", "zone", "offered"), [
    ("v3-32", "us-central2-b", "europe-west4-a"),
    ("v4-32", "europe-west4-a", "us-central2-b"),
    ("v3-8", "us-east1-d", "us-central1-a, us-central1-b, europe-west4-a"),
])
def test_zone_that_does_not_offer_the_type_is_refused_with_the_zones_that_do(make_env, accel, zone, offered) -> None:
    gen = parse(accel).generation
    runtime = next(r for r, gens in offers.vm_runtimes().items() if gen in gens)
    path = make_env(SHIPPED, TPU_ACCELERATOR_TYPE=accel, TPU_RUNTIME_VERSION=runtime, ZONE=zone, REGION=None)
    with pytest.raises(ConfigError) as exc:
        load(path)
    assert exc.value.key == "ZONE" and f"{accel} is not offered in {zone}" in str(exc.value)
    assert f"it is offered in {offered}" in str(exc.value)


def test_node_files_are_not_zone_checked() -> None:
    """TPU Nodes are legacy: their destroy must load wherever they were created."""
    assert load(NODE).arch == "node"


@pytest.mark.parametrize("path", [SHIPPED, *EXAMPLE_FILES], ids=lambda p: p.name)
def test_shipped_and_examples_validate_plan_and_render(cli, path: Path) -> None:
    s = load(path)
    assert s.arch in ("vm", "mig") and s.zone in offers.zones_for(s.topology)  # never a TPU Node
    code, out, err = cli("plan", "--values", path)
    assert code == 0, err
    code, out, err = cli("render", "--values", path, "--format", "json")
    assert code == 0, err
    importlib.import_module("google.cloud.devtools.cloudbuild_v1").Build.from_json(out)


def test_examples_cover_each_current_generation() -> None:
    gens = {load(p).topology.generation for p in EXAMPLE_FILES}
    assert {"v4", "v5e", "v5p", "v6e"} <= gens


def test_headline_story_v3_32_to_v3_128_is_a_tpu_update(cli, make_env) -> None:
    small, big = load(SHIPPED), load(make_env(SHIPPED, TPU_ACCELERATOR_TYPE="v3-128"))
    assert (small.hosts, big.hosts) == (4, 16)
    a, b = tfvars.all_for(small), tfvars.all_for(big)
    assert {m for m in a if a[m] != b[m]} == {"tpu"}
    assert b["tpu"]["accelerator_type"] == "v3-128"
    code, out, err = cli("plan", "--values", make_env(SHIPPED, TPU_ACCELERATOR_TYPE="v3-128"), "--action", "update", "--tpu")
    assert code == 0 and "TPU VM tpu-tpu-dev1 (v3-128, tpu-ubuntu2204-base)" in out, err


@pytest.mark.parametrize("key", ["TPU_PROVISIONING", "TPU_RESERVATION", "TPU_QUEUED", "TPU_QUEUED_VALID_FOR"])
def test_auto_reapplies_the_tpu_when_a_provisioning_key_changes(key: str) -> None:
    from builder.cloud.auto import modules_for_key

    assert modules_for_key(key, "vm") == {"tpu"}
