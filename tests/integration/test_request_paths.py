"""A valid request gives the same plan from every command that prepares an action
(builder.planning.request): the steps ``plan --format json`` lists are the steps ``render`` prints, and
the builds ``submit`` (flags) and ``dispatch`` (substitution strings) create run exactly those
steps, each waiting for the same steps. Cloud Build and the state bucket are the local fakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fakes.fixtures import Fakes, fakes, make_repo, unique_env  # noqa: F401 - fixtures
from tests.support.pipeline import MIG_ENV, NODE_ENV, VM_ENV
from tests.support.request import argv, request_ids

CASES = [
    (VM_ENV, "create", {}),
    (VM_ENV, "update", {"tpu": True}),
    (VM_ENV, "update", {"allow_data_loss": True}),
    (VM_ENV, "destroy", {"allow_data_loss": True}),
    (MIG_ENV, "update", {"mig": True}),
    (MIG_ENV, "destroy", {"tpu": True, "mig": True}),
    (NODE_ENV, "destroy", {"tpu": True}),
]


def _steps(config: dict) -> list[tuple[str, tuple[str, ...]]]:
    return [(st["id"], tuple(st.get("waitFor") or ())) for st in config["steps"]]


@pytest.mark.parametrize("base, action, flags", CASES, ids=request_ids(CASES))
def test_a_valid_request_gives_the_same_plan_from_every_command(fakes: Fakes, cli, tmp_path: Path, monkeypatch,
                                                                 base, action, flags) -> None:
    values = make_repo(tmp_path / "repo", unique_env(), base=base)
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0

    def finalize(build_id: str, state: str) -> None:  # the pipeline's last step, as the build runs it
        from builder.cli import main

        if state == "SUCCESS":
            assert main(["--values", str(values), "finalize", "--build-id", build_id, "--action", action]) == 0

    fakes.google.on_done = finalize
    code, out, err = cli(*argv("plan", values, action, {k: v for k, v in flags.items() if k != "allow_wipe"}),
                         "--format", "json")
    assert code == 0, err
    planned = json.loads(out)["steps"]
    code, out, err = cli(*argv("render", values, action, flags), "--format", "json")
    assert code == 0, err
    rendered = _steps(json.loads(out))
    assert [st["id"] for st in planned] == [step_id for step_id, _ in rendered]
    assert [tuple(st["after"]) or ("-",) for st in planned] == [after for _, after in rendered]
    for verb in ("submit", "dispatch"):
        code, out, err = cli(*argv(verb, values, action, flags), *(["--wait"] if verb == "submit" else []))
        assert code == 0, (verb, err)
        assert _steps(fakes.google.created[-1]) == rendered, verb
    submitted, dispatched = fakes.google.created
    assert submitted["steps"] == dispatched["steps"]  # every argument alike, the allow flags' included
    assert ("--allow-data-loss" in json.dumps(dispatched["steps"])) == bool(flags.get("allow_data_loss"))


#: A seed-era node file: the seed repository's script paths, which no longer exist here.
SEED_ERA = {"MIG_SETUP_SCRIPT": "env_setup/scripts/setup_mig.sh",
            "MIG_SEED_DATA_PREP_SCRIPT": "roberta/env_setup/data_prep_seed_shared_disk_pd.sh"}


@pytest.mark.parametrize("base", [NODE_ENV, VM_ENV, MIG_ENV], ids=["node", "vm", "mig"])
def test_a_seed_era_file_still_destroys(fakes: Fakes, cli, tmp_path: Path, monkeypatch, base: Path) -> None:  # noqa: F811
    """Destroy on a seed-era file works from every command: a destroy runs neither the hosts'
    setup script nor the seeder, so the seed's script paths (gone from this repository) do not
    stop it; validate still names them, with what plan and create will do."""
    from builder.config.legacy import SEED_SCRIPTS

    assert set(SEED_ERA.values()) <= set(SEED_SCRIPTS)
    values = make_repo(tmp_path / "repo", unique_env(), base=base, **SEED_ERA)
    monkeypatch.chdir(values.parent)
    assert cli("--values", values, "initialize")[0] == 0
    code, out, err = cli(*argv("render", values, "destroy", {}), "--format", "json")
    assert code == 0, err
    rendered = _steps(json.loads(out))
    assert rendered
    for verb in ("submit", "dispatch"):
        code, out, err = cli(*argv(verb, values, "destroy", {}), *(["--wait"] if verb == "submit" else []))
        assert code == 0, (verb, err)
        assert _steps(fakes.google.created[-1]) == rendered, verb
    code, out, err = cli("--values", values, "validate")
    assert code == 2 and out == ""
    for key in SEED_ERA:  # each path once, saying what create/update and destroy do with it
        line = next(line for line in err.splitlines() if f": {key}: " in line)
        assert "a create or update that runs it is refused (destroy runs no script)" in line, line
    assert ("destroy and status still work" in err) == (base == NODE_ENV), err
