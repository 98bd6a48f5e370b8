"""The move of an environment to another zone as `tpubuild plan --action update` shows it
(builder/planning/move.py; docs/capacity.md, "Moving an environment to another zone"): when an
update moves (builder/config/candidates.py `reordered`, `settle`, `move_to`), the section in text
and JSON (steps in order, modelled minutes, both zones billed), the before → after saying
"moved" instead of "data lost", and TPU_MOVE="false" keeping today's refusal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.config import load
from builder.config.candidates import Candidate, move_to, reordered, settle
from tests.conftest import EXAMPLES

V5P = EXAMPLES / "vm-v5p-32.env"  # a dataset disk, BASIC_SSD Filestore, roberta


def test_a_list_that_puts_another_zone_first_moves_and_one_that_keeps_its_first_zone_stays(
        make_env: Callable[..., Path]) -> None:
    same = load(make_env(V5P, ZONE="us-east5-a,us-east5-b"))
    place = Candidate("us-east5-b", "us-east5", same.provisioning)  # a failover granted the second zone
    assert not reordered(same, place, "us-east5-a") and settle(same, place, "us-east5-a").zone == "us-east5-b"
    assert settle(same, place).zone == "us-east5-b"  # the applied list unknown: nothing reordered
    back = load(make_env(V5P, ZONE="us-east5-b,us-east5-a"))  # the slice's zone put first: nothing moves
    assert not reordered(back, place, "us-east5-a") and settle(back, place, "us-east5-a").zone == "us-east5-b"
    granted_a = Candidate("us-east5-a", "us-east5", same.provisioning)
    assert reordered(back, granted_a, "us-east5-a") and settle(back, granted_a, "us-east5-a").zone == "us-east5-b"
    # the health build's move to the next candidate zone: the same list a user would write
    assert move_to(same, "us-east5-b").zone == "us-east5-b"
    assert [c.zone for c in move_to(same, "us-east5-b").candidates] == ["us-east5-b", "us-east5-a"]
    with pytest.raises(ValueError, match="'us-central1-a' is not a zone of the ZONE list"):
        move_to(same, "us-central1-a")


def test_plan_shows_the_move_in_text_and_json(make_env: Callable[..., Path], cli) -> None:
    applied = make_env(V5P, ZONE="us-east5-a,us-east5-b")
    moved = make_env(V5P, ZONE="us-east5-b,us-east5-a")
    code, text, err = cli("--values", moved, "plan", "--action", "update", "--applied", applied)
    assert code == 0, err
    info = json.loads(cli("--values", moved, "plan", "--action", "update", "--applied", applied,
                          "--format", "json")[1])
    move = info["move"]
    assert (move["from"], move["to"], move["modelled"], move["built"]) == ("us-east5-a", "us-east5-b", True, True)
    assert "the build renders these steps" in move["text"] and "not render" not in move["text"]
    assert move["why"] == "the ZONE list puts us-east5-b first"
    order = [s["step"] for s in move["steps"]]
    # the storage is copied while the old slice trains, then the slice, the handover, the old zone last
    assert order == ["shared_pd-snapshot", "shared_pd-apply", "filestore-backup", "filestore-apply", "tpu-apply",
                     "tpu-checkpoint", "tpu-resume", "tpu-release", "filestore-release", "shared_pd-release"]
    assert [s["training"] for s in move["steps"]].index("stops") == order.index("tpu-checkpoint")
    assert move["both_zones_minutes"] < move["storage_both_minutes"] and move["down_minutes"] > 0
    assert move["both_zones_cost"] > 0 and set(move["kept_per_month"]) == {
        "the disk's snapshot (at most)", "the share's backups (at most)"}
    assert f"note: {move['text']}" in text and "move: us-east5-a → us-east5-b" in text and "modelled" in text
    lines = info["before_after"]["lines"]
    for module in ("filestore", "shared_pd"):
        (line,) = [x for x in lines if x.startswith(f"{module}: zone")]
        assert "moved: made in us-east5-b from a copy" in line and "data is lost" not in line, line
        assert not next(m for m in info["before_after"]["modules"] if m["module"] == module)["loses_data"]


def test_move_off_keeps_the_data_loss_refusal_and_an_unreordered_list_moves_nothing(
        make_env: Callable[..., Path], cli) -> None:
    applied = make_env(V5P, ZONE="us-east5-a,us-east5-b")
    off = make_env(V5P, ZONE="us-east5-b,us-east5-a", TPU_MOVE="false")
    info = json.loads(cli("--values", off, "plan", "--action", "update", "--applied", applied, "--format", "json")[1])
    assert info["move"] is None
    (line,) = [x for x in info["before_after"]["lines"] if x.startswith("filestore: zone")]
    assert "data is lost" in line
    grown = make_env(V5P, ZONE="us-east5-a,us-east5-b", SHARED_PD_DISK_SIZE="600")
    info = json.loads(cli("--values", grown, "plan", "--action", "update", "--applied", applied, "--format", "json")[1])
    assert info["move"] is None and info["zone"] == "us-east5-a"


def test_move_to_places_the_update_whatever_the_granted_place(make_env: Callable[..., Path], cli) -> None:
    """--move-to ZONE (plan, render, submit, dispatch): the health build's move (docs/recovery.md) and
    a user's, even back to the list's first zone, which a reorder cannot ask for after a failover."""
    same = load(make_env(V5P, ZONE="us-east5-a,us-east5-b"))
    granted_b = Candidate("us-east5-b", "us-east5", same.provisioning)
    back = move_to(same, "us-east5-a")
    assert back.move_to == "us-east5-a" and settle(back, granted_b, "us-east5-a").zone == "us-east5-a"
    applied = make_env(V5P, ZONE="us-east5-a,us-east5-b")
    info = json.loads(cli("--values", applied, "plan", "--action", "update", "--applied", applied,
                          "--move-to", "us-east5-b", "--format", "json")[1])
    assert (info["move"]["to"], info["move"]["why"]) == ("us-east5-b", "asked for with --move-to us-east5-b")
    code, _, err = cli("--values", applied, "plan", "--move-to", "us-east5-b")
    assert code == 2 and err == "tpubuild: error: --move-to: moving the environment to us-east5-b is an update; use --action update\n"
    code, _, err = cli("--values", applied, "plan", "--action", "update", "--move-to", "us-central1-a")
    assert code == 2 and "'us-central1-a' is not a zone of the ZONE list (us-east5-a, us-east5-b)" in err, err


def test_a_regional_share_stays_in_its_region(make_env: Callable[..., Path], cli) -> None:
    """REGIONAL and ENTERPRISE Filestore live in the region (modules/filestore): a move within it
    copies the disk only, and the before → after leaves the share alone."""
    regional = {"SHARED_FS_TIER": "REGIONAL", "SHARED_FS_CAPACITY": "1024"}
    applied = make_env(V5P, ZONE="us-east5-a,us-east5-b", **regional)
    moved = make_env(V5P, ZONE="us-east5-b,us-east5-a", **regional)
    info = json.loads(cli("--values", moved, "plan", "--action", "update", "--applied", applied, "--format", "json")[1])
    assert [s["step"] for s in info["move"]["steps"] if "filestore" in s["step"]] == []
    assert set(info["move"]["kept_per_month"]) == {"the disk's snapshot (at most)"}
    assert {m["module"]: m["status"] for m in info["before_after"]["modules"]}["filestore"] != "replace"
    assert not [x for x in info["before_after"]["lines"] if x.startswith("filestore: zone")]
