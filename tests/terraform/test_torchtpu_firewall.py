"""Real Terraform: the host firewall opens what TorchTPU needs between the slice's hosts only.

models/torchtpu/launch.py ``ports`` is the fact (torch-tpu's slice builder 8070 + one port per chip of
a host, torchrun's 29500, the handshake's 36423); the slice's ``<name>-internal`` rule
(modules/host_firewall, a child of tpu_vm and tpu_mig_access) carries every TCP port from the
slice's own network tag, and nothing else reaches them. Planned here through the stand-in
provider with the tfvars tpubuild writes for a torchtpu values file, after the modules the slice
reads are applied (their order, as the pipeline runs them); the slice's hosts carry the tag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builder.config import load
from builder.config import model_registry
from builder.inputs import tfvars
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES
from tests.support.terraform import Terraform, Workspace, resources, standin_terraform

pytestmark = pytest.mark.slow
LAUNCH = model_registry.load(model_registry.SOURCE_MODELS, "torchtpu.launch")


def _ports(spec: str) -> range:
    first, _, last = spec.partition("-")
    return range(int(first), int(last or first) + 1)


def _opens(rule: dict[str, Any], port: int) -> bool:
    return any(a["protocol"] in ("tcp", "all") and (not a.get("ports") or any(port in _ports(p) for p in a["ports"]))
               for a in rule["allow"])


def _planned(tf: Terraform, ws: Workspace, settings: Any) -> list[dict[str, Any]]:
    """Every resource the slice's modules plan, each module applied before the next (the
    pipeline's order); the dashboard, which holds no host, left out."""
    planned = []
    for module, values in tfvars.all_for(settings).items():
        if module == "dashboard":
            continue
        work = ws.module(module_dir(settings, module), module, values)
        tf.init(work)
        planned += resources(tf.plan_json(work, "create"))
        tf(work, "apply", "-input=false", "-no-color", "-lock=false", "create.tfplan")
    return planned


@pytest.mark.parametrize("example", ["vm-v5p-32.env", "mig-v6e-16-spot.env"])
def test_the_slices_firewall_opens_torchtpus_ports_between_its_hosts_only(make_env, tmp_path: Path,
                                                                        example: str) -> None:
    (tmp_path / "train.py").write_text("print('hi')\n")
    values = make_env(EXAMPLES / example, MODEL="torchtpu", TORCHTPU_SCRIPT="train.py")
    settings = load(values)
    job = LAUNCH.Job.from_settings(settings)
    ports = [p for spec in LAUNCH.ports(job) for p in _ports(spec)]
    assert ports == [8070, 8071, 8072, 8073, 29500, 36423]
    planned = _planned(standin_terraform(), Workspace(tmp_path / "ws"), settings)
    rules = [r for r in planned if r["type"] == "google_compute_firewall"]
    internal = [r["values"] for r in rules if r["values"]["name"].endswith("-internal")]
    assert len(internal) == 1
    rule = internal[0]
    assert all(_opens(rule, p) for p in ports)
    tag = rule["source_tags"]
    assert tag == rule["target_tags"] and len(tag) == 1 and not rule.get("source_ranges")  # the slice only
    # no other rule opens them (the other one is IAP's SSH, port 22 from IAP's range)
    others = [r["values"] for r in rules if r["values"] is not rule]
    assert not any(_opens(r, p) for r in others for p in ports)
    # the slice's hosts carry that tag
    tagged = [r for r in planned if tag[0] in (r["values"].get("tags") or ())
              or tag[0] in ((r["values"].get("network_config") or [{}])[0].get("tags") or ())]
    assert tagged, "no planned host carries the firewall's tag"
