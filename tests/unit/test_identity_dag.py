"""mig: the slice reads nothing of its access module (plan module ``tpu``), so its steps wait for
that module only where the hosts need it (the catalogue's ``identity_from``, builder/planning/plan.py
``_identity_waits``): ``mig-plan`` and ``mig-guard`` wait for nothing of ``tpu``; ``mig-apply`` for
``tpu-identity`` only (the account its VMs run as); the slice's first step after its apply
(``mig-resize``; ``mig-calendar`` asks beside the apply) for ``tpu-apply`` (the roles and the firewall rules). Every mig
example, every provisioning (spot, flex, calendar, a failover), make-before-break and
break-before-make, create and update; destroy keeps its order (mig before tpu) and has no identity
step; vm has none."""

from __future__ import annotations

import pytest

from builder.catalogue import modules as M
from builder.catalogue.module_parts import AFTER
from builder.config import load, load_text
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, rewrite_env
from tests.support.pipeline import ancestors

MIG_EXAMPLES = sorted(p.name for p in EXAMPLES.glob("mig-*.env"))


def _settings(name: str, replace: str) -> object:
    path = EXAMPLES / name
    text = path.read_text() if not replace else rewrite_env(path.read_text(), TPU_REPLACE=replace)
    return load_text(text, path)


def test_the_catalogue_says_it_once() -> None:
    access, slice_ = M.spec("mig", "tpu"), M.spec("mig", "mig")
    assert access is not None and slice_ is not None
    assert access.identity == "module.slice_identity.google_service_account.this"
    assert [x.kind for x in access.steps if x.at == "before" and x.op == "apply"] == ["identity"]
    assert slice_.identity_from == ("tpu",) and "tpu" not in slice_.after and "tpu" in slice_.destroy_before
    assert not [s for s in M.CATALOGUE if s.identity and "mig" not in s.archs]


@pytest.mark.parametrize("replace", ["", "break-before-make"])
@pytest.mark.parametrize("name", MIG_EXAMPLES)
@pytest.mark.parametrize("action", ["create", "update"])
def test_the_slice_waits_for_its_access_only_where_the_hosts_need_it(name: str, replace: str, action: str) -> None:
    s = _settings(name, replace)
    if replace and s.provisioning == "calendar":
        pytest.skip("calendar mode is break-before-make already")
    for flags in ({}, {"tpu": True, "mig": True}) if action == "update" else ({},):
        plan = make_plan(s, action, **flags)
        config = render(s, plan)
        ids = [st["id"] for st in config["steps"]]
        tpu = {i for i in ids if i.startswith("tpu-")}
        assert "tpu-identity" in tpu and "tpu-identity" in ancestors(config, "tpu-plan")
        assert not ancestors(config, "mig-plan") & tpu and not ancestors(config, "mig-guard") & tpu
        assert ancestors(config, "mig-apply") & tpu == {"tpu-identity"}, (name, flags)
        first = next(x.kind for x in M.extra_steps(s, "mig", "apply") if x.at == AFTER)
        waits = next(st["waitFor"] for st in config["steps"] if st["id"] == f"mig-{first}")
        assert waits[0] == "mig-apply" and "tpu-apply" in waits, (name, first, waits)
        # everything after the slice's apply comes after the access's apply
        later = [i for i in ids if i.startswith("mig-") and "mig-apply" in ancestors(config, i)]
        assert later and all("tpu-apply" in ancestors(config, i) for i in later), later
        assert "tpu-apply" in ancestors(config, "finalize") and "mig-apply" in ancestors(config, "finalize")


def test_scoped_to_the_slice_nothing_of_the_access_runs_or_is_waited_for() -> None:
    s = load(EXAMPLES / "mig-v6e-16-spot.env")
    config = render(s, make_plan(s, "update", mig=True))
    assert not [st["id"] for st in config["steps"] if st["id"].startswith("tpu-")]
    scoped = render(s, make_plan(s, "update", tpu=True))
    assert [st["id"] for st in scoped["steps"] if st["id"].startswith("tpu-")] == \
        ["tpu-identity", "tpu-plan", "tpu-guard", "tpu-apply"]


@pytest.mark.parametrize("name", MIG_EXAMPLES)
def test_destroy_is_unchanged(name: str) -> None:
    s = load(EXAMPLES / name)
    for flags in ({}, {"tpu": True, "mig": True}):
        plan = make_plan(s, "destroy", **flags)
        assert plan.modules.index("mig") < plan.modules.index("tpu")
        assert "tpu-identity" not in {st.id for st in plan.steps}
        waits = {st.id: st.after for st in plan.steps}
        assert "mig-apply" in waits["tpu-plan"]


def test_vm_has_no_identity_step() -> None:
    s = load(EXAMPLES / "vm-v6e-16.env")
    assert not [st for st in make_plan(s, "create").steps if st.kind == "identity"]
