"""The granted place read back (builder/config/candidates.py): an applied snapshot (fake-gcs-server)
that records ``granted`` makes ``plan``, ``auto`` and ``status`` work where the slice really is, a
later candidate than the list's first; an edit that keeps that place in the list keeps the slice
there, one that drops it moves the slice (a replacement); a snapshot without ``granted`` reads as
before (the first candidate)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLES, rewrite_env
from tests.support.fakes.fixtures import Fakes, fakes, make_repo, unique_env  # noqa: F401 - fixtures

LIST = {"ZONE": "us-east5-b,us-east5-a", "TPU_PROVISIONING": "spot,flex-start"}
GRANTED = {"zone": "us-east5-a", "mode": "flex-start"}


def _env(fakes: Fakes, tmp_path: Path, cli, granted: dict[str, str] | None) -> Path:
    from builder.cloud import snapshot
    from builder.config import load

    values = make_repo(tmp_path / "repo", unique_env(), base=EXAMPLES / "mig-v6e-16-spot.env", **LIST)
    assert cli("--values", values, "initialize")[0] == 0
    s = load(values)
    bucket = fakes.storage().bucket(s.state_bucket)
    snapshot.write(bucket, s.env_name, snapshot.Applied(values=values.read_bytes(), build_id="b1", action="create",
                                                        time="t", granted=granted or {}), expected_generation=0)
    assert snapshot.read(bucket, s.env_name).granted == (granted or {})
    return values


def _submitted(fakes: Fakes, *modules: str) -> list[dict]:
    """The tfvars of ``modules`` in the source of the one build submitted."""
    import io
    import tarfile

    [body] = fakes.google.created
    obj = body["source"]["storageSource"]
    tgz = fakes.storage().bucket(obj["bucket"]).blob(obj["object"]).download_as_bytes()
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        return [json.loads(tar.extractfile(f"tfvars/{m}.tfvars.json").read()) for m in modules]


def _plan(cli, values: Path, *args: str) -> dict:
    code, out, err = cli("--values", values, "plan", "--format", "json", *args)
    assert code == 0, err
    return json.loads(out)


def test_plan_and_auto_stay_in_the_granted_place(fakes: Fakes, tmp_path: Path, cli) -> None:
    values = _env(fakes, tmp_path, cli, GRANTED)
    info = _plan(cli, values, "--action", "update")
    assert info["zone"] == "us-east5-a" and info["slice"]["provisioning"] == "flex-start"
    listed = info["candidates"]
    assert listed["granted"] == GRANTED and listed["stays"]
    assert [r["zone"] + " " + r["mode"] for r in listed["rows"] if r["granted"]] == ["us-east5-a flex-start"]
    assert {m["module"]: m["status"] for m in info["before_after"]["modules"]}["mig"] == "unchanged"
    assert info["cost"]["candidates"]["priced"] == {**GRANTED, "why": "the granted place"}
    code, out, err = cli("--values", values, "plan", "--action", "update")
    assert "granted us-east5-a flex-start (the applied snapshot): updates keep the slice there" in out, err
    # the same list in another order keeps the slice where it is: auto has nothing to do
    values.write_text(rewrite_env(values.read_text(), ZONE="us-east5-a,us-east5-b",
                                  TPU_PROVISIONING="flex-start,spot"))
    code, out, err = cli("--values", values, "plan", "--action", "auto")
    assert code == 0 and "auto: nothing to do" in out, err


def test_a_list_that_no_longer_holds_the_granted_place_moves_the_slice(fakes: Fakes, tmp_path: Path, cli) -> None:
    values = _env(fakes, tmp_path, cli, GRANTED)
    values.write_text(rewrite_env(values.read_text(), TPU_PROVISIONING="spot"))
    info = _plan(cli, values, "--action", "update")
    assert info["zone"] == "us-east5-b" and not info["candidates"]["stays"]
    assert "moves the slice to us-east5-b spot (a replacement)" in info["candidates"]["story"]
    assert {m["module"]: m["status"] for m in info["before_after"]["modules"]}["mig"] != "unchanged"


def test_a_snapshot_without_granted_reads_as_before(fakes: Fakes, tmp_path: Path, cli) -> None:
    values = _env(fakes, tmp_path, cli, None)
    info = _plan(cli, values, "--action", "update")
    assert info["zone"] == "us-east5-b" and info["candidates"]["granted"] is None


def test_status_reads_the_slice_where_it_was_granted(fakes: Fakes, tmp_path: Path, cli) -> None:
    from builder.config import load

    values = _env(fakes, tmp_path, cli, GRANTED)
    s = load(values)
    path = f"/compute/v1/projects/{s.project_id}/zones/us-east5-a/instanceGroupManagers/{s.tpu_name}"
    fakes.google.migs[path] = {"manager": {"name": s.tpu_name, "targetSize": 4, "status": {"isStable": True}},
                               "instances": [{"instanceStatus": "RUNNING"}] * 4}
    code, out, err = cli("--values", values, "status")
    assert code == 0, err
    assert out.splitlines()[0] == f"{s.env_name} ({s.project_id}, us-east5-a, mig architecture)"
    assert "granted    us-east5-a flex-start (candidate 4 of 4; the applied snapshot)" in out
    assert f"slice      {s.tpu_name}: 4/4 running (values.env: 4 x ct6e-standard-4t, topology 4x4, flex-start)" in out
    report = json.loads(cli("--values", values, "status", "--format", "json")[1])
    assert report["zone"] == "us-east5-a" and report["granted"]["candidate"] == 4


def test_train_reaches_the_hosts_where_the_slice_was_granted(fakes: Fakes, tmp_path: Path, cli) -> None:
    values = _env(fakes, tmp_path, cli, GRANTED)
    code, out, err = cli("--values", values, "train", "roberta", "--dry-run")
    assert code == 0, err
    assert "--zone=us-east5-a" in out and "--zone=us-east5-b" not in out, out


def test_a_moved_slice_is_priced_at_the_first_candidate(fakes: Fakes, tmp_path: Path, cli) -> None:
    values = _env(fakes, tmp_path, cli, GRANTED)
    values.write_text(rewrite_env(values.read_text(), TPU_PROVISIONING="spot,on-demand"))
    info = _plan(cli, values, "--action", "update")
    assert info["cost"]["candidates"]["priced"] == {"zone": "us-east5-b", "mode": "spot", "why": "the first candidate"}


def test_an_explicit_update_is_rendered_where_the_slice_was_granted(fakes: Fakes, tmp_path: Path, cli) -> None:
    from builder.config import load

    values = _env(fakes, tmp_path, cli, GRANTED)
    code, out, err = cli("--values", values, "submit", "--action", "update")
    assert code == 0, err
    filestore, mig = _submitted(fakes, "filestore", "mig")
    assert filestore["zone"] == "us-east5-a" and mig["zone"] == "us-east5-a", (filestore, mig)
    assert mig["provisioning"] == "flex-start"
    assert load(values).zone == "us-east5-b"  # the file's first candidate, where a create would start


def test_render_of_an_update_or_destroy_reads_the_granted_place(fakes: Fakes, tmp_path: Path, cli) -> None:
    values = _env(fakes, tmp_path, cli, GRANTED)
    values.write_text(rewrite_env(values.read_text(), TPU_PROVISIONING="spot"))  # the list drops the granted place
    for action, zone in (("update", "us-east5-b"), ("destroy", "us-east5-a")):
        code, out, err = cli("--values", values, "render", "--action", action, "--format", "json")
        assert code == 0, err
        (other,) = {"us-east5-a", "us-east5-b"} - {zone}
        assert zone in out and other not in out, action


def _dispatched(fakes: Fakes, n: int) -> tuple[str, dict[str, dict]]:
    """The ``n``-th build dispatch created: its steps' text and the tfvars of its source tarball."""
    import io
    import tarfile

    body = fakes.google.created[n]
    obj = body["source"]["storageSource"]
    tgz = fakes.storage().bucket(obj["bucket"]).blob(obj["object"]).download_as_bytes()
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        tfvars = {m.name: json.loads(tar.extractfile(m).read()) for m in tar.getmembers()
                  if m.name.startswith("tfvars/") and m.name.count("/") == 1 and m.isfile()}
    return json.dumps(body["steps"]), tfvars


def test_dispatch_destroy_and_update_act_where_the_slice_was_granted(fakes: Fakes, tmp_path: Path, cli) -> None:
    """Data safety: a destroy of an environment granted in its third candidate backs up the data
    (shared_pd-snapshot, filestore-backup) and destroys in the zone the slice and the storage are in,
    not the first candidate's (where it would find nothing and destroy the data unsaved); an update,
    scoped or not, stays there too."""
    from builder.config import load

    third = {"zone": "us-east5-a", "mode": "spot"}  # us-east5-b spot, us-east5-b flex-start, us-east5-a spot
    values = _env(fakes, tmp_path, cli, third)
    assert [c.label for c in load(values).candidates][2] == "us-east5-a spot"
    runs = (("destroy", "--mig", "true"), ("destroy", "--mig", "default"), ("update", "--mig", "true"),
            ("update", "--mig", "default"))
    for n, (action, *scope) in enumerate(runs):
        code, out, err = cli("--values", values, "dispatch", "--action", action, "--tpu", "default", *scope)
        assert code == 0, (action, scope, err)
        steps, tfvars = _dispatched(fakes, n)
        zones = {name: v["zone"] for name, v in tfvars.items() if "zone" in v}
        assert zones and set(zones.values()) == {"us-east5-a"}, (action, scope, zones)
        assert "us-east5-b" not in steps, (action, scope)  # no step names the first candidate's zone
        if action == "destroy" and scope[1] == "default":  # the full destroy saves the data first, there
            assert "filestore-backup" in steps and "us-east5-a" in steps, steps
        assert tfvars["tfvars/mig.tfvars.json"]["provisioning"] == "spot"


def test_a_list_that_puts_another_zone_first_moves_at_every_door(fakes: Fakes, tmp_path: Path, cli) -> None:
    """The applied list [b, a] granted in b; the user writes [a, b]: the first zone changed and is not
    the slice's, so the update moves the environment (docs/capacity.md, "Moving an environment to
    another zone"): plan shows the move and submit renders the update in a, from the same snapshot
    (Previous.first_zone, submit's _granted_place); auto refuses it, saying to run update."""
    values = _env(fakes, tmp_path, cli, {"zone": "us-east5-b", "mode": "spot"})
    values.write_text(rewrite_env(values.read_text(), ZONE="us-east5-a,us-east5-b"))
    info = _plan(cli, values, "--action", "update")
    assert info["zone"] == "us-east5-a" and (info["move"]["from"], info["move"]["to"]) == ("us-east5-b", "us-east5-a")
    code, out, err = cli("--values", values, "plan", "--action", "auto")
    assert code == 2 and "run `tpubuild update`" in err, err
    code, out, err = cli("--values", values, "submit", "--action", "update")
    assert code == 0, err
    (filestore,) = _submitted(fakes, "filestore")
    # placed in a; on mig the move's steps are not rendered (a MIG's slots record no zone yet), so its
    # Terraform does not move (move=false) and the guard refuses the storage's replacement
    assert filestore["zone"] == "us-east5-a" and filestore["move"] is False, filestore


def test_submit_renders_a_vm_move_with_its_copies_and_tfvars(fakes: Fakes, tmp_path: Path, cli) -> None:
    """On vm the same reorder submits the move (docs/capacity.md): the build's steps take the copies and
    release the old zone last, and the tfvars in its source say move=true and the zone it leaves."""
    from builder.cloud import snapshot
    from builder.config import load

    values = make_repo(tmp_path / "repo", unique_env(), base=EXAMPLES / "vm-v5p-32.env", ZONE="us-east5-a,us-east5-b")
    assert cli("--values", values, "initialize")[0] == 0
    s = load(values)
    bucket = fakes.storage().bucket(s.state_bucket)
    snapshot.write(bucket, s.env_name, snapshot.Applied(values=values.read_bytes(), build_id="b1", action="create",
                                                        time="t", granted={"zone": "us-east5-a", "mode": s.provisioning}),
                   expected_generation=0)
    values.write_text(rewrite_env(values.read_text(), ZONE="us-east5-b,us-east5-a"))
    code, out, err = cli("--values", values, "submit", "--action", "update")
    assert code == 0, err
    filestore, shared_pd, tpu = _submitted(fakes, "filestore", "shared_pd", "tpu")
    assert (filestore["zone"], filestore["move"], shared_pd["move"]) == ("us-east5-b", True, True)
    assert tpu["previous_zone"] == "us-east5-a"
    [body] = fakes.google.created
    ids = [st["id"] for st in body["steps"]]
    assert ids.index("shared_pd-snapshot") < ids.index("shared_pd-plan") and ids[-2] == "shared_pd-release"
