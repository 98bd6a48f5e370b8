"""Capacity candidates (builder/config/candidates.py): ZONE and TPU_PROVISIONING as ordered lists,
their product zone by zone, mode by mode, the first candidate as Settings.zone/region/provisioning,
and the granted place read back from an applied snapshot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from builder.config import load
from builder.config.candidates import Candidate, first_is, granted, ordered, stays
from builder.facts.errors import ConfigError
from tests.conftest import EXAMPLES, SHIPPED

MIG = EXAMPLES / "mig-v6e-16-spot.env"


def test_a_single_value_is_one_candidate_as_before(make_env: Callable[..., Path]) -> None:
    s = load(SHIPPED)
    assert s.candidates == (Candidate(s.zone, s.region, s.provisioning),)
    assert (s.zone, s.region, s.provisioning) == ("europe-west4-a", "europe-west4", "on-demand")


def test_lists_are_tried_zone_by_zone_mode_by_mode(make_env: Callable[..., Path]) -> None:
    s = load(make_env(MIG, ZONE="us-east5-b, us-east5-a,us-central1-b", TPU_PROVISIONING="spot,flex,on-demand"))
    assert [c.label for c in s.candidates] == [
        "us-east5-b spot", "us-east5-b flex-start", "us-east5-b on-demand",
        "us-east5-a spot", "us-east5-a flex-start", "us-east5-a on-demand",
        "us-central1-b spot", "us-central1-b flex-start", "us-central1-b on-demand"]
    assert {c.region for c in s.candidates} == {"us-east5", "us-central1"}  # REGION follows each zone
    # every existing reader sees the first candidate
    assert (s.zone, s.region, s.provisioning, s.tpu_spot) == ("us-east5-b", "us-east5", "spot", True)
    assert s.raw["ZONE"] == "us-east5-b, us-east5-a,us-central1-b"


def test_region_set_must_hold_every_zone(make_env: Callable[..., Path]) -> None:
    s = load(make_env(MIG, ZONE="us-east5-b,us-east5-a", REGION="us-east5"))
    assert [c.region for c in s.candidates] == ["us-east5", "us-east5"]
    with pytest.raises(ConfigError, match="REGION: is 'us-east5', but ZONE's candidates span regions us-east5, "
                                          "us-central1; leave REGION empty"):
        load(make_env(MIG, ZONE="us-east5-b,us-central1-b", REGION="us-east5"))


def test_granted_reads_the_snapshot_and_old_snapshots_read_as_before() -> None:
    assert granted(None) is None
    assert granted({"values": "ZONE=x"}) is None  # every snapshot made before candidates
    assert granted({"granted": {"zone": "", "mode": "spot"}}) is None
    assert granted({"granted": "us-east5-a"}) is None
    assert granted({"granted": {"zone": "us-east5-a", "mode": "flex-start"}}) == Candidate("us-east5-a", "us-east5", "flex-start")


def test_the_granted_place_stays_while_the_list_holds_it() -> None:
    cands = ordered(("us-east5-b", "us-east5-a"), ("spot", "on-demand"))
    place = Candidate("us-east5-a", "us-east5", "spot")
    assert stays(cands, place)
    assert not stays(ordered(("us-east5-b",), ("spot", "on-demand")), place)  # the user removed its zone
    assert not stays(cands, None)
    assert [c.label for c in first_is(cands, place)] == [
        "us-east5-a spot", "us-east5-b spot", "us-east5-b on-demand", "us-east5-a on-demand"]


def test_validate_names_every_candidate_in_order(cli) -> None:
    code, out, err = cli("validate", "--values", EXAMPLES / "mig-v6e-16-failover.env")
    assert code == 0, err
    assert out.rstrip().endswith("; 9 candidates, zone by zone, mode by mode: us-east5-b spot, us-east5-b flex-start, "
                                 "us-east5-b on-demand, us-east5-a spot, us-east5-a flex-start, us-east5-a on-demand, "
                                 "us-central1-b spot, us-central1-b flex-start, us-central1-b on-demand")


def test_auto_keeps_the_slice_when_only_later_candidates_change(make_env: Callable[..., Path]) -> None:
    from builder.planning.auto import decide

    old = load(make_env(MIG, ZONE="us-east5-b,us-east5-a"))
    new = load(make_env(MIG, ZONE="us-east5-b,us-central1-b"))
    found = decide(new, old, plan_modules=("filestore", "tpu", "mig", "dashboard"))
    assert found.action == "none"
    assert found.reasons == ("candidates: us-east5-b spot, us-east5-a spot → us-east5-b spot, us-central1-b spot "
                             "(the slice stays in us-east5-b spot; the list is read when the slice is acquired again)",)


def test_zone_check_warn_warns_for_each_zone_without_the_slice(make_env: Callable[..., Path]) -> None:
    s = load(make_env(MIG, ZONE="us-central1-a,us-east5-b,us-west4-a", TPU_ZONE_CHECK="warn"))
    said = [w for w in s.warnings if "ZONE: the candidate zone" in w]
    assert len(said) == 2 and "us-central1-a (zone 1 of 3)" in said[0] and "us-west4-a (zone 3 of 3)" in said[1]
    assert 'TPU_ZONE_CHECK="warn" lets it through' in said[0]


def test_a_legacy_flag_that_contradicts_the_first_mode_names_the_list(make_env: Callable[..., Path]) -> None:
    with pytest.raises(ConfigError, match='TPU_SPOT: "true" means spot, but TPU_PROVISIONING is "on-demand,spot" '
                                          r'\(the legacy flags describe the first mode\)'):
        load(make_env(MIG, TPU_PROVISIONING="on-demand,spot", TPU_SPOT="true"))


def test_plan_text_and_json_tell_the_same_candidates(cli) -> None:
    import json

    path = EXAMPLES / "mig-v6e-16-failover.env"
    code, text, err = cli("--values", path, "plan", "--applied", "none")
    assert code == 0, err
    info = json.loads(cli("--values", path, "plan", "--applied", "none", "--format", "json")[1])
    rows = info["candidates"]["rows"]
    table = text[text.index("Candidates, tried in order (zone by zone, mode by mode):"):].splitlines()
    assert [r["n"] for r in rows] == list(range(1, 10))
    for r, line in zip(rows, table[2:]):
        assert line.split()[:3] == [str(r["n"]), r["zone"], r["mode"]] and r["slice_price"] in line, (r, line)
    assert rows[0]["slice_price"] == "$19.44/h" and rows[1]["slice_price"] == "$21.60/h"  # flex: its DWS Defined Duration SKU
    assert f"  {info['cost']['candidates']['text']}\n" in text
    worst = info["cost"]["candidates"]["worst"]
    # the worst case is the whole environment with the dearest slice (Filestore stays in the same region here)
    assert worst["hourly"] == pytest.approx(max(r["slice_hourly"] for r in rows) + info["cost"]["after"]["hourly_known"]
                                            - rows[0]["slice_hourly"], abs=1e-3)


def test_auto_move_refuses_a_list_that_drops_the_granted_zone_and_only_that(make_env: Callable[..., Path], cli) -> None:
    """The gate's auto-move row (builder/config/moves.py): the new list is placed where the applied
    slice is first, so a list that still holds the zone and keeps its first zone moves nothing; one
    that drops it, or puts another zone first (a move, which update does), is refused once, for ZONE
    (its REGION follows), by the row and by auto's decision alike, saying to run update."""
    from builder.config.gate import refusals, Door
    from builder.facts.actions import Action
    from builder.planning.auto import decide

    old = load(make_env(MIG, ZONE="us-east5-a"))
    kept = load(make_env(MIG, ZONE="us-east5-a,us-east5-b"))
    assert refusals(kept, Action.AUTO, Door.PLAN, old) == []
    reordered = load(make_env(MIG, ZONE="us-east5-b,us-east5-a"))
    (line,) = [str(e) for e in refusals(reordered, Action.AUTO, Door.PLAN, old)]
    assert "ZONE: changed from 'us-east5-a' to 'us-east5-b'" in line and "run `tpubuild update`" in line, line
    moved_path = make_env(MIG, ZONE="us-central1-b,us-east5-b")
    moved = load(moved_path)
    (line,) = [str(e) for e in refusals(moved, Action.AUTO, Door.DISPATCH, old)]
    assert line.endswith("ZONE: changed from 'us-east5-a' to 'us-central1-b' since the applied snapshot; auto does "
                         "not move an environment: run `tpubuild update`, which moves it make-before-break "
                         "(docs/capacity.md, \"Moving an environment to another zone\"), or put the value back"), line
    off = load(make_env(MIG, ZONE="us-central1-b,us-east5-b", TPU_MOVE="false"))
    (line,) = [str(e) for e in refusals(off, Action.AUTO, Door.DISPATCH, old)]
    assert line.endswith("put the value back, or run destroy and then create"), line
    assert refusals(moved, Action.UPDATE, Door.PLAN, old) == []  # an explicit update shows the move in its plan
    with pytest.raises(ConfigError, match="since build b-7; auto does not move"):
        decide(moved, old, plan_modules=("filestore", "tpu", "mig", "dashboard"), build_id="b-7")
    applied = make_env(MIG, ZONE="us-east5-a")
    code, _, err = cli("validate", "--values", moved_path, "--applied", applied)
    assert code == 2 and "ZONE: changed from 'us-east5-a' to 'us-central1-b'" in err, err
