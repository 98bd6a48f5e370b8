"""A failover create end to end through the CLI and the fakes (fake-gcs-server, the Cloud Build
fake): `tpubuild dispatch --action create` packs each candidate's variables
(tfvars/candidates/<i>/<module>.tfvars.json, builder.inputs.tfvars.by_candidate) beside the first's; the
pipeline's acquisition (its result here: the granted place it leaves in the workspace, as
tests/shell/test_failover.py shows it running) is what `tpubuild finalize` records as the
snapshot's ``granted``; and a follow-up `plan` names the granted zone and mode, the third
candidate (tests/integration/test_granted.py: `status` and `auto` read the same record)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from tests.conftest import EXAMPLES
from tests.support.fakes.fixtures import Fakes, fakes, make_repo, unique_env  # noqa: F401 - fixtures

ZONES = ("us-east5-a", "us-east5-b", "us-east5-c")
GRANTED = {"zone": "us-east5-c", "mode": "spot"}


def test_a_failover_create_records_the_granted_place_and_plan_reads_it(fakes: Fakes, tmp_path: Path, cli,
                                                                        monkeypatch) -> None:
    from builder.cli import main
    from builder.cloud import snapshot
    from builder.config import load

    values = make_repo(tmp_path / "repo", unique_env(), base=EXAMPLES / "vm-v5litepod-16.env", ZONE=",".join(ZONES),
                       TPU_PROVISIONING="spot", GCS_DATASET="")
    assert cli("--values", values, "initialize")[0] == 0
    s = load(values)
    bucket = fakes.storage().bucket(s.state_bucket)
    workspace = tmp_path / "workspace"
    (workspace / "plans").mkdir(parents=True)
    # what tpu-apply's failover loop leaves when the third candidate granted the slice
    (workspace / "plans" / "granted.json").write_text(json.dumps(GRANTED) + "\n")
    monkeypatch.setenv("WORKSPACE", str(workspace))
    ran: list[int] = []
    fakes.google.on_done = lambda build_id, state: ran.append(
        main(["--values", str(values), "finalize", "--build-id", build_id, "--action", "create"]))
    code, out, err = cli("--values", values, "dispatch", "--action", "create", "--tpu", "default", "--mig", "default")
    assert code == 0, err
    [body] = fakes.google.created
    tgz = bucket.blob(body["source"]["storageSource"]["object"]).download_as_bytes()
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        for i, zone in enumerate(ZONES):
            for module in ("tpu", "filestore", "shared_pd"):
                assert json.loads(tar.extractfile(f"tfvars/candidates/{i}/{module}.tfvars.json").read())["zone"] == zone
        assert json.loads(tar.extractfile("tfvars/tpu.tfvars.json").read())["zone"] == ZONES[0]
    ids = [st["id"] for st in body["steps"]]
    assert ids.index("tpu-apply") < ids.index("filestore-plan")  # the storage after the slice's acquisition
    assert ran == [0]
    assert snapshot.read(bucket, s.env_name).granted == GRANTED
    code, out, err = cli("--values", values, "plan", "--action", "update", "--format", "json")
    assert code == 0, err
    info = json.loads(out)
    assert info["zone"] == "us-east5-c" and info["candidates"]["granted"] == GRANTED
