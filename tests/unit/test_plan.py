"""Action dispatch (builder.planning.plan): every row of the dispatch table for both architectures, refused
combinations through the CLI (builder/planning/request.py refuses them: tests/unit/test_request.py), and
the DAG's shape."""

from __future__ import annotations

import json

import pytest

from builder.catalogue.modules import modules as arch_modules
from builder.config import load
from builder.facts.errors import BadInput
from builder.planning.plan import ACTIONS, Operation, make_plan, module_dir
from tests.conftest import run_tpubuild
from tests.support.pipeline import ENVS, NODE_ENV, VM_ENV, ops


@pytest.fixture(scope="module")
def node():
    return load(NODE_ENV)


@pytest.fixture(scope="module")
def vm():
    return load(VM_ENV)


# ---- the dispatch table, row by row ----

NODE_ROWS = [
    # action, tpu, mig, operations
    ("create", False, False, [("filestore", "apply", ()), ("shared_pd", "apply", ()), ("tpu", "apply", ()),
                              ("mig", "apply", ("filestore", "shared_pd", "tpu")), ("dashboard", "apply", ())]),
    ("update", True, False, [("tpu", "apply", ())]),
    ("update", False, True, [("mig", "apply", ())]),
    ("update", True, True, [("tpu", "apply", ()), ("mig", "apply", ("tpu",))]),
    ("update", False, False, [("filestore", "apply", ()), ("shared_pd", "apply", ()), ("tpu", "apply", ()),
                              ("mig", "apply", ("filestore", "shared_pd", "tpu")), ("dashboard", "apply", ())]),
    ("destroy", False, False, [("mig", "destroy", ()), ("tpu", "destroy", ("mig",)),
                               ("filestore", "destroy", ("tpu",)), ("shared_pd", "destroy", ("tpu",)),
                               ("dashboard", "destroy", ())]),
    ("destroy", True, False, [("tpu", "destroy", ())]),
    ("destroy", False, True, [("mig", "destroy", ())]),
    ("destroy", True, True, [("mig", "destroy", ()), ("tpu", "destroy", ("mig",))]),
]

VM_ROWS = [  # the slice first: the TPU VM is applied beside the share and the disk, destroyed before them
    ("create", False, False, [("filestore", "apply", ()), ("shared_pd", "apply", ()),
                              ("tpu", "apply", ()), ("dashboard", "apply", ())]),
    ("update", True, False, [("tpu", "apply", ())]),
    ("update", False, False, [("filestore", "apply", ()), ("shared_pd", "apply", ()),
                              ("tpu", "apply", ()), ("dashboard", "apply", ())]),
    ("destroy", False, False, [("tpu", "destroy", ()), ("filestore", "destroy", ("tpu",)),
                               ("shared_pd", "destroy", ("tpu",)), ("dashboard", "destroy", ())]),
    ("destroy", True, False, [("tpu", "destroy", ())]),
]


@pytest.mark.parametrize("action,tpu,mig,expected", NODE_ROWS,
                         ids=[f"{a}-tpu{int(t)}-mig{int(m)}" for a, t, m, _ in NODE_ROWS])
def test_node_dispatch_table(node, action, tpu, mig, expected):
    plan = make_plan(node, action, tpu=tpu, mig=mig)
    assert plan.action == action and plan.arch == "node"
    assert ops(plan) == expected


@pytest.mark.parametrize("action,tpu,mig,expected", VM_ROWS,
                         ids=[f"{a}-tpu{int(t)}-mig{int(m)}" for a, t, m, _ in VM_ROWS])
def test_vm_dispatch_table(vm, action, tpu, mig, expected):
    plan = make_plan(vm, action, tpu=tpu, mig=mig)
    assert plan.arch == "vm"
    assert ops(plan) == expected


@pytest.mark.parametrize("arch", ["node", "vm"])
def test_initialize_has_no_terraform(arch):
    plan = make_plan(load(ENVS[arch]), "initialize")
    assert plan.operations == () and plan.action == "initialize" and plan.stages() == ()


@pytest.mark.parametrize("arch", ["node", "vm"])
def test_update_without_flags_is_create_order(arch):
    s = load(ENVS[arch])
    assert ops(make_plan(s, "update")) == ops(make_plan(s, "create"))


@pytest.mark.parametrize("arch", ["node", "vm"])
def test_destroy_keeps_no_module_and_reverses_create(arch):
    s = load(ENVS[arch])
    create = [m for m, _, _ in ops(make_plan(s, "create"))]
    destroy = make_plan(s, "destroy")
    assert set(destroy.modules) == set(create) == set(arch_modules(arch))
    # everything a module waited for at create waits for that module at destroy
    for o in make_plan(s, "create").operations:
        for dep in o.after:
            assert destroy.modules.index(o.module) < destroy.modules.index(dep)


# ---- only (GitOps auto) ----

@pytest.mark.parametrize("only,expected", [
    ({"mig"}, [("mig", "apply", ())]),
    ({"filestore", "mig"}, [("filestore", "apply", ()), ("mig", "apply", ("filestore",))]),
    ({"tpu", "shared_pd"}, [("shared_pd", "apply", ()), ("tpu", "apply", ())]),
    ({"mig", "tpu", "filestore", "shared_pd"},
     [("filestore", "apply", ()), ("shared_pd", "apply", ()), ("tpu", "apply", ()),
      ("mig", "apply", ("filestore", "shared_pd", "tpu"))]),
])
def test_only_keeps_create_order_node(node, only, expected):
    plan = make_plan(node, "update", only=frozenset(only))
    assert ops(plan) == expected
    assert plan.only == frozenset(only)


def test_only_on_vm_applies_the_tpu_beside_the_disk_and_attaches_it_after(vm):
    plan = make_plan(vm, "update", only=frozenset({"tpu", "shared_pd"}))
    assert ops(plan) == [("shared_pd", "apply", ()), ("tpu", "apply", ())]
    waits = {st.id: st.after for st in plan.steps}
    assert "shared_pd-apply" not in waits["tpu-plan"] + waits["tpu-apply"]
    assert waits["tpu-attach"] == ("tpu-apply", "shared_pd-apply", "shared_pd-seed")


def test_module_dir(node, vm):
    assert module_dir(node, "tpu") == "modules/tpu_node"
    assert module_dir(vm, "tpu") == "modules/tpu_vm"
    for s in (node, vm):
        assert module_dir(s, "filestore") == "modules/filestore"
        assert module_dir(s, "shared_pd") == "modules/shared_pd"
    assert module_dir(node, "mig") == "modules/mig"
    with pytest.raises(BadInput):
        module_dir(node, "tpu_node")
    with pytest.raises(BadInput, match="not a plan module"):  # the vm architecture has no MIG
        module_dir(vm, "mig")


def test_module_dirs_exist_in_the_repo(node, vm):
    from tests.conftest import REPO

    for s in (node, vm):
        for m in arch_modules(s.arch):
            assert (REPO / module_dir(s, m)).is_dir(), module_dir(s, m)


# ---- DAG shape ----

@pytest.mark.parametrize("arch", ["node", "vm"])
@pytest.mark.parametrize("action", [a for a in ACTIONS if a != "initialize"])
def test_operations_are_topologically_ordered(arch, action):
    plan = make_plan(load(ENVS[arch]), action)
    seen: set[str] = set()
    for o in plan.operations:
        assert isinstance(o, Operation) and o.op in ("apply", "destroy")
        assert set(o.after) <= seen, (o, seen)
        seen.add(o.module)


def test_stages_group_parallel_work(node, vm):
    def names(plan):
        return [[o.module for o in st] for st in plan.stages()]

    assert names(make_plan(node, "create")) == [["filestore", "shared_pd", "tpu", "dashboard"], ["mig"]]
    assert names(make_plan(vm, "create")) == [["filestore", "shared_pd", "tpu", "dashboard"]]
    assert names(make_plan(node, "destroy")) == [["mig", "dashboard"], ["tpu"], ["filestore", "shared_pd"]]
    assert names(make_plan(vm, "destroy")) == [["tpu", "dashboard"], ["filestore", "shared_pd"]]
    assert names(make_plan(node, "update", tpu=True, mig=True)) == [["tpu"], ["mig"]]


# ---- through the CLI: exit 2, one line, no traceback ----

CLI_REFUSED = [
    (["plan", "--values", VM_ENV, "--action", "update", "--mig"], "--mig"),
    (["render", "--values", VM_ENV, "--action", "destroy", "--mig"], "--mig"),
    (["plan", "--values", NODE_ENV, "--action", "initialize", "--tpu"], "initialize"),
    (["render", "--values", NODE_ENV, "--action", "initialize", "--mig"], "initialize"),
    (["plan", "--values", NODE_ENV, "--action", "nuke"], "'nuke' is not an action"),
    (["render", "--values", NODE_ENV, "--action", "Apply"], "is not an action"),
    (["plan", "--values", VM_ENV, "--action", "create", "--only", "tpu"], "only"),
    (["render", "--values", VM_ENV, "--action", "update", "--only", "tpu,gpu"], "gpu is not"),
    (["plan", "--values", NODE_ENV, "--format", "yaml"], "'yaml' is not a format"),
    (["render", "--values", NODE_ENV, "--format", "text"], "'text' is not a format"),
]


@pytest.mark.parametrize("args,words", CLI_REFUSED, ids=[" ".join([a[0], *map(str, a[3:])]) for a, _ in CLI_REFUSED])
def test_cli_refuses_with_exit_2_and_one_line(cli, args, words):
    code, out, err = cli(*args)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert words in err and "Traceback" not in err


def test_cli_refusal_in_a_real_process():
    proc = run_tpubuild("render", "--values", str(VM_ENV), "--action", "update", "--mig")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "--mig" in proc.stderr


def test_cli_plan_json_matches_make_plan(cli, node):
    code, out, _ = cli("plan", "--values", NODE_ENV, "--action", "destroy", "--tpu", "--mig", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [(o["module"], o["op"], tuple(o["after"])) for o in data["operations"]] == \
        ops(make_plan(node, "destroy", tpu=True, mig=True))


def test_a_failover_asks_for_the_slice_first_and_makes_the_storage_after_it(vm, make_env):
    """Several candidates (vm): the storage is made in the zone that grants the slice, so it waits
    for the acquisition (tpu-apply), not for the slice's later steps; one candidate: beside it."""
    s = load(make_env(VM_ENV, TPU_PROVISIONING="spot,on-demand"))
    plan = make_plan(s, "create")
    assert ops(plan) == [("tpu", "apply", ()), ("filestore", "apply", ("tpu",)), ("shared_pd", "apply", ("tpu",)),
                         ("dashboard", "apply", ())]
    waits = {st.id: st.after for st in plan.steps}
    assert waits["filestore-plan"] == ("tpu-apply",) and waits["shared_pd-plan"] == ("tpu-apply",)
    assert waits["tpu-attach"] == ("tpu-apply", "shared_pd-apply", "shared_pd-seed")
    ids = [st.id for st in plan.steps]
    assert all(ids.index(a) < ids.index(st.id) for st in plan.steps for a in st.after)
    assert [o.module for o in make_plan(s, "destroy").operations][:1] == ["tpu"]
    assert ops(make_plan(vm, "create"))[2] == ("tpu", "apply", ())
