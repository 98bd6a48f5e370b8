"""``--zone`` (builder/config/candidates.py ``in_zone``; builder/planning/request.py ``placed``): the
values placed at a zone's first candidate of the ZONE list, as the health build's recovery that
moves asks for it (``tpubuild dispatch --action update --zone ZONE``, docs/recovery.md). Every door
that takes it (plan, render, submit, dispatch) refuses the same things with the same line, exit 2,
before any cloud client is built; plan and render act in the zone it names."""

from __future__ import annotations

import json

import pytest

from builder.config import load_text
from builder.config.candidates import in_zone
from builder.facts.errors import BadInput
from builder.planning.request import CLI, SUBSTITUTIONS, parse, placed
from tests.conftest import EXAMPLES, rewrite_env

BASE = EXAMPLES / "vm-v5litepod-16.env"
LIST = {"ZONE": "us-east5-a,us-east5-b", "TPU_PROVISIONING": "spot,on-demand", "TPU_RECOVERY": "auto"}
DOORS = (("plan", "--action"), ("render", "--action"), ("submit", "--action"), ("dispatch", "--action"))


@pytest.fixture
def listed():
    return load_text(rewrite_env(BASE.read_text(), **LIST), BASE)


def test_a_zone_of_the_list_places_the_values_at_its_first_mode_there(listed) -> None:
    moved = placed(listed, parse(listed, "update", zone="us-east5-b", spelling=SUBSTITUTIONS))
    assert (moved.zone, moved.region, moved.provisioning) == ("us-east5-b", "us-east5", "spot")
    assert moved.candidates[0].label == "us-east5-b spot"  # the failover loop asks b's modes first
    assert [c.label for c in moved.candidates if c.zone == "us-east5-b"] == ["us-east5-b spot", "us-east5-b on-demand"]
    assert placed(listed, parse(listed, "update")) is listed  # no --zone: the values as they are
    assert in_zone(listed, "us-east5-a").zone == "us-east5-a"


@pytest.mark.parametrize("action, words", [
    ("destroy", "a destroy takes down what is where the slice was granted"),
    ("auto", "auto keeps the slice where the applied snapshot says it was granted"),
    ("initialize", "initialize places nothing"),
])
def test_an_action_that_places_nothing_refuses_it(listed, action: str, words: str) -> None:
    with pytest.raises(BadInput) as err:
        parse(listed, action, zone="us-east5-b", spelling=CLI)
    assert str(err.value) == f"--zone: places a create or an update in one zone of ZONE; {words}; drop --zone"


def test_every_door_refuses_a_zone_outside_the_list_with_the_same_line(tmp_path, cli, no_cloud) -> None:
    values = tmp_path / "values.env"
    values.write_text(rewrite_env(BASE.read_text(), **LIST))
    line = values.read_text().splitlines().index('ZONE="us-east5-a,us-east5-b"') + 1
    said = set()
    for verb, action in DOORS:
        code, out, err = cli(verb, "--values", values, action, "update", "--zone", "europe-west4-a")
        assert code == 2 and out == "", (verb, out, err)
        [refusal] = [x for x in err.splitlines() if x.startswith("tpubuild: error:")]
        said.add(refusal)
    assert said == {f"tpubuild: error: --zone: 'europe-west4-a' is not a zone of {values}:{line} ZONE "
                    "(us-east5-a, us-east5-b); pass one of them, or add europe-west4-a to ZONE"}


def test_plan_and_render_act_in_the_zone_named(tmp_path, cli, no_cloud) -> None:
    values = tmp_path / "values.env"
    values.write_text(rewrite_env(BASE.read_text(), **LIST))
    code, out, err = cli("plan", "--values", values, "--action", "update", "--zone", "us-east5-b", "--applied", "none",
                         "--format", "json")
    assert code == 0, err
    planned = json.loads(out)
    assert (planned["zone"], planned["provisioning"]) == ("us-east5-b", "spot")
    code, out, err = cli("render", "--values", values, "--action", "update", "--tpu", "--zone", "us-east5-b",
                         "--format", "json")
    assert code == 0, err
    steps = json.loads(out)["steps"]
    assert "us-east5-b" in json.dumps(steps) and "candidate 1 of" not in json.dumps(steps)
