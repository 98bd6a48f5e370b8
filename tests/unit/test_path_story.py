"""`plan` (text and JSON) and `validate` say which API a file's path (TPU_ARCH) uses and why, and
the plan of a create or update warns where Google calls that API maintenance-only or retired:
every word comes from the data file's ``apis`` (builder/data/tpu_offers.json, with the page that
says it and a date) through builder/facts/generations.py, and Compute Engine is the path chosen for
every generation it offers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.config import load
from builder.facts import generations
from tests.conftest import EXAMPLES, SHIPPED

FILES = (SHIPPED, *sorted(EXAMPLES.glob("*.env")))


@pytest.mark.parametrize("path", generations.PATHS)
def test_each_path_names_its_api_with_a_source_and_a_date(path: str) -> None:
    api = generations.api(path)
    assert api.path == path and api.api and api.in_short and api.google_says
    assert api.status in ("recommended", "maintenance-only", "retired")
    assert re.fullmatch(r"https://\S+", api.source), api.source
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", api.checked), api.checked


def test_google_calls_the_cloud_tpu_api_maintenance_only_and_recommends_compute_engine() -> None:
    # what https://docs.cloud.google.com/tpu/docs/runtimes.md.txt says (its caution box)
    assert generations.api("vm").status == "maintenance-only"
    assert generations.api("mig").status == "recommended"


@pytest.mark.parametrize("gen", generations.records(), ids=lambda g: g.name)
def test_compute_engine_is_chosen_for_every_generation_it_offers(gen: generations.Generation) -> None:
    assert generations.preferred_path(gen) == ("mig" if gen.mig is not None else "vm")


@pytest.mark.parametrize("values", FILES, ids=lambda p: p.name)
def test_plan_says_the_path_and_warns_where_google_does_not_recommend_it(
        values: Path, cli: Callable[..., tuple[int, str, str]]) -> None:
    s = load(values)
    api = generations.api(s.arch)
    code, out, err = cli("plan", "--values", values, "--applied", "none", "--format", "json")
    assert code == 0, err
    info = json.loads(out)
    assert (info["path"]["api"], info["path"]["status"], info["path"]["source"]) == (api.api, api.status, api.source)
    warned = [w for w in info["warnings"] if api.google_says in w]
    if api.status == "recommended":
        assert info["path"]["warning"] is None and not warned
        assert info["path"]["text"].startswith(f"{api.label}: {api.in_short} for ")
    else:
        assert warned == [info["path"]["warning"]] and api.source in warned[0]
        assert f"{api.status} at Google" in info["path"]["text"]
        better = generations.preferred_path(s.topology.record)
        if better != s.arch:  # a generation Compute Engine offers: the plan names that path
            assert generations.api(better).label in info["path"]["text"]
    code, text, err = cli("plan", "--values", values, "--applied", "none")
    assert code == 0, err
    assert f"  path:         {info['path']['text']}\n" in text
    assert (f"WARNING: {info['path']['warning']}" in text) == (api.status != "recommended")
    code, out, err = cli("plan", "--values", values, "--applied", "none", "--format", "json", "--action", "destroy")
    assert code == 0, err
    assert not [w for w in json.loads(out)["warnings"] if api.google_says in w], "a destroy leaves the path: no warning"


@pytest.mark.parametrize("values", FILES, ids=lambda p: p.name)
def test_validate_summary_names_the_api(values: Path, cli: Callable[..., tuple[int, str, str]]) -> None:
    s = load(values)
    code, out, err = cli("validate", "--values", values)
    assert code == 0, err
    assert f"{s.arch} architecture ({generations.api(s.arch).api}: " in out


def test_a_vm_file_of_a_generation_compute_engine_offers_is_pointed_there() -> None:
    on_mig = [g for g in generations.on_path("vm") if g.offers("mig")]
    assert on_mig, "some generation is offered on both paths"
    for gen in on_mig:
        line, warning = generations.path_story("vm", gen.name)
        assert warning is not None and f"{generations.api('mig').label} is " in line and gen.name in line
    only_vm = [g for g in generations.on_path("vm") if not g.offers("mig")]
    for gen in only_vm:
        line, _ = generations.path_story("vm", gen.name)
        assert f"the only path for {gen.name}" in line



def test_v5e_stays_on_the_cloud_tpu_api_and_its_record_says_why() -> None:
    # Google offers MIGs of TPU VMs "for TPU versions v5p and later" and no v5e Compute Engine
    # machine type (searched 2026-11-24): the decision and its pages are on the record
    v5e = generations.get("v5e")
    assert v5e is not None and v5e.mig is None and generations.preferred_path(v5e) == "vm"
    note = generations.table()["generations"]["v5e"]["_note"]
    assert "https://docs.cloud.google.com/tpu/docs/tpus-and-migs" in note
    assert "https://docs.cloud.google.com/compute/docs/tpus/tpu-machines" in note
