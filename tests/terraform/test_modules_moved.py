"""Moved blocks: the refactor of modules/ into child modules keeps every remote object (each
former address is the ``from`` of a moved block into the child that now holds it)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.hcl import (
    CHILD_DIRS, MODULE_DIRS, MODULES, Module, bind, call_args, call_source, child_of, load_dir, load_module,
)
from tests.support.terraform import INTENDED_SINCE, unintended

#: Addresses that existed before the refactor (with their count/for_each), by root module. Each
#: must be the ``from`` of a moved block, or an existing environment would destroy and recreate
#: the service account (new unique id: grants made by hand are lost) and the firewall rules.
FORMER = {
    "tpu_vm": {"google_service_account.worker": "", "google_project_iam_member.worker": "for_each",
               "google_storage_bucket_iam_member.dataset": "count", "google_storage_bucket_iam_member.workspace": "",
               "google_compute_firewall.iap_ssh": "", "google_compute_firewall.internal": ""},
    "shared_pd": {"google_service_account.seeder": "", "google_project_iam_member.seeder": "",
                  "google_storage_bucket_iam_member.seeder_dataset": "count",
                  "google_storage_bucket_iam_member.seeder_workspace": ""},
}
_TO = re.compile(r'^module\.(\w+)\.(google_\w+)\.(\w+)(?:\["([^"]+)"\])?$')


def _repetition(body: dict[str, Any]) -> str:
    return "for_each" if "for_each" in body else "count" if "count" in body else ""


#: Module calls added after the split into child modules: nothing existed before them to move.
NEW_CALLS = frozenset({"ttl", "health"})
#: Child resources added after the split (host_identity's checkpoints grant): what an upgrade
#: creates on purpose, the one list the real-Terraform upgrade tests also read.
NEW_RESOURCES = frozenset(key for key, (action, _, _) in INTENDED_SINCE.items() if action == "create")


def _repetition_change(old: str, new: str) -> bool:
    """A root resource that changed its repetition (``this`` → ``this[0]`` → ``this["a"]``:
    modules/tpu_vm's slots), not a move into a child module; real Terraform proves those
    (tests/terraform/test_tpu_slots.py)."""
    return not new.startswith("module.") and old.split("[")[0] == new.split("[")[0]


def moved_errors(mod: Module, former: dict[str, str]) -> list[str]:
    errors = []
    name = mod.path.name
    moves = [(old, new) for old, new in mod.moved if not _repetition_change(old, new)]
    froms = [f for f, _ in moves]
    for dup in sorted({f for f in froms if froms.count(f) > 1}):
        errors.append(f"{name}: {dup} is moved twice")
    for old in sorted(set(former) - set(froms)):
        errors.append(f"{name}: {old} is not moved (it would be destroyed and created again)")
    targets = set()
    for old, new in moves:
        where = f"{name}: moved {old} -> {new}"
        if old not in former:
            errors.append(f"{where}: {old} is not a former address")
            continue
        old_type, old_name = old.split(".")
        if (old_type, old_name) in mod.resources:
            errors.append(f"{where}: {old} still exists in the module")
        m = _TO.match(new)
        if not m:
            errors.append(f"{where}: the target is not a resource of a child module")
            continue
        call, new_type, new_name, key = m.groups()
        if call not in mod.calls:
            errors.append(f"{where}: module.{call} is not called")
            continue
        child = child_of(mod, call)
        body = child.resources.get((new_type, new_name))
        if new_type != old_type or body is None:
            errors.append(f"{where}: no {old_type}.{new_name} in {call_source(mod, call).name}")
            continue
        targets.add((call, new_type, new_name))
        if key is None and _repetition(body) != former[old]:
            errors.append(f"{where}: {former[old] or 'single'} -> {_repetition(body) or 'single'} needs instance keys")
        if key is not None:
            keys = bind(body.get("for_each"), call_args(mod, call))
            if former[old] or not isinstance(keys, list) or f'"{key}"' not in keys:
                errors.append(f"{where}: [{key!r}] is not an instance the call creates")
    for call in mod.calls:
        if call in NEW_CALLS:
            continue
        for new_type, new_name in child_of(mod, call).resources:
            if (call, new_type, new_name) not in targets and (new_type, new_name) not in NEW_RESOURCES:
                errors.append(f"{name}: module.{call}.{new_type}.{new_name} is new: nothing moves into it")
    return errors


@pytest.mark.parametrize("name", sorted(FORMER))
def test_moved_blocks_carry_every_former_address_into_the_child(name: str) -> None:
    assert moved_errors(load_module(name), FORMER[name]) == []


@pytest.mark.parametrize("name", sorted(set(MODULE_DIRS) - set(FORMER) - {"tpu_mig_access", "tpu_mig"}))  # born with children (tpu_mig: its TTL, new)
def test_modules_without_children_move_nothing(name: str) -> None:
    """Nothing moves into a child; the only move is a resource into slot "a" of itself (modules/filestore's
    slots: the move to another zone, docs/capacity.md)."""
    mod = load_module(name)
    assert all(to == f'{frm}["a"]' for frm, to in mod.moved) and mod.calls == {}


def test_moved_check_catches_what_it_should(tmp_path: Path) -> None:
    for child in CHILD_DIRS:
        shutil.copytree(MODULES / child, tmp_path / child)
    vm = load_module("tpu_vm")
    (tmp_path / "tpu_vm").mkdir()
    for f in ("main.tf", "variables.tf"):
        shutil.copy(vm.path / f, tmp_path / "tpu_vm" / f)
    # the real moved.tf, broken five ways
    text = (vm.path / "moved.tf").read_text()
    internal = text[text.rindex("moved {"):]
    for old, new in [
        ("google_service_account.this", "google_service_account.worker"),  # no such resource in the child
        ("google_project_iam_member.project\n", 'google_project_iam_member.project["roles/editor"]\n'),  # no such key
        ("from = google_storage_bucket_iam_member.workspace", "from = google_storage_bucket_iam_member.dataset"),
        ("module.tpu_vm_firewall.google_compute_firewall.iap_ssh", "module.network.google_compute_firewall.iap_ssh"),
        (internal, ""),  # a former address left behind
    ]:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (tmp_path / "tpu_vm" / "moved.tf").write_text(text)
    errors = "\n".join(moved_errors(load_dir(tmp_path / "tpu_vm"), FORMER["tpu_vm"]))
    assert "google_compute_firewall.internal is not moved" in errors
    assert "google_storage_bucket_iam_member.dataset is moved twice" in errors
    assert "no google_service_account.worker in host_identity" in errors
    assert "['roles/editor'] is not an instance the call creates" in errors
    assert "module.network is not called" in errors
    assert "module.tpu_vm_identity.google_service_account.this is new: nothing moves into it" in errors
    assert "module.tpu_vm_firewall.google_compute_firewall.internal is new" in errors


def test_what_an_upgrade_may_change_is_named_and_narrow() -> None:
    """tests.support.terraform.unintended, which the real-Terraform upgrade tests assert empty:
    only INTENDED_SINCE's action, in a child module, and an update only of its named attributes."""
    def change(address: str, actions: list[str], before: Any = None, after: Any = None) -> dict[str, Any]:
        module, _, rest = address.rpartition(".google_") if address.startswith("module.") else ("", "", address)
        rtype, name = ("google_" + rest if module else rest).split(".")
        return {"address": address, "mode": "managed", "type": rtype, "name": name.split("[")[0],
                **({"module_address": module} if module else {}),
                "change": {"actions": actions, "before": before, "after": after}}

    grant = "module.tpu_vm_identity.google_storage_bucket_iam_member.checkpoints[0]"
    job = "module.slice_health[0].google_cloud_scheduler_job.health"
    retry = {"retry_config": [{"retry_count": 3}]}
    intended = [change(grant, ["create"]), change(job, ["update"], {"retry_config": []}, retry),
                change("google_compute_firewall.internal", ["no-op"])]
    assert unintended({"resource_changes": intended}) == {}
    wrong = [change(grant, ["delete", "create"]), change(job, ["update"], {"schedule": "a"}, {"schedule": "b"}),
             change("google_storage_bucket_iam_member.checkpoints", ["create"]),  # not a child's
             change("module.tpu_vm_identity.google_storage_bucket_iam_member.workspace", ["create"]),
             change(job, ["delete"])]
    for c in wrong:
        assert unintended({"resource_changes": [c]}) == {c["address"]: c["change"]["actions"]}, c
