"""The price table's provenance: what is confirmed says where, everything else is shown as unconfirmed."""

from __future__ import annotations

import json
from pathlib import Path

from builder.catalogue import cost
from builder.config import load
from tests.conftest import rewrite_env
from tests.unit.test_plan_preview import write

REPO = Path(__file__).resolve().parents[2]


def _value(path: str):
    node = cost.table()
    for part in path.split("."):
        node = node[part]
    return node


def test_every_confirmed_price_exists_and_names_a_google_page():
    v = cost.table()["verification"]
    assert v["checked"] and v["confirmed"]
    for path, source in v["confirmed"].items():
        assert isinstance(_value(path), float), path
        assert source.startswith("https://cloud.google.com/"), path
    for path, source in v["third_party_only"].items():
        assert path not in v["confirmed"] and source.startswith("https://") and "cloud.google.com" not in source


def test_plan_marks_unconfirmed_prices_and_not_confirmed_ones(tmp_path, cli):
    path = write(tmp_path, "values.env")
    path.write_text(rewrite_env(path.read_text(), ZONE="us-west1-a", REGION="us-west1", SHARED_FS_TIER="BASIC_HDD",
                                       TPU_ZONE_CHECK="warn"))  # the Filestore price checked is us-west1's
    s = load(path)
    est = cost.estimate(s, ("filestore", "tpu"))
    by = {i.module: i for i in est.items}
    assert by["filestore"].confirmed and by["filestore"].hourly == 0.2 * s.shared_fs_capacity_gb / 730
    assert by["tpu"].confirmed and "Tpu-v3" in by["tpu"].basis  # a Cloud TPU SKU (E000-3F24-B8AA)
    node = cost.estimate(load(REPO / "tests" / "data" / "node-values.env"), ("mig",))  # the node's worker VMs
    [vms] = node.items
    assert vms.confirmed and vms.hourly and "N1 Predefined Instance Core running in" in vms.basis and "Ram" in vms.basis
    code, out, err = cli("--values", path, "plan", "--applied", "none")
    assert code == 0, err
    [fs_line] = [ln for ln in out.splitlines() if ln.strip().startswith("Filestore BASIC_HDD")]
    assert "unconfirmed" not in fs_line
    data = json.loads(cli("--values", path, "plan", "--applied", "none", "--format", "json")[1])
    assert "filestore" not in data["cost"]["after"]["unconfirmed"]
    if data["cost"]["after"]["unconfirmed"]:
        assert "(estimate from unconfirmed list prices)" in out.split("Cost per hour:")[1].splitlines()[0]
        assert "https://cloud.google.com/" in out.split("(unconfirmed): not found")[1]
