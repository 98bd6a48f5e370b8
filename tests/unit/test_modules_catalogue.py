"""The module catalogue (builder/catalogue/modules.py) against the Terraform it describes: the
create order comes from the ``terraform_remote_state`` blocks of each root, every root has inputs
in tfvars, and every list the code used to keep by hand is derived from the catalogue."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builder.catalogue import modules as M
from builder.config import Settings, load_text
from builder.facts.errors import BadInput
from builder.inputs import tfvars
from tests.conftest import EXAMPLES, NODE, REPO, SHIPPED, rewrite_env

_REMOTE = re.compile(r'data\s+"terraform_remote_state"\s+"(\w+)"\s*\{(.*?)\n\}', re.S)


def remote_states(tfdir: str, *, own: str = "") -> set[str]:
    """The plan modules whose state a Terraform root reads (prefix ``${var.env_name}/<module>``),
    but its own (``own``: modules/tpu_vm reads its previous apply's slots, which orders nothing)."""
    out = set()
    for tf in sorted((REPO / tfdir).glob("*.tf")):
        for name, body in _REMOTE.findall(tf.read_text()):
            prefix = re.search(r'prefix\s*=\s*"\$\{var\.env_name\}/(\w+)"', body)
            assert prefix, f"{tf}: remote state {name} has no ${{var.env_name}}/<module> prefix"
            assert prefix.group(1) == name, f"{tf}: remote state {name} reads {prefix.group(1)}'s state"
            out.add(prefix.group(1))
    return out - {own}


@pytest.mark.parametrize("spec", [s for s in M.CATALOGUE if not s.destroy_only], ids=lambda s: f"{s.name}@{s.tfdir}")
def test_create_order_is_the_remote_state_reads(spec: M.ModuleSpec) -> None:
    assert (REPO / spec.tfdir).is_dir()
    reads = remote_states(spec.tfdir, own=spec.name)
    assert set(spec.after) | set(spec.reads_applied) == reads, \
        f"{spec.tfdir} reads {sorted(reads)} but the catalogue says after={spec.after}, reads_applied={spec.reads_applied}"
    assert not set(spec.after) & set(spec.reads_applied), spec
    for arch in spec.archs:
        assert set(spec.after) <= set(M.modules(arch)), (spec, arch)


@pytest.mark.parametrize("spec", [s for s in M.CATALOGUE if s.reads_applied], ids=lambda s: f"{s.name}@{s.tfdir}")
def test_a_state_read_without_waiting_has_defaults_and_goes_first_on_destroy(spec: M.ModuleSpec) -> None:
    """The slice is asked for beside the modules it reads only when they are there
    (``reads_applied``): each such read gives defaults, so an empty state (a create) plans, and
    the slice is still destroyed before them (its hosts hold the share and the disk)."""
    for tf in sorted((REPO / spec.tfdir).glob("*.tf")):
        for name, body in _REMOTE.findall(tf.read_text()):
            if name in spec.reads_applied:
                assert re.search(r"^\s*defaults\s*=", body, re.M), f"{tf}: {name} is read without waiting but has no defaults"
    assert set(spec.reads_applied) <= set(spec.destroy_before), spec
    for arch in spec.archs:
        order = M.destroy_order(arch)
        assert all(order.index(spec.name) < order.index(d) for d in spec.reads_applied if d in order), (arch, order)


@pytest.mark.parametrize("spec", M.CATALOGUE, ids=lambda s: f"{s.name}@{s.tfdir}")
def test_ttl_is_the_entry_whose_terraform_calls_modules_ttl(spec: M.ModuleSpec) -> None:
    calls = any(re.search(r'source\s*=\s*"\.\./ttl"', tf.read_text()) for tf in (REPO / spec.tfdir).glob("*.tf"))
    assert calls == spec.ttl, spec.tfdir
    assert spec.ttl <= spec.scoped, "the TTL's destroy names its module with a scope flag"


@pytest.mark.parametrize("spec", M.CATALOGUE, ids=lambda s: f"{s.name}@{s.tfdir}")
def test_destroy_only_roots_are_the_skeletons(spec: M.ModuleSpec) -> None:
    """A destroy-only root links modules/_shared/destroy_only.tf and declares no resource of its
    own (so a destroy deletes exactly what its state holds); no key or boot folder feeds it, and
    the order it was created in (which it no longer reads) still orders its destroy."""
    root = REPO / spec.tfdir
    linked = (root / "destroy_only.tf").is_symlink()
    assert linked == spec.destroy_only, spec.tfdir
    if not spec.destroy_only:
        return
    assert (root / "destroy_only.tf").readlink() == Path("../_shared/destroy_only.tf")
    own = "\n".join(tf.read_text() for tf in root.glob("*.tf") if not tf.is_symlink())
    assert not re.search(r'^\s*(resource|data|module)\s+"', own, re.M), f"{spec.tfdir} declares something"
    assert remote_states(spec.tfdir) == set() and spec.keys == () and spec.boot == ()
    for arch in spec.archs:
        order = M.destroy_order(arch)
        assert all(order.index(spec.name) < order.index(d) for d in spec.after), (spec, order)


@pytest.mark.parametrize("arch", M.ARCHS)
def test_one_directory_per_plan_module_and_arch(arch: str) -> None:
    names = M.modules(arch)
    assert len(names) == len(set(names)), names
    assert M.hosts_module(arch) in names
    assert sum(s.hosts for s in M.specs(arch)) == 1
    assert all(bool(s.summary) == s.hosts for s in M.specs(arch)), "validate summarises the hosts module"


def test_every_root_module_is_catalogued_once_and_has_inputs() -> None:
    # roots declare a GCS backend; children (host_identity, ttl...) do not
    roots = {f"modules/{p.name}" for p in (REPO / "modules").iterdir() if not p.name.startswith("_")
             if any('backend "gcs"' in tf.read_text() for tf in p.glob("*.tf"))}
    dirs = [s.tfdir for s in M.CATALOGUE]
    assert len(dirs) == len(set(dirs))
    assert set(dirs) == roots
    assert set(tfvars.INPUTS) == set(dirs)


@pytest.mark.parametrize("arch", M.ARCHS)
def test_destroy_is_the_create_dag_reversed(arch: str) -> None:
    """Everything that reads a module's outputs is destroyed before it; the destroy order is a
    topological order of the destroy DAG, and the create order one of the create DAG."""
    after, before = M.create_after(arch), M.destroy_after(arch)
    order = M.destroy_order(arch)
    assert set(order) == set(M.modules(arch))
    for name, deps in before.items():
        assert all(order.index(d) < order.index(name) for d in deps), (name, deps)
    create = M.modules(arch)
    for name, deps in after.items():
        assert all(create.index(d) < create.index(name) for d in deps), (name, deps)
        for d in deps:  # d is destroyed after name, directly or through another module
            assert name in before[d] or any(name in M._reach(x, {k: set(v) for k, v in before.items()})
                                            for x in before[d]), (arch, name, d)


def test_keys_feed_modules_and_are_known() -> None:
    from builder.config.keys import KEYS

    known = {k.name for k in KEYS}
    for spec in M.CATALOGUE:
        assert set(spec.keys) <= known, set(spec.keys) - known
    assert M.modules_for_key("SHARED_FS_CAPACITY", "vm") == {"filestore"}
    assert M.modules_for_key("GCS_DATASET", "mig") == {"shared_pd", "tpu", "mig"}
    assert M.modules_for_key("TPU_ACCELERATOR_TYPE", "vm") == {"tpu"}
    assert M.modules_for_key("TPU_ACCELERATOR_TYPE", "node") == set(), "node's roots are destroy only"
    assert M.modules_for_key("PROJECT_ID", "vm") == frozenset()


def test_action_enum_is_its_value() -> None:
    from builder.facts.actions import BUILD_ACTIONS, Action

    assert Action.CREATE == "create" and f"{Action.DESTROY}" == "destroy" and str(Action.AUTO) == "auto"
    assert BUILD_ACTIONS == ("initialize", "create", "update", "destroy", "auto")
    assert M.DATA_MODULES == ("filestore", "shared_pd")


def test_no_module_list_is_kept_by_hand_outside_the_catalogue() -> None:
    """No module list is kept by hand in builder/: every one is derived from the catalogue."""
    pattern = re.compile(r'\(\s*"filestore",\s*"shared_pd",\s*"tpu"')
    for path in sorted((REPO / "builder").rglob("*.py")):
        if path.name != "modules.py":
            assert not pattern.search(path.read_text()), f"{path.relative_to(REPO)} lists the modules by hand"


def test_adding_a_module_is_its_files_plus_one_catalogue_line(tmp_path: Path) -> None:
    """docs/architecture.md's worked examples, done for real on a copy of builder/: one catalogue
    entry and the module's inputs, and plan, render, --only, destroy and the guard all know it
    (the guard lets a destroy delete the data the entry declares, and refuses it on an update);
    and a new verb, one file in builder/commands/verbs/, which ``tpubuild --help`` lists and runs."""
    import json
    import shutil
    import subprocess
    import sys

    for part in ("builder", "models"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "values.env", tmp_path / "values.env")
    catalogue = tmp_path / "builder/catalogue/modules.py"
    text = catalogue.read_text()
    anchor = "\n)\n\n#: Which module a full destroy"
    assert text.count(anchor) == 1
    catalogue.write_text(text.replace(anchor, '\n    ModuleSpec("logs", "modules/logs", ARCHS, lambda s: f"bucket {s.env_name}-logs",'
                                      ' holds_data=True,\n               data_resources=(("google_storage_bucket",'
                                      ' "the TensorBoard logs"),)),' + anchor))
    inputs = tmp_path / "builder/inputs/tfvars.py"
    inputs.write_text(inputs.read_text() + '\n\n@inputs("modules/logs")\ndef _logs(s: Settings) -> dict[str, Any]:\n'
                      '    return {"project_id": s.project_id, "env_name": s.env_name, "labels": s.labels}\n')

    def tpubuild(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "builder", *args, "--applied", "none"] if args[0] in ("plan", "render")
                              else [sys.executable, "-m", "builder", *args], cwd=tmp_path, capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)})

    plan = tpubuild("plan", "--format", "json")
    assert plan.returncode == 0, plan.stderr
    info = json.loads(plan.stdout)
    ops = {o["module"]: o for o in info["operations"]}
    assert ops["logs"]["what"] == f"bucket {info['env']}-logs" and ops["logs"]["after"] == []
    build = json.loads(tpubuild("render", "--format", "json").stdout)
    ids = [st["id"] for st in build["steps"]]
    assert ids[ids.index("logs-plan"):ids.index("logs-plan") + 3] == ["logs-plan", "logs-guard", "logs-apply"]
    only = json.loads(tpubuild("render", "--format", "json", "--action", "update", "--only", "logs").stdout)
    assert [st["id"] for st in only["steps"]] == ["tpubuild-image", "logs-plan", "logs-guard", "logs-apply", "finalize"]
    destroy = json.loads(tpubuild("plan", "--format", "json", "--action", "destroy").stdout)
    assert "logs" in destroy["destroyed"]
    doc = {"format_version": "1.2", "resource_changes": [{"address": "google_storage_bucket.logs",
           "type": "google_storage_bucket", "change": {"actions": ["delete"]}}]}
    (tmp_path / "logs.json").write_text(json.dumps(doc))
    guard = tpubuild("guard", "--module", "logs", "--action", "destroy", "--plan-json", str(tmp_path / "logs.json"))
    assert guard.returncode == 0 and "the TensorBoard logs goes away" in guard.stdout, guard.stdout + guard.stderr
    guard = tpubuild("guard", "--module", "logs", "--action", "update", "--plan-json", str(tmp_path / "logs.json"))
    assert guard.returncode != 0 and "REFUSED" in guard.stdout, guard.stdout + guard.stderr

    (tmp_path / "builder/commands/verbs/logs_bucket.py").write_text(LOGS_BUCKET_VERB)
    top = tpubuild("--help")
    assert top.returncode == 0 and "logs-bucket    print the TensorBoard logs bucket" in top.stdout, top.stdout
    assert top.stdout.index("logs-bucket") < top.stdout.index("admin commands")  # its group, after ttl (rank 13)
    assert top.stdout.index("  ttl ") < top.stdout.index("logs-bucket")
    ran = tpubuild("logs-bucket", "--suffix", "tb")
    assert (ran.returncode, ran.stdout) == (0, f"gs://{info['env']}-logs/tb\n"), ran.stderr
    shown = tpubuild("logs-bucket", "--help").stdout
    assert "Print the bucket modules/logs makes" in shown and "examples:\n  tpubuild logs-bucket --suffix" in shown


#: docs/architecture.md "Adding a CLI verb": the whole verb, one file.
LOGS_BUCKET_VERB = '''"""Print the bucket modules/logs makes for the TensorBoard logs.

examples:
  tpubuild logs-bucket --suffix run-1
"""

import argparse

from builder.commands import load_settings
from builder.commands.verb import Group, Verb


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suffix", default="", help="a folder in the bucket")


def body(args: argparse.Namespace) -> int:
    print(f"gs://{load_settings(args).env_name}-logs/{args.suffix}")
    return 0


VERB = Verb.of(__doc__, "logs-bucket", Group.USER, 13, "print the TensorBoard logs bucket", arguments, body)
'''


def _variants() -> list[tuple[str, Path, dict[str, str]]]:
    """Every shipped and example file, and edits that turn each extra step on and off (an edit
    that a file refuses, such as TPU_QUEUED on mig, is left out)."""
    files = [SHIPPED, NODE, *sorted(EXAMPLES.glob("*.env"))]
    edits = [{}, {"SHARED_PD_RESTORE": "latest"}, {"SHARED_PD_DISK_ATTACH": "false"},
             {"TPU_QUEUED": "true", "TPU_PROVISIONING": "spot"}, {"SHARED_FS_TIER": "ZONAL"},
             {"GCS_DATASET": "gs://my-bucket/dataset/*"}]
    return [(f"{f.name}{'+' + ','.join(e) if e else ''}", f, e) for f in files for e in edits if _load(f, e)]


def _load(path: Path, edit: dict[str, str]) -> Settings | None:
    """The file with the edit, or None where the edit is refused for that file."""
    try:
        return load_text(rewrite_env(path.read_text(), **edit), path)
    except BadInput:
        return None


def test_the_variants_run_every_extra_step_of_the_catalogue() -> None:
    declared = {x.kind for spec in M.CATALOGUE for x in spec.steps}
    run = {x.kind for _n, path, edit in _variants() if (s := _load(path, edit)) for spec in M.specs(s.arch)
           for op in ("apply", "destroy") for x in M.extra_steps(s, spec.name, op)}
    assert run == declared


@pytest.mark.parametrize("name,path,edit", _variants(), ids=[v[0] for v in _variants()])
def test_each_modules_steps_are_its_entrys(name: str, path: Path, edit: dict[str, str]) -> None:
    """What ``builder.planning.plan.steps`` runs for a module beyond plan → guard → apply is what its
    catalogue entry's ``steps`` say, in place (before, gate, asks, after, beside), for every action."""
    from builder.catalogue import module_parts as P
    from builder.planning.plan import make_plan

    s = _load(path, edit)
    assert s is not None
    for action, scope in (("create", {}), ("update", {}), ("update", {"tpu": True}), ("destroy", {}),
                          ("destroy", {"tpu": True, "mig": s.arch != "vm"})):
        if action != "destroy" and s.arch == "node":
            continue  # legacy: destroy only
        plan = make_plan(s, action, **scope)
        for op in plan.operations:
            x = M.extra_steps(s, op.module, op.op)
            at = {w: [e.kind for e in x if e.at == w] for w in (P.BEFORE, P.EARLY, P.GATE, P.AFTER, P.BESIDE, P.ASKS)}
            expected = [*at[P.BEFORE], *at[P.EARLY], "plan", "guard", *at[P.GATE], "apply", *at[P.ASKS], *at[P.AFTER],
                        *at[P.BESIDE]]
            assert [st.kind for st in plan.steps if st.module == op.module] == expected, (action, scope, op)


def test_every_status_row_has_a_reader_and_every_reader_a_row() -> None:
    """A module's status rows are on its entry; builder/cloud/status.py only knows how to read
    each row's resource, and reads nothing no entry shows."""
    from builder.cloud.status import READERS

    assert {p.key for spec in M.CATALOGUE for p in spec.status} == set(READERS)
