"""Single-host slices on the Compute Engine path: every size of a MIG generation that is one host
(v5p-8, v6e-1/-4/-8, tpu7x-8 in the records today) validates, plans and renders as one VM of the
record's single-host machine type (or its multi-host one where the sizes match), with no workload
policy, since a policy's accelerator_topology joins several VMs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.config import load
from builder.facts import generations
from builder.facts.topology import parse
from builder.inputs import tfvars
from tests.conftest import EXAMPLES

SINGLE = [(g, f"{g.prefix}-{size}") for g in generations.on_path("mig") for size in g.mig.shapes  # type: ignore[union-attr]
          if parse(f"{g.prefix}-{size}").hosts == 1]


def test_every_mig_generation_has_a_single_host_slice() -> None:
    assert {g.name for g, _ in SINGLE} == {g.name for g in generations.on_path("mig")}


@pytest.mark.parametrize(("gen", "accelerator"), SINGLE, ids=[a for _, a in SINGLE])
def test_a_single_host_slice_plans_as_one_vm_without_a_workload_policy(
        gen: generations.Generation, accelerator: str, make_env: Callable[..., Path],
        cli: Callable[..., tuple[int, str, str]]) -> None:
    assert gen.mig is not None
    zone = next(iter(gen.zones.get(accelerator, gen.zones["*"])))
    path = make_env(EXAMPLES / "mig-v6e-16-spot.env", TPU_ACCELERATOR_TYPE=accelerator, ZONE=zone, MODEL="",
                    ROBERTA_DATA_SOURCE=None, ROBERTA_TRAIN_FILE=None, ROBERTA_VALID_FILE=None)
    s = load(path)
    chips = parse(accelerator).chips
    assert s.mig_shape.vms == 1 and s.mig_shape.accelerator_topology == ""
    assert s.mig_shape.machine_type == gen.mig.single_host_machine_types.get(chips, gen.mig.machine_type)
    assert tfvars.for_module(s, "mig")["accelerator_topology"] == ""
    code, out, err = cli("validate", "--values", path)
    assert code == 0, err
    code, out, err = cli("plan", "--values", path, "--applied", "none", "--format", "json")
    assert code == 0, err
    info = json.loads(out)
    assert info["slice"]["vms"] == 1 and info["hosts"] == 1 and info["path"]["arch"] == "mig"
    code, out, err = cli("render", "--values", path, "--applied", "none", "--format", "json")
    assert code == 0, err
