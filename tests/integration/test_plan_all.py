"""`tpubuild plan --all`: every environment of a repository in one table (builder/commands/plan_all.py),
offline without credentials and against the applied snapshots in fake-gcs-server; each row tells
what `tpubuild plan --action auto` of that file tells."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import rewrite_env, run_tpubuild
from tests.integration.test_gitops import LAYOUT, make_layout
from tests.support.fakes.fixtures import Fakes, fakes  # noqa: F401 - fixtures


def _json(cli, *args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_offline_every_environment_is_a_row_with_its_snapshot_unknown(no_cloud, tmp_path: Path, cli,
                                                                     monkeypatch) -> None:
    repo, prefix = make_layout(tmp_path / "repo")
    monkeypatch.chdir(repo)
    code, out, err = cli("plan", "--all")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["ENVIRONMENT", "NAME", "AUTO"]
    rows = {ln.split()[0]: ln for ln in lines[1:4]}
    assert set(rows) == {f"environments/{e}/values.env" for e in LAYOUT}
    assert "(protected)" in rows["environments/prod/values.env"]
    assert all(" unknown " in r and " ? -> " in r for r in rows.values())
    assert "no Google credentials to read it from gs://" in out
    data = _json(cli, "plan", "--all")["environments"]
    for row in data:  # the cost after is what the file's own plan says
        own = _json(cli, "--values", row["path"], "plan")
        assert row["cost_after"] == own["cost"]["after"]["total"] and row["cost_after"] in out
        assert row["applied"] == "unknown" and row["cost_before"] is None


def test_against_the_snapshots_each_row_is_autos_own_plan(fakes: Fakes, tmp_path: Path, cli, monkeypatch) -> None:
    from builder.cloud import snapshot
    from builder.config import load

    repo, prefix = make_layout(tmp_path / "repo")
    monkeypatch.chdir(repo)
    paths = {e: f"environments/{e}/values.env" for e in LAYOUT}
    # prod was applied as a v3-128 and now asks for a v3-32; train is as applied; dev was never applied
    applied = {"prod": rewrite_env((repo / paths["prod"]).read_text(), TPU_ACCELERATOR_TYPE="v3-128"),
               "train": (repo / paths["train"]).read_text()}
    for env, text in applied.items():
        assert cli("--values", paths[env], "initialize")[0] == 0
        s = load(repo / paths[env])
        snapshot.write(fakes.storage().bucket(s.state_bucket), s.env_name,
                       snapshot.Applied(values=text.encode(), build_id="b1", action="create", time="t"),
                       expected_generation=0)
    rows = {r["path"]: r for r in _json(cli, "plan", "--all")["environments"]}
    dev, train, prod = rows[paths["dev"]], rows[paths["train"]], rows[paths["prod"]]
    assert (prod["action"], prod["modules"], prod["protected"]) == ("update", ["tpu"], True)
    own = _json(cli, "--values", paths["prod"], "plan", "--action", "auto")
    assert (prod["cost_before"], prod["cost_after"]) == (own["cost"]["before"]["total"], own["cost"]["after"]["total"])
    assert prod["hourly_before"] > prod["hourly_after"] > 0
    assert train["action"] == "none" and train["cost_before"] == train["cost_after"]
    assert dev["action"] == "create" and dev["applied"] == "none" and dev["cost_before"] is None
    code, out, _ = cli("plan", "--all")
    assert code == 0
    assert "update tpu" in out and "nothing to do" in out and "$0/h (nothing applied) -> " in out


def test_help_lists_all_and_the_trigger_pair() -> None:
    plan = run_tpubuild("plan", "--help")
    assert plan.returncode == 0 and "--all" in plan.stdout and "tpubuild plan --all" in plan.stdout
    trigger = " ".join(run_tpubuild("trigger", "--help").stdout.split())
    assert "environments/<name>/values.env" in trigger and "ENV_PROTECTED" in trigger
