"""The generated Cloud Build config (builder.render.pipeline, `tpubuild render`): every action × flag
combination × both architectures loads into the real Build type, and its steps, scripts, images,
timeouts and waitFor DAG follow the pipeline contract (docs/architecture.md, docs/pipeline.md)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from builder.catalogue.module_parts import fails_over, settles_with_gcloud
from builder.catalogue.modules import accelerator_module, hosts_module, spec
from builder.config import load
from builder.facts.errors import BadInput, ConfigError
from builder.planning.plan import asks_first, gates, make_plan, module_dir
from builder.render.pipeline import IMAGES, LOCK_TIMEOUT, SHELLS, check_duration, image, render
from tests.conftest import EXAMPLES, REPO
from tests.support.pipeline import ENVS, NODE_ENV, VM_ENV, BUILTINS, Case, all_cases, ancestors, step_script

from google.cloud.devtools.cloudbuild_v1.types import Build  # noqa: E402  (a dependency: setup.cfg)

VALID = [c for c in all_cases() if c.valid and c.action != "initialize"]
INVALID = [c for c in all_cases() if not c.valid]


def load_build(config: dict[str, Any]):
    return Build.from_json(json.dumps(config), ignore_unknown_fields=False)


def by_id(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {st["id"]: st for st in config["steps"]}


def check_config(config: dict[str, Any], settings, plan, *, allow_data_loss: bool = False) -> None:
    """Every property of a rendered config that the contract fixes."""
    text = json.dumps(config)
    assert "-lock=false" not in text and "lock=false" not in text
    build = load_build(config)
    assert len(build.steps) == len(config["steps"])
    ids = [st["id"] for st in config["steps"]]
    assert len(ids) == len(set(ids)), ids

    # durations: whole positive seconds, the build long enough for its longest path
    for st in config["steps"]:
        assert re.fullmatch(r"[1-9]\d*s", st["timeout"]), st
    assert re.fullmatch(r"[1-9]\d*s", config["timeout"])
    finish: dict[str, int] = {}
    for st in config["steps"]:
        finish[st["id"]] = int(st["timeout"][:-1]) + max(
            (finish[w] for w in st["waitFor"] if w != "-"), default=0)
    assert int(config["timeout"][:-1]) >= max(finish.values())
    assert int(config["timeout"][:-1]) <= 86400

    # images pinned by tag, from the one table; tpubuild's own steps run in its builder image
    # (no install at run time), which the first step makes sure of
    images = {image(settings, key): key for key in IMAGES}
    for st in config["steps"]:
        assert st["name"] in images, st["name"]
        assert re.search(r":[0-9][\w.-]*$", st["name"].rsplit("/", 1)[-1]), st["name"]
        assert st["entrypoint"] == SHELLS[images[st["name"]]] in ("sh", "bash")
        assert "pip install" not in step_script(st), st["id"]
    assert ids[0] == "tpubuild-image" and config["steps"][0]["waitFor"] == ["-"]
    assert image(settings, "tpubuild") in step_script(config["steps"][0])

    # waitFor: earlier steps only, '-' only alone, finalize last and after everything
    seen: set[str] = set()
    for st in config["steps"]:
        wait = st["waitFor"]
        assert wait, st["id"]
        if "-" in wait:
            assert wait == ["-"]
        else:
            assert set(wait) <= seen, (st["id"], wait)
        seen.add(st["id"])
    assert ids[-1] == "finalize"
    assert ancestors(config, "finalize") == set(ids[:-1])

    # scripts: set -euo pipefail first; every `$` escaped so that Cloud Build (MUST_MATCH)
    # substitutes nothing but BUILD_ID
    for st in config["steps"]:
        script = step_script(st)
        assert script.splitlines()[0] == "set -euo pipefail", st["id"]
        raw = st["args"][1]
        assert set(re.findall(r"(?<!\$)\$\{?([A-Za-z_]\w*)", raw.replace("$$", ""))) <= {"BUILD_ID"}, st["id"]

    steps = by_id(config)
    for o in plan.operations:
        m = o.module
        p, g, a = (steps[f"{m}-{k}"] for k in ("plan", "guard", "apply"))
        ps, gs, as_ = step_script(p), step_script(g), step_script(a)
        settles = o.op == "apply" and m == accelerator_module(settings.arch) and settles_with_gcloud(settings)
        assert p["name"] == IMAGES["terraform"] and a["name"] == IMAGES["gcloud" if settles else "terraform"]  # mig's acquisition reads the group with gcloud
        assert g["name"] == image(settings, "tpubuild")
        assert "tpubuild-image" in g["waitFor"]
        assert f'cd "$W/{module_dir(settings, m)}"' in ps and f'cd "$W/{module_dir(settings, m)}"' in as_
        init = next(line for line in ps.splitlines() if line.startswith("terraform init"))
        assert f"-backend-config=bucket={settings.state_bucket}" in init.split()
        assert f"-backend-config=prefix={settings.env_name}/{m}" in init.split()
        assert f"-lock-timeout={LOCK_TIMEOUT}" in init.split() and "-input=false" in init.split()
        tfplan = next(line for line in ps.splitlines() if line.startswith("terraform plan"))
        assert f'-var-file="$tfvars"' in tfplan and f'tfvars="$W/tfvars/{m}.tfvars.json"' in ps
        assert f'-out="$W/plans/{m}.tfplan"' in tfplan and f"-lock-timeout={LOCK_TIMEOUT}" in tfplan
        assert ("-destroy" in tfplan.split()) == (o.op == "destroy")
        assert f'terraform show -json "$W/plans/{m}.tfplan" > "$W/plans/{m}.json.part"' in ps
        expected_apply = f'terraform apply -input=false -lock-timeout={LOCK_TIMEOUT} "$plan"'
        if o.op == "apply" and m == accelerator_module(settings.arch) and fails_over(settings):
            # the failover loop (builder/templates/_acquire.sh.j2) applies each candidate's plan, the
            # guarded one first, keeping its output to tell a capacity refusal from another failure
            assert f'  if {expected_apply} 2>&1 | tee "$log"; then' in as_.splitlines()
        else:
            apply = next(line for line in as_.splitlines() if line.startswith("terraform apply"))
            assert apply == expected_apply
        assert f'plan="$W/plans/{m}.tfplan"' in as_
        guard = next(line for line in gs.splitlines() if line.startswith("tpubuild guard"))
        expected = f'tpubuild guard --plan-json "$W/plans/{m}.json" --module {m} --action {plan.action}'
        assert guard == expected + (" --allow-data-loss" if allow_data_loss else "")
        # plan -> guard -> apply, and the DAG: a module's plan comes after its predecessors' applies
        assert f"{m}-plan" in ancestors(config, f"{m}-guard")
        # the slice's apply runs beside its gates (waiting for the last one's verdict unless its plan only
        # creates: _await_guard.sh.j2); the build still ends only after every gate
        first = asks_first(settings, m, o.op)
        assert not first or f'"$W/plans/{m}.{gates(settings, plan, m)[-1]}.ok"' in as_
        for g in gates(settings, plan, m) if first else ("guard",):
            assert (f"{m}-{g}" in ancestors(config, f"{m}-apply")) != first and f"{m}-{g}" in ancestors(config, "finalize")
        for dep in o.after:
            assert f"{dep}-apply" in ancestors(config, f"{m}-plan")
    # independent modules are parallel: no step of one waits for a step of the other, but the account its hosts (or
    for x in plan.operations:  # those of a module it waits for) run as: the other's identity step (identity_from)
        runs_as = {a for m in plan.modules if m == x.module or _depends(plan, x.module, m) for a in spec(settings.arch, m).identity_from}
        for y in plan.operations:
            if x.module != y.module and not _depends(plan, x.module, y.module) and not _depends(plan, y.module, x.module):
                made = {f"{y.module}-identity"} & set(steps) if y.module in runs_as else set()
                assert {i for i in ancestors(config, f"{x.module}-apply") if i.startswith(f"{y.module}-")} == made, (x, y)
    assert steps["finalize"]["name"] == image(settings, "tpubuild")
    fin = step_script(steps["finalize"])
    assert f"tpubuild finalize --build-id {BUILTINS['BUILD_ID']} --action {plan.action}" in fin


def _depends(plan, a: str, b: str) -> bool:  # a (transitively) comes after b in the plan
    op = plan.get(a)
    return op is not None and any(d == b or _depends(plan, d, b) for d in op.after)


@pytest.mark.parametrize("allow", [False, True], ids=["guarded", "allow-data-loss"])
@pytest.mark.parametrize("case", VALID, ids=[c.id for c in VALID])
def test_every_rendering_is_a_valid_build(cli, case: Case, allow: bool):
    extra = ["--allow-data-loss"] if allow else []
    code, out_yaml, err = cli("render", *case.cli_args(), *extra)
    assert code == 0, err
    code, out_json, _ = cli("render", *case.cli_args(), *extra, "--format", "json")
    assert code == 0
    from_yaml, from_json = yaml.safe_load(out_yaml), json.loads(out_json)
    assert from_yaml == from_json
    settings = load(ENVS[case.arch])
    plan = make_plan(settings, case.action, tpu=case.tpu, mig=case.mig)
    check_config(from_json, settings, plan, allow_data_loss=allow)
    assert from_json == render(settings, plan, allow_data_loss=allow)


@pytest.mark.parametrize("case", INVALID, ids=[c.id for c in INVALID])
def test_every_refused_rendering_exits_2(cli, case: Case):
    for command in ("render", "plan"):
        code, out, err = cli(command, *case.cli_args())
        assert code == 2 and out == ""
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("arch", ["node", "vm"])
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_render_initialize_prints_no_build(cli, arch, fmt):
    code, out, err = cli("render", "--values", ENVS[arch], "--action", "initialize", "--format", fmt)
    assert code == 0
    assert out == ""
    assert "initialize runs no pipeline" in err and len(err.strip().splitlines()) == 1


def test_render_function_refuses_an_empty_plan():
    s = load(NODE_ENV)
    with pytest.raises(BadInput, match="runs no pipeline"):
        render(s, make_plan(s, "initialize"))


@pytest.mark.parametrize("only", [{"mig"}, {"shared_pd", "mig"}, {"filestore"}, {"tpu", "filestore"}])
def test_only_renderings(only):
    s = load(NODE_ENV)
    plan = make_plan(s, "update", only=frozenset(only))
    config = render(s, plan)
    check_config(config, s, plan)
    modules = {i.rsplit("-", 1)[0] for i in by_id(config) if i.endswith("-apply")}
    assert modules == only


# ---- the extra steps: seed, snapshot, backup, restore ----

def test_seed_follows_shared_pd_and_precedes_the_disk_users():
    for env, user in ((NODE_ENV, "mig"), (VM_ENV, "tpu")):
        s = load(env)
        for action in ("create", "update"):
            config = render(s, make_plan(s, action))
            steps = by_id(config)
            seed = steps["shared_pd-seed"]
            assert seed["waitFor"] == ["shared_pd-apply"] and seed["name"] == IMAGES["gcloud"]
            # the seed holds only the disk users' apply (their plan and guard run beside it); on vm
            # only tpu-attach, which attaches the disk to the TPU made beside the seed
            held = f"{user}-attach" if f"{user}-attach" in steps else f"{user}-apply"
            assert held == (f"{user}-attach" if s.arch == "vm" else f"{user}-apply")
            assert "shared_pd-seed" in ancestors(config, held)
            assert "shared_pd-seed" not in ancestors(config, f"{user}-guard")
            assert ("shared_pd-seed" in ancestors(config, f"{user}-apply")) == (s.arch != "vm")
            script = step_script(seed)
            assert "bash env_setup/seeder/run_seeder.sh" in script
            # the zone: the granted one when the acquisition wrote it, else the first candidate's
            assert f"zone={s.zone}\n" in script and 'export ZONE="$zone"\n' in script
            for key, value in (("PROJECT_ID", s.project_id), ("ENV_BUILD_NAME", s.env_name),
                               ("DISK_NAME", s.shared_pd_name), ("ALLOW_WIPE", "false"),
                               ("WORKSPACE_GCS", f"gs://{s.state_bucket}/workspace/{s.env_name}")):
                assert f"export {key}={value}\n" in script
            assert f"export GCS_DATASET='{s.gcs_dataset}'\n" in script  # wildcards stay quoted
            assert re.search(r"^export SEED_TIMEOUT_S=\d+$", script, re.M)
            assert "export SEED_PREP_SCRIPT=''" in script


@pytest.mark.parametrize("values", sorted(EXAMPLES.glob("*.env")) + [REPO / "values.env"], ids=lambda p: p.name)
def test_the_tpu_is_planned_and_guarded_beside_the_seed(values):
    """For every example, the rendered create's TPU plan and guard wait for no seed, and neither
    does the slice's apply (the TPU VM's, a MIG's): only the step that gives the hosts the disk
    does (tpu-attach, mig-attach; a calendar MIG's apply, whose template carries it)
    (docs/pipeline.md, "The scarce resource first")."""
    s = load(values)
    config = render(s, make_plan(s, "create"))
    steps = by_id(config)
    tpu, hosts = accelerator_module(s.arch), hosts_module(s.arch)
    seeding = "shared_pd-seed" in steps
    later = s.provisioning != "calendar"
    for kind in ("plan", "guard") + (("apply",) if later else ()):
        assert "shared_pd-seed" not in ancestors(config, f"{tpu}-{kind}")
        assert "shared_pd-seed" not in ancestors(config, f"{hosts}-{kind}")
    held = {i for i in steps if i.rsplit("-", 1)[-1] in ("apply", "attach")
            and "shared_pd-seed" in ancestors(config, i) and "shared_pd-seed" in steps[i]["waitFor"]}
    gives_disk = f"{hosts}-{'attach' if later else 'apply'}"
    assert held == ({gives_disk} if seeding else set())
    if seeding and s.arch == "mig":  # every VM is there (mig-resize) before the disk is given to them
        assert steps["mig-attach"]["waitFor"] == ["mig-resize", "shared_pd-apply", "shared_pd-seed"]
    assert seeding == (s.shared_pd_attach and bool(s.gcs_dataset))


def test_no_seed_without_disk_dataset_or_shared_pd_apply(make_env):
    s = load(NODE_ENV)
    assert "shared_pd-seed" not in by_id(render(s, make_plan(s, "update", tpu=True, mig=True)))
    assert "shared_pd-seed" not in by_id(render(s, make_plan(s, "destroy")))
    for overrides in ({"GCS_DATASET": ""}, {"SHARED_PD_DISK_ATTACH": "false"}):
        s2 = load(make_env(NODE_ENV, **overrides))
        config = render(s2, make_plan(s2, "create"))
        assert "shared_pd-seed" not in by_id(config)
        # no host attaches the disk: it is not created, so nothing waits for it
        disk = ["shared_pd-apply"] if s2.shared_pd_attach else []
        assert by_id(config)["mig-plan"]["waitFor"] == ["filestore-apply", *disk, "tpu-apply"]


def test_allow_wipe_reaches_the_seeder(cli):
    code, out, _ = cli("render", "--values", VM_ENV, "--allow-wipe", "--format", "json")
    assert code == 0
    assert "export ALLOW_WIPE=true\n" in step_script(by_id(json.loads(out))["shared_pd-seed"])


def test_seed_prep_script_must_exist_when_seeding(make_env, tmp_path):
    env = make_env(MIG_SEED_DATA_PREP_SCRIPT="scripts/prep.sh")
    s = load(env)
    with pytest.raises(ConfigError) as err:
        render(s, make_plan(s, "create"))
    assert err.value.key == "MIG_SEED_DATA_PREP_SCRIPT" and err.value.line == s.line_of("MIG_SEED_DATA_PREP_SCRIPT")
    render(s, make_plan(s, "update", tpu=True))  # no seed, no error
    (tmp_path / "models" / "scripts").mkdir(parents=True)
    (tmp_path / "models" / "scripts" / "prep.sh").write_text("true\n")
    config = render(s, make_plan(s, "create"))
    assert "export SEED_PREP_SCRIPT=models/scripts/prep.sh\n" in step_script(by_id(config)["shared_pd-seed"])


def test_mig_setup_script_must_exist_when_machines_boot(make_env, cli, tmp_path):
    env = make_env(MIG_SETUP_SCRIPT="setup/workers.sh")  # the shipped TPU VM file: its hosts boot it
    s = load(env)
    for action, kw in (("create", {}), ("update", {"tpu": True})):
        with pytest.raises(ConfigError) as err:
            render(s, make_plan(s, action, **kw))
        assert err.value.key == "MIG_SETUP_SCRIPT"
    code, _, err_text = cli("plan", "--values", env)
    assert code == 2 and f"{env}:{s.line_of('MIG_SETUP_SCRIPT')}: MIG_SETUP_SCRIPT:" in err_text
    render(s, make_plan(s, "destroy"))          # destroy boots nothing
    node = load(make_env(NODE_ENV, MIG_SETUP_SCRIPT="setup/workers.sh"))
    render(node, make_plan(node, "update", tpu=True))  # the TPU Node runs no startup script
    (tmp_path / "setup").mkdir()
    (tmp_path / "setup" / "workers.sh").write_text("true\n")
    render(s, make_plan(s, "create"))


def test_snapshot_before_shared_pd_destroy():
    for env in (NODE_ENV, VM_ENV):
        s = load(env)
        config = render(s, make_plan(s, "destroy"))
        steps = by_id(config)
        snap = steps["shared_pd-snapshot"]
        assert snap["name"] == IMAGES["gcloud"]
        assert "shared_pd-snapshot" in ancestors(config, "shared_pd-plan")
        assert "tpu-apply" in ancestors(config, "shared_pd-snapshot")  # the disk is detached by then
        script = step_script(snap)
        assert "gcloud compute snapshots create" in script
        assert f"--source-disk={s.shared_pd_name}" in script and f"--source-disk-zone={s.zone}" in script
        # stored in the environment's region, priced at the regional rate (not the nearest multi-region's)
        assert f"--storage-location={s.region}" in script
        assert f"tpubuild-env={s.env_name}" in script
        assert 'echo "tpubuild: shared_pd: took snapshot $name' in script
        assert "shared_pd-snapshot" not in by_id(render(s, make_plan(s, "destroy", tpu=True)))
        assert "shared_pd-snapshot" not in by_id(render(s, make_plan(s, "create")))


def test_filestore_backup_only_on_tiers_with_backups(make_env):
    s = load(NODE_ENV)
    config = render(s, make_plan(s, "destroy"))
    assert "filestore-backup" in ancestors(config, "filestore-plan")
    script = step_script(by_id(config)["filestore-backup"])
    assert "gcloud filestore backups create" in script
    assert f"--instance-zone={s.zone}" in script and f"--region={s.region}" in script
    assert f"--file-share={s.shared_fs_name}" in script

    hs = load(make_env(SHARED_FS_TIER="HIGH_SCALE_SSD", SHARED_FS_CAPACITY="10240"))
    config = render(hs, make_plan(hs, "destroy"))
    assert "filestore-backup" not in by_id(config)
    assert "shared_pd-snapshot" in by_id(config)

    reg = load(make_env(SHARED_FS_TIER="REGIONAL", SHARED_FS_CAPACITY="1024"))
    script = step_script(by_id(render(reg, make_plan(reg, "destroy")))["filestore-backup"])
    assert f"--instance-location={reg.region}" in script and f"--location={reg.region}" in script


def test_restore_latest_is_resolved_before_the_plan(make_env):
    s = load(make_env(SHARED_PD_RESTORE="latest"))
    config = render(s, make_plan(s, "create"))
    steps = by_id(config)
    restore = step_script(steps["shared_pd-restore"])
    assert steps["shared_pd-restore"]["name"] == IMAGES["gcloud"]
    assert "gcloud compute snapshots list" in restore
    assert f"labels.tpubuild-env={s.env_name} AND status=READY" in restore
    assert "--sort-by=~creationTimestamp --limit=1" in restore
    assert steps["shared_pd-plan"]["waitFor"] == ["shared_pd-restore"]
    plan = step_script(steps["shared_pd-plan"])
    assert 'snapshot="$(cat "$W/plans/shared_pd.snapshot")"' in plan
    assert '-var="snapshot=$snapshot"' in plan
    # not on destroy, and not when shared_pd is not applied
    assert "shared_pd-restore" not in by_id(render(s, make_plan(s, "update", tpu=True)))
    assert "shared_pd-restore" not in by_id(render(s, make_plan(s, "destroy")))


def test_restore_named_snapshot_is_passed_directly(make_env):
    s = load(make_env(SHARED_PD_RESTORE="pd-tpu-dev1-20240101-000000"))
    steps = by_id(render(s, make_plan(s, "create")))
    assert "shared_pd-restore" not in steps
    assert "-var=snapshot=pd-tpu-dev1-20240101-000000" in step_script(steps["shared_pd-plan"])
    blank = by_id(render(load(NODE_ENV), make_plan(load(NODE_ENV), "create")))
    assert "snapshot" not in step_script(blank["shared_pd-plan"])


# ---- durations ----

@pytest.mark.parametrize("good", ["1s", "600s", "86400s"])
def test_check_duration_accepts(good):
    assert check_duration(good) == good


@pytest.mark.parametrize("bad", ["-5s", "0s", "1.5s", "10m", "", "s", "600", " 60s"])
def test_check_duration_refuses(bad):
    with pytest.raises(ValueError):
        check_duration(bad)


def test_the_build_type_alone_would_accept_a_negative_timeout():
    # why we check durations ourselves
    assert Build.from_json('{"timeout": "-5s"}').timeout.total_seconds() < 0


def test_templates_ship_with_the_package():
    """setup.cfg packages `templates/*` (one level): the builder image's `pip install .` of the source
    must carry every template, so none may live in a sub-folder."""
    from tests.conftest import REPO

    folder = REPO / "builder" / "templates"
    used = set(re.findall(r'"([\w.]+\.j2)"', (REPO / "builder" / "render" / "pipeline.py").read_text()))
    used |= {"_prelude.sh.j2"}
    assert used and all((folder / name).is_file() for name in used)
    assert all(p.parent == folder for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert "builder = templates/*" in (REPO / "setup.cfg").read_text()
