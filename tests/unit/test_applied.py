"""builder/planning/applied.py (what a finished build records) and auto's pure decision helpers in
builder/planning/auto.py: plain data in, data out, no fakes, no cloud."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import load
from builder.facts.errors import BadInput
from builder.planning import auto
from builder.planning.applied import Ledger, after_build, applied_settings
from builder.planning.plan import make_plan
from tests.conftest import EXAMPLES, NODE

NODE_MODULES = ("filestore", "shared_pd", "tpu", "mig")
VM_MODULES = ("filestore", "shared_pd", "tpu")
NOW = {"filestore": "f2", "shared_pd": "s2", "tpu": "t2", "mig": "m2"}


def test_the_first_build_records_todays_sources_and_nothing_outstanding() -> None:
    create = [(m, "apply") for m in NODE_MODULES]
    ledger = after_build(None, create, every=NODE_MODULES, changed=frozenset(NODE_MODULES), sources_now=NOW)
    assert ledger == Ledger(frozenset(), frozenset(), NOW)
    assert ledger.tail() == ""


def test_a_scoped_update_leaves_what_it_skipped_outstanding_with_its_old_sources() -> None:
    before = Ledger(sources={"filestore": "f1", "shared_pd": "s1", "tpu": "t1", "mig": "m1"})
    # update --tpu after the Filestore capacity and the TPU type changed
    ledger = after_build(before, [("tpu", "apply")], every=NODE_MODULES,
                         changed=frozenset({"filestore", "tpu"}), sources_now=NOW)
    assert ledger.outstanding == {"filestore"}
    assert ledger.absent == frozenset()
    assert ledger.sources == {"filestore": "f1", "shared_pd": "s1", "tpu": "t2", "mig": "m1"}
    assert ledger.tail() == " (outstanding: filestore)"
    # the next build that applies it clears it; what was outstanding before stays until then
    later = after_build(ledger, [("mig", "apply")], every=NODE_MODULES, changed=frozenset(), sources_now=NOW)
    assert later.outstanding == {"filestore"} and later.sources["mig"] == "m2" and later.sources["filestore"] == "f1"
    done = after_build(later, [("filestore", "apply")], every=NODE_MODULES, changed=frozenset(), sources_now=NOW)
    assert done.outstanding == frozenset() and done.sources["filestore"] == "f2"


def test_a_destroy_marks_modules_absent_until_applied_again() -> None:
    before = Ledger(outstanding=frozenset({"tpu", "filestore"}), sources=dict(NOW))
    gone = after_build(before, [("mig", "destroy"), ("tpu", "destroy")], every=NODE_MODULES,
                       changed=frozenset({"mig"}), sources_now=NOW)
    assert gone.absent == {"tpu", "mig"}
    assert gone.outstanding == {"filestore"}  # absent modules are never outstanding
    assert gone.tail() == " (outstanding: filestore; absent: mig, tpu)"
    back = after_build(gone, [("tpu", "apply")], every=NODE_MODULES, changed=frozenset(), sources_now=NOW)
    assert back.absent == {"mig"} and back.outstanding == {"filestore"}


def test_a_full_destroy_then_create() -> None:
    before = Ledger(sources=dict(NOW))
    destroyed = after_build(before, [(m, "destroy") for m in reversed(NODE_MODULES)], every=NODE_MODULES,
                            changed=frozenset(), sources_now=NOW)
    assert destroyed.absent == set(NODE_MODULES) and destroyed.outstanding == frozenset()
    created = after_build(destroyed, [(m, "apply") for m in NODE_MODULES], every=NODE_MODULES,
                          changed=frozenset(NODE_MODULES), sources_now=NOW)
    assert created.absent == frozenset() and created.outstanding == frozenset()


def test_only_the_architectures_modules_are_kept() -> None:
    """A snapshot written under another architecture (node's ``mig``) does not leak into vm's."""
    before = Ledger(outstanding=frozenset({"mig", "filestore"}), absent=frozenset({"mig"}),
                    sources={"mig": "m1", "filestore": "f1"})
    ledger = after_build(before, [("tpu", "apply")], every=VM_MODULES, changed=frozenset({"mig"}),
                         sources_now=NOW)
    assert ledger.outstanding == {"filestore"} and ledger.absent == frozenset()
    assert set(ledger.sources) == set(VM_MODULES)
    assert ledger.sources["shared_pd"] == "s2"  # recorded nowhere before: today's digest


def test_unreadable_snapshot_updates_every_module_but_the_absent() -> None:
    decision = auto.decide_unreadable(NODE_MODULES, frozenset({"mig"}))
    assert decision.action == "update" and decision.only == {"filestore", "shared_pd", "tpu"}
    assert decision.reasons == (auto.UNREADABLE,)
    assert decision.summary() == "auto: update filestore, shared_pd, tpu"


def test_plan_for_carries_out_the_decision() -> None:
    settings = load(NODE)
    assert auto.plan_for(settings, auto.Decision("none", None, ("nothing",))) is None
    assert auto.plan_for(settings, auto.Decision("create", None, ())) == make_plan(settings, "create")
    update = auto.plan_for(settings, auto.Decision("update", frozenset({"mig"}), ()))
    assert update is not None and update.action == "update" and update.modules == ("mig",)


def test_applied_values_parse_beside_todays(tmp_path: Path) -> None:
    settings = load(EXAMPLES / "vm-v4-32.env")
    old = applied_settings((EXAMPLES / "vm-v4-32.env").read_bytes(), settings)
    assert old.source == settings.source.parent / "applied.values.env"
    assert auto.changed_keys(old, settings) == []
    with pytest.raises(BadInput):
        applied_settings(b"TPU_ARCH=nonsense\n", settings)
    with pytest.raises(UnicodeDecodeError):
        applied_settings(b"\xff\xfe", settings)


# ---------------------------------------------------------------- what a plan is compared with

def _env(tmp_path: Path, base: Path, name: str, **overrides: str) -> Path:
    from tests.conftest import rewrite_env

    path = tmp_path / name
    path.write_text(rewrite_env(base.read_text(), **overrides))
    return path


@pytest.mark.parametrize("overrides, named", [
    ({"ENV_BUILD_NAME": "other-env"}, ("ENV_BUILD_NAME 'other-env'",)),
    ({"PROJECT_ID": "other-project"}, ("PROJECT_ID 'other-project'",)),
    ({"ENV_BUILD_NAME": "other-env", "PROJECT_ID": "other-project"},
     ("ENV_BUILD_NAME 'other-env' and PROJECT_ID 'other-project'",)),
])
def test_another_environments_values_are_refused(tmp_path: Path, overrides: dict[str, str], named: tuple[str, ...]) -> None:
    from builder.planning.applied import compared_with

    current = load(EXAMPLES / "vm-v4-32.env")
    other = load(_env(tmp_path, EXAMPLES / "vm-v4-32.env", "other.env", **overrides))
    with pytest.raises(BadInput) as exc:
        compared_with(other, current, "other.env", destroy_with="other.env")
    message = str(exc.value)
    assert message.startswith("other.env: ") and "\n" not in message and "another environment" in message
    assert all(fragment in message for fragment in named)
    for key, field in (("ENV_BUILD_NAME", "env_name"), ("PROJECT_ID", "project_id")):
        if key in overrides:
            assert repr(getattr(current, field)) in message  # both values, then the fix
    assert "--applied none" in message.split("; ", 1)[1]


def test_a_node_era_applied_file_is_read_and_reported(tmp_path: Path) -> None:
    """The seed-era TPU Node file against its migrated vm file: what is applied is said, with
    the way to take it down, instead of comparing as if nothing were there."""
    from builder.planning.applied import compared_with
    from builder.config.migrate import migrate_text

    node = load(NODE)
    migrated = tmp_path / "values.env"
    migrated.write_text(migrate_text(NODE.read_text(), NODE).text)
    vm = load(migrated)
    assert (node.arch, vm.arch) == ("node", "vm") and node.env_name == vm.env_name
    said = compared_with(node, vm, "old.env", destroy_with="old.env")
    assert said.startswith("old.env: the applied environment is TPU_ARCH=node")
    for fragment in (node.tpu_name, node.mig_name, node.accelerator_type, "TPU_ARCH=vm",
                     "tpubuild submit --values old.env --action destroy"):
        assert fragment in said
    assert compared_with(vm, vm, "same.env", destroy_with="same.env") == "same.env"
