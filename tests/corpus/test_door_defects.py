"""Disagreements between doors, one test each: where two doors (validate, plan, plan --all, render, trigger,
a dry run, dispatch) disagreed about one file, they now agree (builder/config/gate.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, SHIPPED, rewrite_env

pytestmark = pytest.mark.usefixtures("no_cloud")


def _repo(tmp_path: Path, base: Path = SHIPPED, **edit: str | None) -> Path:
    """A repository holding only the root values.env (``base`` with ``edit``)."""
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / "values.env").write_text(rewrite_env(base.read_text(), **edit))
    return repo / "values.env"


def _torchtpu(tmp_path: Path, **edit: str | None) -> Path:
    """A v6e-16 TorchTPU environment whose script exists beside it."""
    values = _repo(tmp_path, EXAMPLES / "vm-v6e-16.env", **{"MODEL": "torchtpu", "TORCHTPU_SCRIPT": "train.py", **edit})
    (values.parent / "train.py").write_text("print('hello')\n")
    return values


def test_env_protected_with_only_the_root_values_gets_an_approval(cli, tmp_path: Path) -> None:
    """The root values.env alone: ``trigger`` prints one push trigger, and ENV_PROTECTED="true"
    makes it wait for an approval (approvalConfig.approvalRequired), never dropped."""
    for protected, want in (("true", {"approvalRequired": True}), ("false", None)):
        values = _repo(tmp_path, ENV_PROTECTED=protected)
        code, out, err = cli("trigger", "--values", values, "--repo-owner", "me", "--repo-name", "tpu-env")
        assert code == 0, err
        body = yaml.safe_load(out)
        assert body.get("approvalConfig") == want, body
        assert ("after an approval" in body["description"]) == (protected == "true")


def test_torchtpu_make_before_break_is_planned_as_the_build_runs_it(cli, tmp_path: Path) -> None:
    """TorchTPU's launcher has no checkpoint probe: a make-before-break update makes the new slice
    first, but renders no tpu-prepare/checkpoint/resume (the probe the build would stop at), and the
    plan says the training on the old slice stops instead of promising a checkpoint and a resume."""
    values = _torchtpu(tmp_path)
    applied = values.with_name("applied.env")
    applied.write_text(values.read_text())
    values.write_text(rewrite_env(values.read_text(), TPU_ACCELERATOR_TYPE="v6e-32"))
    code, out, err = cli("render", "--values", values, "--action", "update", "--applied", applied)
    assert code == 0, err
    ids = [step["id"] for step in yaml.safe_load(out)["steps"]]
    assert {"tpu-apply", "tpu-swap", "tpu-release"} <= set(ids), ids
    assert not {"tpu-prepare", "tpu-checkpoint", "tpu-resume"} & set(ids), ids
    code, out, err = cli("plan", "--values", values, "--action", "update", "--applied", applied)
    assert code == 0, err
    [note] = [line for line in out.splitlines() if "make-before-break" in line]
    assert "torchtpu is not moved" in note and "tpubuild train torchtpu" in note, note
    assert "tpu-checkpoint" not in note and "tpu-resume" not in note, note


def test_the_torchtpu_declaration_matches_its_launcher() -> None:
    """A model declares HANDOVER=False exactly when its launcher has no plan_probe."""
    from builder.config.model_registry import MODELS, declared, load
    from builder.facts.source_models import SOURCE_MODELS

    for model in MODELS:
        launcher = load(SOURCE_MODELS, f"{model}.launcher")
        assert declared(None, model, "HANDOVER") == hasattr(launcher, "plan_probe"), model


def _layout(tmp_path: Path, **envs: str) -> Path:
    """A repository of environments: the shipped root values.env and ``environments/<name>/values.env``
    for each name → values text."""
    repo = tmp_path / "layout"
    repo.mkdir()
    (repo / "values.env").write_text(SHIPPED.read_text())
    for name, text in envs.items():
        folder = repo / "environments" / name
        folder.mkdir(parents=True)
        (folder / "values.env").write_text(rewrite_env(text, ENV_BUILD_NAME=f"{name}env"))
    return repo


@pytest.mark.parametrize("edit, key", [({"TPU_ARCH": "node", "TPU_RUNTIME_VERSION": None,
                                         "TPU_PYTORCH_VERSION": "pytorch-2.0"}, "TPU_ARCH"),
                                        ({"MODEL": "torchtpu"}, "TPU_ACCELERATOR_TYPE")],
                         ids=["tpu-node", "torchtpu-on-v3"])
def test_plan_all_refuses_what_plan_refuses(cli, tmp_path: Path, monkeypatch, edit, key) -> None:
    """``plan --all`` refuses (exit 2, one line naming the file, the key and the fix) an environment
    that ``plan --values`` of that file refuses, instead of pricing it."""
    repo = _layout(tmp_path, bad=rewrite_env(SHIPPED.read_text(), **edit))
    monkeypatch.chdir(repo)
    code, _, alone = cli("plan", "--values", "environments/bad/values.env", "--action", "auto")
    assert code == 2, alone
    code, out, err = cli("plan", "--all")
    assert code == 2, (out, err)
    [line] = [x for x in err.splitlines() if x.startswith("tpubuild: error: ")]
    assert "environments/bad/values.env:" in line and f" {key}: " in line and "; " in line, line
    assert line.split(f" {key}: ")[1] == alone.strip().split(f" {key}: ")[1], (line, alone)
    [row] = [x for x in out.splitlines() if x.startswith("environments/bad/values.env")]
    assert "refused" in row and "$" not in row, row


def test_trigger_refuses_what_dispatch_auto_refuses(cli, tmp_path: Path, monkeypatch) -> None:
    """A relative calendar start (+14d): every push build's dispatch refuses it, so trigger does,
    with the same line, and validate says so as a warning (the file still previews)."""
    values = _repo(tmp_path, EXAMPLES / "mig-v6e-32-calendar.env")
    assert '"+14d"' in values.read_text()
    monkeypatch.chdir(values.parent)
    code, out, err = cli("trigger", "--values", values, "--repo-owner", "me", "--repo-name", "tpu-env")
    assert code == 2 and out == "", (out, err)
    code, _, dispatched = cli("dispatch", "--values", values, "--action", "auto")
    assert code == 2, dispatched
    assert err.strip() == dispatched.strip(), (err, dispatched)
    assert "TPU_CALENDAR_START: '+14d'" in err
    code, _, said = cli("validate", "--values", values)
    assert code == 0 and "warning:" in said and "TPU_CALENDAR_START: '+14d'" in said and "trigger" in said, said
    code, out, err = cli("plan", "--all", "--values", values)
    assert code == 2 and err.strip() == dispatched.strip(), (out, err)  # its apply build refuses it


def test_train_dry_run_refuses_a_script_that_is_a_folder(cli, tmp_path: Path) -> None:
    """TORCHTPU_SCRIPT naming a folder: validate, plan and render refuse it, and so does
    ``train torchtpu --dry-run`` (its real run would ship and start a folder)."""
    values = _torchtpu(tmp_path, TORCHTPU_SCRIPT="sub")
    (values.parent / "sub").mkdir()
    lines = set()
    for argv in (("validate",), ("plan",), ("render",), ("train", "torchtpu", "--dry-run")):
        code, out, err = cli(*argv, "--values", values)
        assert code == 2 and "TORCHTPU_SCRIPT: sub is not a file" in err, (argv, out, err)
        lines.add(err.strip().splitlines()[-1])
    assert len(lines) == 1, lines


def test_train_torchtpu_metrics_is_refused_not_ignored(cli, tmp_path: Path) -> None:
    values = _torchtpu(tmp_path)
    code, out, err = cli("train", "torchtpu", "--values", values, "--dry-run", "--metrics")
    assert code == 2 and out == "" and err.startswith("tpubuild: error: --metrics: ") and "drop --metrics" in err, err
    code, out, err = cli("train", "torchtpu", "--values", values, "--dry-run")
    assert code == 0, err


@pytest.mark.parametrize("base", ["vm-v6e-16.env", "mig-v6e-16-failover.env"])
def test_plan_check_json_without_credentials_prints_one_document(cli, base: str) -> None:
    code, out, err = cli("plan", "--values", EXAMPLES / base, "--check", "--format", "json")
    assert code == 1, err
    doc, end = json.JSONDecoder().raw_decode(out)
    assert out[end:].strip() == "", out[end:][:300]  # one document, nothing after it
    assert doc["error"]["kind"] == "world" and "credentials" in doc["error"]["message"], doc


def test_a_failed_host_script_is_named_in_one_short_line() -> None:
    """``profile --host 0`` without credentials: gcloud fails inside the capture script, and the
    one error line names the command, not the 2,000-character script."""
    from builder.commands.observe import _run
    from builder.facts.errors import WorldError

    script = "set -euo pipefail\n" + "echo " + "x" * 2000 + " >/dev/null\nexit 1\n"
    with pytest.raises(WorldError) as caught:
        _run(["bash", "-c", script], "capture the profile")
    line = str(caught.value)
    assert "\n" not in line and len(line) < 200 and "xxxx" not in line, line
    assert line.startswith("could not capture the profile: bash -c SCRIPT ... failed with exit code 1"), line


def test_an_empty_max_run_hours_is_not_set(cli, tmp_path: Path) -> None:
    """TPU_MAX_RUN_HOURS="" reads as not set (Compute Engine's longest flex-start run, 168 h), never
    as the one-hour run the old fix suggested; a value that is no number gets that as its example."""
    base = EXAMPLES / "mig-v6e-16-flex.env"
    code, _, err = cli("validate", "--values", _repo(tmp_path, base, TPU_MAX_RUN_HOURS=""))
    assert code == 0, err
    code, _, err = cli("validate", "--values", _repo(tmp_path, base, TPU_MAX_RUN_HOURS="forever"))
    assert code == 2 and err.rstrip().endswith("e.g. 168"), err


@pytest.mark.parametrize("edit, key", [({"ZONE": "us-east1-d,us-east5-b", "REGION": ""}, "ZONE"),
                                        ({"TPU_PROVISIONING": "spot,on-demand"}, "TPU_PROVISIONING")])
def test_a_queued_slice_with_candidates_is_refused_by_every_door(cli, tmp_path: Path, edit, key) -> None:
    """TPU_QUEUED with a ZONE or TPU_PROVISIONING list: one queued request waits in one zone and
    mode, so the list is an error at every door, never counted by validate and dropped by render."""
    values = _repo(tmp_path, EXAMPLES / "vm-v6e-16.env", TPU_QUEUED="true", **edit)
    seen = set()
    for argv in (("validate",), ("plan",), ("render",), ("plan", "--format", "json")):
        code, _, err = cli(*argv, "--values", values)
        assert code == 2, (argv, err)
        [line] = err.strip().splitlines()
        assert f": {key}: lists 2 candidates" in line and "remove TPU_QUEUED" in line, line
        seen.add(line)
    assert len(seen) == 1, seen


def test_reordering_the_zone_list_keeps_the_place_unless_another_zone_comes_first(cli, tmp_path: Path) -> None:
    """A reordered ZONE list against the applied values: one that keeps its first zone leaves the
    slice where it is (the applied values' place, docs/capacity.md "The granted place"): update moves
    nothing zonal and loses no data, and auto, from the same applied file, agrees. One that puts
    another zone first moves the environment (docs/capacity.md, "Moving an environment to another
    zone"): update plans the move, losing nothing, and auto refuses it, saying to run update."""
    applied = _repo(tmp_path, EXAMPLES / "mig-v6e-16-failover.env")
    first, *rest = applied.read_text().split('ZONE="')[1].split('"')[0].split(",")
    values = applied.with_name("reordered.env")
    values.write_text(rewrite_env(applied.read_text(), ZONE=",".join([first, *reversed(rest)])))
    code, out, err = cli("plan", "--values", values, "--action", "update", "--applied", applied)
    assert code == 0, err
    after = out.split("Before → after")[1].split("Cost per hour")[0].split("\n", 1)[1]
    assert "zone" not in after and "lost" not in after and "replace" not in after, after
    assert out.splitlines()[0].endswith(f"/{first}"), out.splitlines()[0]
    code, out, err = cli("plan", "--values", values, "--action", "auto", "--applied", applied)
    assert code == 0, err  # auto refuses a zone change; this reorder is none
    values.write_text(rewrite_env(applied.read_text(), ZONE=",".join([*rest, first])))
    code, out, err = cli("plan", "--values", values, "--action", "update", "--applied", applied)
    assert code == 0, err
    after = out.split("Before → after")[1].split("Cost per hour")[0]
    assert "lost" not in after and f"note: move: {first} → {rest[0]}" in out, out
    code, out, err = cli("plan", "--values", values, "--action", "auto", "--applied", applied)
    assert code == 2 and "run `tpubuild update`, which moves it make-before-break" in err, err


def test_a_changed_dashboard_is_named_not_printed_twice(cli, tmp_path: Path) -> None:
    applied = _repo(tmp_path, EXAMPLES / "mig-v6e-16-failover.env")
    values = applied.with_name("moved.env")
    values.write_text(rewrite_env(applied.read_text(), ZONE="us-central1-b"))
    code, out, err = cli("plan", "--values", values, "--action", "update", "--applied", applied)
    assert code == 0, err
    [line] = [x for x in out.splitlines() if x.strip().startswith("dashboard: dashboard_json")]
    assert "dashboard_json: its value changes" in line and len(line) < 200 and "mosaicLayout" not in out, line


def test_plan_all_shows_a_failover_rows_worst_case(cli, tmp_path: Path, monkeypatch) -> None:
    """A failover environment's row shows the worst case its own plan states, not only the first
    candidate's price."""
    repo = _layout(tmp_path, fo=(EXAMPLES / "mig-v6e-16-failover.env").read_text())
    monkeypatch.chdir(repo)
    code, out, err = cli("plan", "--values", "environments/fo/values.env", "--format", "json")
    assert code == 0, err
    worst = json.loads(out)["cost"]["candidates"]["worst"]
    code, out, err = cli("plan", "--all", "--format", "json")
    assert code == 0, err
    row = {r["path"]: r for r in json.loads(out)["environments"]}["environments/fo/values.env"]
    assert row["hourly_worst"] == worst["hourly"] and worst["zone"] in row["cost_worst"], row
    code, out, err = cli("plan", "--all")
    [line] = [x for x in out.splitlines() if x.startswith("environments/fo/values.env")]
    assert f"(worst case {row['cost_worst']})" in line, line


def _totals(cli, values: Path) -> dict[str, dict]:
    code, out, err = cli("plan", "--values", values, "--format", "json")
    assert code == 0, err
    return {t["kind"]: t for t in json.loads(out)["cost"]["totals"]}


def test_the_ttl_total_is_priced_at_the_worst_case_too(cli, tmp_path: Path) -> None:
    values = _repo(tmp_path, EXAMPLES / "mig-v6e-16-failover.env", ENV_TTL_HOURS="24")
    ttl = _totals(cli, values)["until_ttl"]
    code, out, _ = cli("plan", "--values", values, "--format", "json")
    worst = json.loads(out)["cost"]["candidates"]["worst"]
    assert ttl["worst_total"] == round(worst["hourly"] * 24, 2) > ttl["total"], ttl
    assert f"if the slice lands in {worst['zone']} {worst['mode']}" in ttl["text"], ttl["text"]


def test_without_the_tpu_names_only_what_stays(cli, tmp_path: Path) -> None:
    """No dataset disk: what stays after the TTL is Filestore alone, and the line says so."""
    without = _totals(cli, _repo(tmp_path, EXAMPLES / "mig-v6e-16-failover.env", ENV_TTL_HOURS="24"))["until_ttl"]
    assert without["text"].split("without the TPU ")[1].startswith("(Filestore BASIC_HDD 1024 GiB)"), without["text"]
    both = _totals(cli, _repo(tmp_path, SHIPPED, ENV_TTL_HOURS="24"))["until_ttl"]
    assert "without the TPU (Filestore BASIC_HDD 1024 GiB, shared PD pd-balanced 500 GB)" in both["text"], both["text"]


def test_the_calendar_totals_count_the_storage_billed_before_the_window(cli, tmp_path: Path) -> None:
    """A calendar-mode plan (+14d from the pinned day): Filestore bills from the create, 14 days
    before the reserved slice starts; a total says what that costs."""
    found = _totals(cli, _repo(tmp_path, EXAMPLES / "mig-v6e-32-calendar.env"))
    assert "calendar_committed" in found
    before = found["calendar_before_window"]
    assert before["hours"] == 14 * 24 and abs(before["total"] - before["hourly"] * before["hours"]) < 0.05, before
    assert "(Filestore BASIC_HDD 1024 GiB)" in before["text"] and "before the reserved slice starts" in before["text"], before["text"]
