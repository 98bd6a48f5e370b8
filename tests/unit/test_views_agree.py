"""Every view of a change tells the same story: the plan's operations, its before → after, its
"hosts recreated" verdict, its cost before and after, the text and the rendered pipeline's steps.

The property test runs every shipped and example values file × every action × scope × a set of
edits (resize up and down, generation, provisioning, disk attach on/off, TTL on/off, architecture)
and checks the views against each other and against each file planned alone: the cost before is
what the applied file costs planned alone; after the build, each module the plan applies costs
what the new file's module costs planned alone, a module outside the scope what the applied file's
does (the before → after says it keeps the applied values), a destroyed one nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from builder.catalogue import cost
from builder.catalogue.durations import duration
from builder.catalogue.modules import accelerator_module, hosts_module, modules
from builder.commands.compare import Previous
from builder.config import load_text
from builder.config.migrate import migrate_text
from builder.facts.errors import BadInput, TpuBuildError
from builder.facts.records import asdict
from builder.planning import diff
from builder.planning.describe import as_text, describe
from builder.planning.plan import make_plan, not_wanted
from builder.planning.request import parse, plan_for
from builder.render import pipeline
from tests.conftest import rewrite_env

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
#: The shipped and example values files; the node file is legacy: only destroy is allowed on it.
FILES = [REPO / "values.env", *sorted(EXAMPLES.glob("*.env")), REPO / "tests" / "data" / "node-values.env"]
SCOPES = [{}, {"tpu": True}, {"mig": True}, {"tpu": True, "mig": True}]


@lru_cache(maxsize=None)
def _load(text: str, name: str) -> Any:
    """Settings of ``text``, or None when it does not load (an edit that does not fit the file)."""
    try:
        return load_text(text, Path(name))
    except TpuBuildError:
        return None


def _get(text: str, key: str) -> str:
    found = re.findall(rf'^{key}="([^"]*)"', text, re.M)
    return found[-1] if found else ""


def _resize(text: str, factor: float) -> str | None:
    accel = _get(text, "TPU_ACCELERATOR_TYPE")
    m = re.fullmatch(r"(.+)-(\d+)", accel)
    if not m:
        return None
    size = int(int(m.group(2)) * factor)
    return rewrite_env(text, TPU_ACCELERATOR_TYPE=f"{m.group(1)}-{size}") if size >= 1 else None


def _generation(text: str) -> str | None:
    accel = _get(text, "TPU_ACCELERATOR_TYPE")
    other = "v5p-32" if not accel.startswith("v5p") else "v4-32"
    zone = "us-east5-a" if other.startswith("v5p") else "us-central2-b"
    runtime = {"v5p-32": "v2-alpha-tpuv5", "v4-32": "tpu-ubuntu2204-base"}[other]
    keep_runtime = _get(text, "TPU_RUNTIME_VERSION")
    return rewrite_env(text, TPU_ACCELERATOR_TYPE=other, ZONE=zone,
                       TPU_RUNTIME_VERSION=runtime if keep_runtime else None, SHARED_PD_DISK_ATTACH="false")


def _provisioning(text: str) -> str | None:
    now = _get(text, "TPU_PROVISIONING") or "on-demand"
    return rewrite_env(text, TPU_PROVISIONING="spot" if now != "spot" else "on-demand", TPU_RESERVATION=None,
                       TPU_QUEUED=None, TPU_SPOT=None, TPU_PREEMPTIBLE=None, TPU_RESERVED=None)


def _attach(text: str) -> str | None:
    on = _get(text, "SHARED_PD_DISK_ATTACH") == "true"
    return rewrite_env(text, SHARED_PD_DISK_ATTACH="false" if on else "true",
                       SHARED_PD_RESTORE=None if on else _get(text, "SHARED_PD_RESTORE") or None)


def _ttl(text: str) -> str | None:
    return rewrite_env(text, ENV_TTL_HOURS="0" if _get(text, "ENV_TTL_HOURS") not in ("", "0") else "8")


def _arch(text: str) -> str | None:
    if _get(text, "TPU_ARCH") == "mig":
        if not _get(text, "TPU_ACCELERATOR_TYPE").startswith("v6e"):
            return None  # the vm runtime below is v6e's
        return rewrite_env(text, TPU_ARCH="vm", TPU_RUNTIME_VERSION="v2-alpha-tpuv6e", SHARED_PD_DISK_ATTACH="false")
    return rewrite_env(text, TPU_ARCH="mig", TPU_RUNTIME_VERSION=None, TPU_PYTORCH_VERSION=None,
                       TPU_QUEUED=None, SHARED_PD_DISK_ATTACH="false")


EDITS = {"same": lambda t: t, "resize up": lambda t: _resize(t, 2), "resize down": lambda t: _resize(t, 0.5),
         "generation": _generation, "provisioning": _provisioning, "disk attach": _attach, "ttl": _ttl,
         "arch": _arch}


def _alone(settings: Any) -> dict[str, list[dict[str, Any]]]:
    """Each module's cost items when ``settings`` is planned alone (create, nothing applied)."""
    info = describe(settings, make_plan(settings, "create"), previous=Previous(None, "nothing", known=False))
    out: dict[str, list[dict[str, Any]]] = {}
    for item in info["cost"]["after"]["items"]:
        out.setdefault(item["module"], []).append(item)
    return out


def _cases() -> list[tuple[Path, str]]:
    return [(f, e) for f in FILES for e in EDITS]


def _check(old: Any, new: Any, action: str, scope: dict[str, bool]) -> None:
    try:
        plan = plan_for(new, parse(new, action, **scope))
    except BadInput:
        return  # a combination the plan refuses: no views to compare
    info = describe(new, plan, previous=Previous(old, "old.env"))
    ops = {o.module: o.op for o in plan.operations}
    ba = info["before_after"]
    statuses = {m["module"]: m["status"] for m in ba["modules"]}
    story = f"{action} {scope} {old.accelerator_type}/{old.arch} -> {new.accelerator_type}/{new.arch}"

    # operations ↔ before → after
    for module, status in statuses.items():
        op = ops.get(module)
        if op == "apply":
            assert status in ("create", "update", "replace", "resize", "unchanged"), (story, module, status)
        elif op == "destroy":
            assert status == "destroy", (story, module, status)
        else:
            assert status in ("untouched", "absent"), (story, module, status)
    # operations ↔ pipeline steps (what `tpubuild render` lists)
    step_modules = {st.module for st in plan.steps if st.module}
    assert step_modules == set(ops), story
    for module in ops:
        ids = {st.id for st in plan.steps if st.module == module}
        assert {f"{module}-plan", f"{module}-guard", f"{module}-apply"} <= ids, (story, module)
    # the hosts verdict ↔ the steps: a drain that empties an existing group recreates every host
    same_arch = old.arch == new.arch
    drains = any(st.kind == "drain" for st in plan.steps)
    if drains and same_arch and old.mig_shape.topology != new.mig_shape.topology:
        assert ba["hosts_recreated"] and ba["interrupts_training"], story
    if ba["hosts_recreated"]:
        assert ops.get(hosts_module(new.arch)) == "apply", story
    # hosts and accelerator before → after ↔ operations
    if same_arch:
        hosts, accel = hosts_module(new.arch), accelerator_module(new.arch)
        want_hosts = {"apply": new.hosts, "destroy": 0}.get(ops.get(hosts, ""), old.hosts)
        want_accel = {"apply": new.accelerator_type, "destroy": ""}.get(ops.get(accel, ""), old.accelerator_type)
        assert (ba["hosts_after"], ba["accelerator_after"]) == (want_hosts, want_accel), story
    # cost before: the applied file planned alone (every module of it existed)
    before_alone = _alone(old)
    assert info["cost"]["before"]["items"] == [i for m in modules(old.arch) for i in before_alone.get(m, [])], story
    # cost after: per module, as it will be
    new_alone, old_alone = _alone(new), cost.estimate(old, frozenset(modules(old.arch)) - set(not_wanted(old)))
    after = {}
    for item in info["cost"]["after"]["items"]:
        after.setdefault(item["module"], []).append(item)
    for module in set(modules(new.arch)) | set(modules(old.arch)):
        op = ops.get(module)
        if op == "apply":
            assert after.get(module, []) == new_alone.get(module, []), (story, module)
        elif op == "destroy":
            assert module not in after, (story, module)
        else:
            kept = [asdict(i) for i in old_alone.items if i.module == module]
            assert after.get(module, []) == kept, (story, module)
    if action in ("create", "update") and not scope and same_arch and not (set(not_wanted(new)) - set(not_wanted(old))):
        # nothing is left outside the build: after it, the environment is the new file planned alone
        assert info["cost"]["after"]["total"] == _alone_total(new), story
    # make-before-break (TPU_REPLACE) ↔ the before → after, the steps, the durations table and the prices
    text = as_text(info, bold=False)
    _replacement_agrees(old, new, plan, info, text, story)
    # the summary's "Created", "Created or changed" and "Untouched" ↔ the before → after: a module
    # whose apply runs but whose values do not change is untouched in both
    status = {m["module"]: m["status"] for m in ba["modules"]}
    for key in ("created", "changed"):
        for module in info[key]:
            assert ops.get(module) == "apply", (story, module)
            if ba["applied"]:
                assert status.get(module) not in ("unchanged", "untouched"), (story, key, module)
    if ba["applied"]:
        for module, op in ops.items():
            if op == "apply" and status.get(module) == "unchanged":
                assert module in info["unchanged"], (story, module)
    # the text says what the data says
    for line in ba["lines"]:
        assert f"  {line}\n" in text, (story, line)
    assert f"Cost per hour: {info['cost']['change']}" in text, story


def _replacement_agrees(old: Any, new: Any, plan: Any, info: dict[str, Any], text: str, story: str) -> None:
    accel = accelerator_module(new.arch)
    rep = info["replacement"]
    swaps = [st for st in plan.steps if st.kind in ("swap", "release")]
    assert bool(swaps) == (new.replace == "make-before-break" and plan.applies(accel)), story
    # the training moves with the slice (stopped at a checkpoint, resumed) exactly when there is a MODEL
    moves = [st.kind for st in plan.steps if st.kind in ("prepare", "checkpoint", "resume")]
    assert moves == (["prepare", "checkpoint", "resume"] if swaps and new.model else []), story
    if rep_text := (info["replacement"] or {}).get("text"):
        if "make-before-break" in rep_text:
            assert ("-resume starts" in rep_text) == bool(new.model), story
    if not plan.applies(accel) or plan.action == "destroy":
        assert rep is None, story
        return
    status = {m["module"]: m["status"] for m in info["before_after"]["modules"]}.get(accel)
    compared = info["before_after"]["applied"] and not info["before_after"]["other_arch"]
    assert rep["mode"] == new.replace and rep["replaces"] is ((status == "replace") if compared else None), story
    if rep["text"]:
        assert f"note: {rep['text']}\n" in text, story
    if not swaps or rep["replaces"] is False or (rep["replaces"] is None and plan.action != "update"):
        assert rep["overlap_minutes"] is None and rep["overlap_cost"] is None, story
        return
    # both slices are billed from the new one's create (<accel>-apply) to the old one's delete
    # (<accel>-release), through the wait for the training's checkpoint on the old one (with a MODEL)
    # and, on mig, the new group's resize and disk attach
    mine = [st for st in plan.steps if st.module == accel]
    billed = mine[[st.kind for st in mine].index("apply"):]
    billed = billed[:[st.kind for st in billed].index("release") + 1]
    assert {st.kind for st in billed} >= {"apply", "swap", "release"}, story
    minutes = sum(duration({"id": st.id}, new) for st in billed)
    assert rep["overlap_minutes"] == minutes, story
    timeouts = {st["id"]: int(st["timeout"][:-1]) for st in pipeline.render(new, plan)["steps"]}
    most = sum(timeouts[st.id] for st in billed) / 60  # the most: each billed step's rendered timeout
    assert rep["overlap_minutes_max"] == most >= minutes, story
    old_tpu = [i for i in _alone(old).get(accel, []) if i["hourly"] is not None]
    new_tpu = [i for i in _alone(new).get(accel, []) if i["hourly"] is not None]
    if rep["replaces"] is None:  # nothing applied to compare with: the overlap's price is unknown
        assert rep["overlap_cost"] is None and "unknown" in rep["text"], story
    elif old_tpu and new_tpu:  # both slices bill through the overlap: the running one and the new, idle one
        both = sum(i["hourly"] for i in old_tpu) + sum(i["hourly"] for i in new_tpu)
        assert rep["overlap_cost"] == round(both * minutes / 60, 2), story
        assert rep["overlap_cost_max"] == round(both * most / 60, 2), story
        assert f"~${rep['overlap_cost']:,.2f}" in rep["text"] and f"~{minutes:.0f} min" in rep["text"], story
        assert f"${rep['overlap_cost_max']:,.2f}" in rep["text"] and f"at most {most:.0f} min" in rep["text"], story


def _alone_total(settings: Any) -> str:
    return describe(settings, make_plan(settings, "create"))["cost"]["after"]["total"]


@pytest.mark.parametrize("path,edit", _cases(), ids=[f"{p.name}-{e}" for p, e in _cases()])
def test_every_view_agrees(path: Path, edit: str) -> None:
    text = path.read_text(encoding="utf-8")
    old = _load(text, str(path))
    assert old is not None, path
    new_text = EDITS[edit](text)
    new = _load(new_text, str(path)) if new_text is not None else None
    if new is None:
        pytest.skip(f"{edit} does not fit {path.name}")
    actions = ["destroy"] if old.arch == "node" or new.arch == "node" else ["create", "update", "destroy"]
    for before, after in ((old, new), (new, old)):  # both ways: up and down, on and off
        for action in actions:
            for scope in SCOPES:
                _check(before, after, action, scope)
    # the rendered pipeline is the plan's steps, one to one, in order (render is slower: once per file)
    plan = make_plan(new, actions[-1] if new.arch == "node" else "update")
    rendered = pipeline.render(new, plan)
    assert [st["id"] for st in rendered["steps"]] == [st.id for st in plan.steps]


# ---- what a user hit, one test each ----

def _mig_resize(**more: str) -> tuple[Any, Any]:
    text = rewrite_env((EXAMPLES / "mig-v6e-16-spot.env").read_text(encoding="utf-8"), **more)
    return _load(text, "old.env"), _load(rewrite_env(text, TPU_ACCELERATOR_TYPE="v6e-32"), "new.env")


@pytest.mark.parametrize("mode", ["make-before-break", "break-before-make"])
def test_mig_resize_is_told_as_the_pipeline_runs_it(mode: str) -> None:
    old, new = _mig_resize(TPU_REPLACE=mode)
    plan = make_plan(new, "update", mig=True)
    info = describe(new, plan, previous=Previous(old, "old.env"))
    ba = info["before_after"]
    kinds = [st.kind for st in plan.steps if st.module == "mig"]
    (mig,) = [m for m in ba["modules"] if m["module"] == "mig"]
    if mode == "break-before-make":  # the running group is drained, then takes the new policy
        assert "drain" in kinds and "swap" not in kinds and mig["status"] == "update", kinds
        assert "drained first" in mig["note"]
    else:  # a second MIG beside the running one; nothing is drained
        assert "drain" not in kinds and kinds.index("swap") < kinds.index("release"), kinds
        assert mig["status"] == "replace" and "beside the running slice" in mig["note"], mig
        assert "make-before-break: mig-apply creates the v6e-32 slice beside the running v6e-16" in info["replacement"]["text"]
    assert ba["hosts_recreated"] and ba["interrupts_training"]
    assert "hosts recreated: yes; training is interrupted" in ba["lines"]
    assert not any("hosts keep running" in line for line in ba["lines"])
    assert (ba["accelerator_before"], ba["accelerator_after"]) == (old.accelerator_type, new.accelerator_type)
    tpu_items = [i for i in info["cost"]["after"]["items"] if i["what"].startswith("TPU ")]
    assert [new.accelerator_type in i["what"] for i in tpu_items] == [True]
    unscoped = describe(new, make_plan(new, "update"), previous=Previous(old, "old.env"))
    alone = describe(new, make_plan(new, "create"))
    assert info["cost"]["after"] == unscoped["cost"]["after"] == alone["cost"]["after"]
    assert info["cost"]["before"] == describe(old, make_plan(old, "create"))["cost"]["after"]
    # on mig the tpu module is the slice's access: no note claims that applying it replaces a TPU
    access = describe(new, make_plan(new, "update", tpu=True), previous=Previous(old, "old.env"))
    assert not any("replaces the TPU" in note for note in access["notes"]), access["notes"]


def test_mig_plan_with_nothing_applied_prices_the_slice() -> None:
    _old, new = _mig_resize()
    info = describe(new, make_plan(new, "update", mig=True), previous=Previous(None, "nothing", known=False))
    assert info["cost"]["after"]["items"], info["cost"]
    assert "nothing billed" not in info["cost"]["change"]
    assert [i["module"] for i in info["cost"]["after"]["items"]] == ["mig"]


def test_unattached_shared_pd_is_neither_created_nor_billed() -> None:
    from tests.unit.test_config import SEED_VALUES

    migrated = migrate_text(SEED_VALUES, "values.env")
    for name, text in (("vm-v6e-16.env", (EXAMPLES / "vm-v6e-16.env").read_text(encoding="utf-8")),
                       ("migrated seed", migrated.text)):
        s = _load(text, name)
        assert s is not None and not s.shared_pd_attach, name
        for action in ("create", "update"):
            plan = make_plan(s, action)
            assert "shared_pd" not in plan.modules, (name, action)
            assert not any(st.module == "shared_pd" for st in plan.steps), (name, action)
            info = describe(s, plan)
            assert "shared_pd: not created: no host attaches it (SHARED_PD_DISK_ATTACH=false)" in info["notes"]
            assert not any(i["module"] == "shared_pd" for i in info["cost"]["after"]["items"]), name
            assert "Not created: shared_pd" in as_text(info, bold=False)
        # an older environment's disk is still destroyed, with its snapshot first, and the plan says so
        destroy = make_plan(s, "destroy")
        assert destroy.destroys("shared_pd")
        assert "shared_pd-snapshot" in [st.id for st in destroy.steps]
        told = describe(s, destroy, previous=Previous(s, "applied.env"))["before_after"]["lines"]
        assert any(line.startswith("shared_pd: destroy (not created by the applied values: no host attaches it")
                   and "one an older tpubuild created is destroyed" in line for line in told), told


def test_unattached_shared_pd_alone_is_refused_not_silently_skipped() -> None:
    s = _load((EXAMPLES / "vm-v6e-16.env").read_text(encoding="utf-8"), "vm-v6e-16.env")
    with pytest.raises(BadInput, match="shared_pd: not created: no host attaches it"):
        parse(s, "update", only="shared_pd")


def test_ttl_change_is_a_summary_not_the_build_json() -> None:
    text = (EXAMPLES / "vm-v6e-16.env").read_text(encoding="utf-8")
    old, new = (_load(rewrite_env(text, ENV_TTL_HOURS=h), f"{h}.env") for h in ("8", "12"))
    off = _load(text, "off.env")
    for before, after, want in ((old, new, "ttl: 8 h → 12 h"), (off, new, "ttl: off → 12 h")):
        lines = diff.lines(diff.compare(before, after, make_plan(after, "update")))
        assert any(want in line for line in lines), lines
        assert not any("ttl_build_body" in line or "{" in line for line in lines), lines


@pytest.mark.parametrize("action,want", [("destroy", "destroyed if it exists"),
                                         ("update", "created if it does not exist"),
                                         ("create", "every module this action applies is created")])
def test_nothing_to_compare_with_says_what_the_action_does(action: str, want: str) -> None:
    s = _load((REPO / "values.env").read_text(encoding="utf-8"), "values.env")
    lines = diff.lines(diff.compare(None, s, make_plan(s, action)))
    assert want in lines[0], lines
    if action == "destroy":
        assert "applies" not in lines[0]


def test_auto_names_a_disk_change_that_creates_nothing(tmp_path: Path, cli) -> None:
    text = (EXAMPLES / "vm-v6e-16.env").read_text(encoding="utf-8")
    (tmp_path / "old.env").write_text(text)
    (tmp_path / "new.env").write_text(rewrite_env(text, SHARED_PD_DISK_SIZE="300"))
    code, out, _ = cli("plan", "--values", tmp_path / "new.env", "--action", "auto", "--applied", tmp_path / "old.env")
    assert code == 0 and "auto: nothing to do" in out
    assert "SHARED_PD_DISK_SIZE: 200 → 300 (shared_pd: not created: no host attaches it" in out


@pytest.mark.parametrize("action", ["create", "update", "destroy"])
def test_a_node_era_applied_file_is_not_called_nothing_applied(cli, tmp_path: Path, action: str) -> None:
    """``plan --applied <node-era file>`` on the file ``tpubuild migrate`` made of it: the node
    environment is there (not compared with the vm modules, but priced and counted), so no line
    says nothing is applied, and the cost before is the node environment's."""
    import json

    from tests.conftest import NODE

    migrated = tmp_path / "values.env"
    assert cli("migrate", "--values", NODE, "--output", migrated)[0] == 0
    code, out, err = cli("plan", "--values", migrated, "--applied", NODE, "--action", action, "--format", "json")
    assert code == 0, err
    info = json.loads(out)
    ba = info["before_after"]
    assert not any("no applied snapshot" in line for line in ba["lines"]), ba["lines"]
    assert any("another architecture (TPU_ARCH=node)" in line for line in ba["lines"]), ba["lines"]
    node = load_text(NODE.read_text(encoding="utf-8"), str(NODE))
    assert info["cost"]["before"] == cost.estimate(node, frozenset(modules("node"))).as_dict()
    assert info["cost"]["before"]["items"], info["cost"]
    assert (ba["hosts_before"], ba["accelerator_before"]) == (node.hosts, node.accelerator_type)
    text = cli("plan", "--values", migrated, "--applied", NODE, "--action", action)[1]
    assert "no applied snapshot" not in text and "another architecture (TPU_ARCH=node)" in text
