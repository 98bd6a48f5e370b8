"""`tpubuild plan` against the applied snapshot read from the state bucket (fake-gcs-server):
the same rules as `--applied FILE` (builder/planning/applied.py compared_with)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import NODE, rewrite_env
from tests.support.fakes.fixtures import Fakes, fakes, repo  # noqa: F401 - fixtures


def _applied(fakes: Fakes, repo: Path, cli, values: bytes):
    from builder.cloud import snapshot
    from builder.config import load

    assert cli("--values", repo, "initialize")[0] == 0
    s = load(repo)
    bucket = fakes.storage().bucket(s.state_bucket)
    snapshot.write(bucket, s.env_name, snapshot.Applied(values=values, build_id="b1", action="create", time="t"),
                   expected_generation=0)
    return s


def test_a_snapshot_of_another_environment_is_refused(fakes: Fakes, repo: Path, cli) -> None:
    text = repo.read_text()
    from builder.config import load

    env = load(repo).env_name
    _applied(fakes, repo, cli, rewrite_env(text, ENV_BUILD_NAME="someone-else").encode())
    code, out, err = cli("--values", repo, "plan")
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "another environment" in err and "'someone-else'" in err and repr(env) in err


def test_a_node_era_snapshot_is_read_and_reported(fakes: Fakes, repo: Path, cli) -> None:
    from builder.config import load

    s = load(repo)
    node = rewrite_env(NODE.read_text(), ENV_BUILD_NAME=s.env_name, PROJECT_ID=s.project_id, ZONE=s.zone, REGION=None)
    _applied(fakes, repo, cli, node.encode())
    code, out, err = cli("--values", repo, "plan", "--format", "json")
    assert code == 0, err
    import json

    said = json.loads(out)["before_after"]["compared_with"]
    assert "(build b1): the applied environment is TPU_ARCH=node" in said and "--action destroy" in said
