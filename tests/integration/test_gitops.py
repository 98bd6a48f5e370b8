"""GitOps for a team (docs/cloud.md, "Many environments"): a repository with three environments
(dev, train, and prod with ENV_PROTECTED="true"), its six triggers imported by the real gcloud
(offline, tests/support/gcloud.py) and loaded into the real ``cloudbuild_v1`` types; which change
starts which trigger, by Cloud Build's documented file filter (tests/support/cloudbuild_filter.py);
the pull request's plan build run for real through bash against fake-gcs-server (its artifacts,
no lock, nothing written); the push build running auto of its own environment only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builder.config.calendar import resolve_start
from tests.conftest import EXAMPLES, REPO, SHIPPED, rewrite_env
from tests.support.cloudbuild_filter import matches, starts
from tests.support.fakes.fixtures import Fakes, fakes, make_repo, unique_env  # noqa: F401 - fixtures

#: environment folder → (base file, overrides). train's calendar start is written out, as a user
#: commits it (the example's "+14d" previews a start that submit and dispatch refuse), on the
#: example's day: 14 days from the pinned today (tests/conftest.py's TODAY).
LAYOUT = {"dev": (EXAMPLES / "vm-v5litepod-16.env", {}),
          "train": (EXAMPLES / "mig-v6e-32-calendar.env", {"TPU_CALENDAR_START": resolve_start("+14d")}),
          "prod": (SHIPPED, {"ENV_PROTECTED": "true"})}


def make_layout(root: Path) -> tuple[Path, str]:
    """A repository whose environments are environments/{dev,train,prod}/values.env (no root
    values.env); returns it and the prefix of their ENV_BUILD_NAMEs (unique to the test)."""
    prefix = unique_env()
    make_repo(root, prefix).unlink()
    for name, (base, extra) in LAYOUT.items():
        path = root / "environments" / name / "values.env"
        path.parent.mkdir(parents=True)
        path.write_text(rewrite_env(base.read_text(), ENV_BUILD_NAME=f"{prefix}-{name}", **extra))
    return root, prefix


def _triggers(repo: Path, *args: str) -> list[dict]:
    """``tpubuild trigger`` run at ``repo``'s root (in-process), its documents parsed."""
    import contextlib
    import io

    from builder.cli import main

    out, cwd = io.StringIO(), Path.cwd()
    os.chdir(repo)
    try:
        with contextlib.redirect_stdout(out):
            assert main(["trigger", "--repo-owner", "acme", "--repo-name", "tpu-env", *args]) == 0
    finally:
        os.chdir(cwd)
    return list(yaml.safe_load_all(out.getvalue()))


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, str]:
    return make_layout(tmp_path / "repo")


def test_six_triggers_imported_by_the_real_gcloud(gcloud, layout) -> None:
    from google.cloud.devtools import cloudbuild_v1

    repo, prefix = layout
    gcloud.answer(r"/triggers(/[^/]+)?$", 200, {"id": "t-1", "name": "x"})
    before = len(gcloud.fake.requests)
    env = {**gcloud.env, "PATH": f"{Path(sys.executable).parent}:{gcloud.env.get('PATH', '')}",
           "PYTHONPATH": str(REPO)}
    command = ("set -euo pipefail; tpubuild trigger --repo-owner acme --repo-name tpu-env "
               "| gcloud builds triggers import --source=/dev/stdin")
    proc = subprocess.run(["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    sent = {r.body["name"]: r.body for r in gcloud.fake.requests[before:]
            if "/triggers" in r.path and isinstance(r.body, dict) and "name" in r.body}
    names = {f"tpubuild-{prefix}-{env}-{kind}" for env in LAYOUT for kind in ("plan", "auto")}
    assert set(sent) == names, sorted(sent)
    shared = ["builder/**", "modules/**", "env_setup/**", "models/**", "setup.cfg", "pyproject.toml"]
    for env in LAYOUT:
        plan, auto = sent[f"tpubuild-{prefix}-{env}-plan"], sent[f"tpubuild-{prefix}-{env}-auto"]
        for body in (plan, auto):
            assert body["includedFiles"] == [f"environments/{env}/values.env", *shared]
            assert body["ignoredFiles"] == ["**/*.md", "docs/**"]
            kind = "pl" if body is plan else "cb"  # the pull request's code never runs as the builder account
            assert body["serviceAccount"].endswith(f"/tb-{prefix}-{env}-{kind}@my-tpu-project.iam.gserviceaccount.com")
            trigger = cloudbuild_v1.BuildTrigger.from_json(json.dumps(body))  # the real type takes it whole
            assert trigger.build.steps[0].env[1] == f"TPUBUILD_VALUES=environments/{env}/values.env"
        assert plan["build"]["serviceAccount"] == plan["serviceAccount"]
        assert plan["github"]["pullRequest"]["branch"] == "^main$" and "push" not in plan["github"]
        assert auto["github"]["push"] == {"branch": "^main$"} and "pullRequest" not in auto["github"]
        assert "approvalConfig" not in plan and "substitutions" not in plan
        assert auto["substitutions"]["_BUILD_ACTION"] == "auto"
        assert ("approvalConfig" in auto) == (env == "prod")
    assert sent[f"tpubuild-{prefix}-prod-auto"]["approvalConfig"] == {"approvalRequired": True}


def test_a_change_starts_only_its_environments_triggers(layout) -> None:
    repo, prefix = layout
    triggers = _triggers(repo)

    def started(*changed: str) -> set[str]:
        return {t["name"].removeprefix(f"tpubuild-{prefix}-") for t in triggers if starts(t, changed)}

    assert started("environments/dev/values.env") == {"dev-plan", "dev-auto"}
    assert started("environments/prod/values.env", "docs/cloud.md") == {"prod-plan", "prod-auto"}
    every = {f"{e}-{k}" for e in LAYOUT for k in ("plan", "auto")}
    assert started("modules/tpu_vm/main.tf") == every
    assert started("builder/planning/plan.py") == started("env_setup/scripts/startup.sh") == every
    assert started("docs/cloud.md", "README.md", "modules/tpu_vm/README.md", "environments/dev/NOTES.md") == set()
    assert started("environments/dev/other.env", "tools/readme_plan.py") == set()


@pytest.mark.parametrize(("glob", "path", "expected"), [
    ("**/*.md", "README.md", True), ("**/*.md", "modules/tpu_vm/README.md", True),
    ("docs/**", "docs/a/b.png", True), ("modules/**", "modules/tpu_vm/main.tf", True),
    ("environments/dev/values.env", "environments/dev/values.env", True),
    ("environments/dev/values.env", "environments/dev2/values.env", False),
    ("values.env", "environments/dev/values.env", False),
    ("environments/*/values.env", "environments/dev/values.env", True),
    ("environments/*/values.env", "environments/dev/x/values.env", False),  # * never crosses a /
    ("modules/**", "modules2/x.tf", False), ("env?.env", "env1.env", True), ("[ab].env", "c.env", False),
])
def test_the_filter_is_go_filepath_match_with_double_star(glob, path, expected) -> None:
    assert matches(glob, path) is expected


def test_only_ignored_files_start_nothing_and_no_filter_starts_everything() -> None:
    assert starts({}, ["anything"]) and starts({"includedFiles": []}, ["x"])
    assert not starts({"ignoredFiles": ["**/*.md"]}, ["a.md", "b/c.md"])
    assert starts({"ignoredFiles": ["**/*.md"], "includedFiles": ["x"]}, ["a.md", "x"])


def test_the_root_values_env_joins_as_one_environment(tmp_path: Path) -> None:
    repo, prefix = make_layout(tmp_path / "repo")
    (repo / "values.env").write_text(rewrite_env(SHIPPED.read_text(), ENV_BUILD_NAME=f"{prefix}-root"))
    triggers = _triggers(repo)
    assert len(triggers) == 8
    [root] = [t for t in triggers if t["name"] == f"tpubuild-{prefix}-root-plan"]
    assert root["includedFiles"][0] == "values.env" and starts(root, ["values.env"])
    assert not starts(root, ["environments/dev/values.env"])


def test_an_environments_paths_resolve_in_its_repository(layout) -> None:
    """MIG_SETUP_SCRIPT and models/ of environments/<name>/values.env are the repository's, as in
    the build (where the file is packed as the root values.env)."""
    from builder.config import load

    repo, _ = layout
    assert load(repo / "environments" / "dev" / "values.env").repo_root == repo.resolve()


def test_a_read_only_plan_account_runs_the_plan_triggers_only(layout) -> None:
    repo, prefix = layout
    email = "planner@my-tpu-project.iam.gserviceaccount.com"
    for t in _triggers(repo, "--plan-service-account", email):
        mine = t["name"].endswith("-plan")
        assert t["serviceAccount"] == t["build"]["serviceAccount"]
        assert t["serviceAccount"].endswith(f"/{email}") is mine
        assert mine or t["serviceAccount"].endswith("-cb@my-tpu-project.iam.gserviceaccount.com")


def test_values_of_one_environment_prints_its_pair_only(layout) -> None:
    repo, prefix = layout
    triggers = _triggers(repo, "--values", "environments/train/values.env")
    assert [t["name"] for t in triggers] == [f"tpubuild-{prefix}-train-plan", f"tpubuild-{prefix}-train-auto"]


def test_the_root_values_env_alone_keeps_its_one_push_trigger(tmp_path: Path) -> None:
    values = make_repo(tmp_path / "repo", "solo-env")
    [only] = _triggers(values.parent)
    assert only["name"] == "tpubuild-solo-env-auto" and only["filename"] == "cloudbuild.yaml"
    assert "build" not in only and "pullRequest" not in only["github"]


def _step(trigger: dict) -> tuple[str, dict[str, str]]:
    """The trigger's one step as Cloud Build runs it: ``$BUILD_ID`` and the ``$_NAME``
    substitutions (the trigger's over the build's) replaced, ``$$`` → ``$``."""
    [step] = trigger["build"]["steps"]
    values = {"BUILD_ID": "b-123", **trigger["build"].get("substitutions", {}), **trigger.get("substitutions", {})}

    def subst(text: str) -> str:
        return re.sub(r"\$\$|\$(BUILD_ID|_[A-Z0-9_]+)", lambda m: "$" if m.group() == "$$" else values[m.group(1)],
                      text)

    env = dict(e.split("=", 1) for e in step["env"])
    return subst(step["args"][1]), {k: subst(v) for k, v in env.items()}


def _run_step(repo: Path, trigger: dict, tmp: Path) -> subprocess.CompletedProcess[str]:
    """Run the step's bash script in ``repo`` with the tpubuild of this tree; ``python -m pip
    install .`` (the image's install of the repository) is the one thing stood in for."""
    script, step_env = _step(trigger)
    shim = tmp / "shim"
    shim.mkdir()
    (shim / "python").write_text(f'#!/usr/bin/env bash\nset -euo pipefail\n'
                                 f'if [ "$1 $2 $3" = "-m pip install" ]; then exit 0; fi\nexec {sys.executable} "$@"\n')
    (shim / "python").chmod(0o755)
    empty = tmp / "home"
    empty.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k.startswith(("STORAGE_EMULATOR_HOST", "TPUBUILD_"))},
           **step_env, "PATH": f"{shim}:{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(REPO),
           "HOME": str(empty), "CLOUDSDK_CONFIG": str(empty)}
    return subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def _objects(bucket) -> dict[str, int]:
    return {b.name: b.generation for b in bucket.client.list_blobs(bucket.name)}


def test_the_pull_request_build_plans_keeps_artifacts_and_writes_nothing(fakes: Fakes, layout, cli, tmp_path) -> None:
    from builder.cloud import lock, snapshot
    from builder.config import load

    repo, prefix = layout
    dev = repo / "environments" / "dev" / "values.env"
    assert cli("--values", dev, "initialize")[0] == 0
    s = load(dev)
    bucket = fakes.storage().bucket(s.state_bucket)
    applied = rewrite_env(dev.read_text(), TPU_ACCELERATOR_TYPE="v5litepod-8")
    snapshot.write(bucket, s.env_name, snapshot.Applied(values=applied.encode(), build_id="b0", action="create",
                                                        time="t"), expected_generation=0)
    before = _objects(bucket)
    [plan] = [t for t in _triggers(repo) if t["name"] == f"tpubuild-{prefix}-dev-plan"]
    proc = _run_step(repo, plan, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert set(plan["build"]["artifacts"]["objects"]["paths"]) == {"plan.txt", "plan.json", "plan.md"}
    text, info = (repo / "plan.txt").read_text(), json.loads((repo / "plan.json").read_text())
    page = (repo / "plan.md").read_text()  # the reviewer's page: the money and the picture of what the merge runs
    assert "## Cost" in page and info["cost"]["change"] in page
    assert "```mermaid\nflowchart TD" in page and "tpu_apply" in page and "mig_apply" not in page
    assert text and text in proc.stdout  # shown in the build log too
    assert info["env"] == s.env_name and info["auto"]["decision"] == "update" and info["auto"]["modules"] == ["tpu"]
    assert "(build b0)" in info["before_after"]["compared_with"]
    assert _objects(bucket) == before, "the plan build wrote to the state bucket"
    assert lock.read(bucket, s.env_name) is None


def test_the_push_build_runs_auto_of_its_own_environment_only(fakes: Fakes, layout, cli, tmp_path) -> None:
    import gzip
    import io
    import tarfile

    from builder.config import load

    repo, prefix = layout
    train = repo / "environments" / "train" / "values.env"
    assert cli("--values", train, "initialize")[0] == 0
    [auto] = [t for t in _triggers(repo) if t["name"] == f"tpubuild-{prefix}-train-auto"]
    proc = _run_step(repo, auto, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"dispatch: auto of {prefix}-train" in proc.stdout and "auto: create" in proc.stdout
    [build] = fakes.google.created
    assert f"tpubuild-{prefix}-train" in build["tags"]
    source = build["source"]["storageSource"]
    assert source["bucket"] == load(train).state_bucket
    tgz = fakes.storage().bucket(source["bucket"]).blob(source["object"]).download_as_bytes()
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(tgz))) as tar:
        assert tar.extractfile("values.env").read() == train.read_bytes()
    for other in ("dev", "prod"):
        assert not fakes.storage().bucket(load(repo / "environments" / other / "values.env").state_bucket).exists()


def test_a_second_gen_connection_gives_every_pair_the_linked_repository(layout) -> None:
    """--connection/--region: both triggers of each environment listen through the 2nd-gen
    connection's linked repository (repositoryEventConfig), the plan trigger with the same comment
    control, and load whole into the real BuildTrigger type."""
    from google.cloud.devtools import cloudbuild_v1

    repo, prefix = layout
    repository = "projects/my-tpu-project/locations/us-central1/connections/gh/repositories/tpu-env"
    triggers = _triggers(repo, "--connection", "gh", "--region", "us-central1")
    assert len(triggers) == 2 * len(LAYOUT)
    for t in triggers:
        assert "github" not in t and t["repositoryEventConfig"]["repository"] == repository
        event = t["repositoryEventConfig"]
        if t["name"].endswith("-plan"):
            assert event["pullRequest"] == {"branch": "^main$",
                                            "commentControl": "COMMENTS_ENABLED_FOR_EXTERNAL_CONTRIBUTORS_ONLY"}
        else:
            assert event["push"] == {"branch": "^main$"} and "pullRequest" not in event
        loaded = cloudbuild_v1.BuildTrigger.from_json(json.dumps(t))
        assert loaded.repository_event_config.repository == repository
