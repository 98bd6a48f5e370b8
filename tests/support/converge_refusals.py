"""The convergence harness's stand-ins saying no (tests/support/converge_standins.py), and the plan JSON
its ``terraform`` writes for the real ``tpubuild guard``.

* :data:`REFUSALS` (``bin/standin_refusals.py`` in a world): the refusals a schedule queued in
  ``$STANDIN_WORLD/refusals.json``, ``[{"at", "kind", "text"}]``, each answered once, at the first
  command that reaches its ``at``: ``check-capacity`` (the quota refuses the slice: what the real
  check prints, exit 1), ``apply`` (Google refuses to create the slice: Terraform prints the API's
  error, saves what it made, unlocks, exit 1) and ``not-ready`` (``describe`` of the TPU VM answers
  CREATING; ``list-instances`` of the group answers its VMs PROVISIONING with CREATING under way to
  whoever asks their status, and the swap's question, status and current action, takes it: the swap
  waits, then fails). :func:`refusal` writes one in Google's words, from the recorded texts in
  tests/data/capacity_errors.
* :data:`SHOW` (``bin/standin_show.py``): ``terraform show -json`` of the stand-in's saved plan,
  shaped as Terraform 1.x writes it (compact JSON; ``resource_changes`` by address, each with
  ``mode``, ``type``, ``name``, ``index``, ``provider_name`` and ``change.actions``, a replacement as one
  ``["delete", "create"]`` change with its ``replace_paths``; ``applyable``, ``complete``, ``errored``),
  the addresses those of the modules (tests/data/plans, made by the stand-in provider, has the real ones).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builder.planning import capacity
from tests.conftest import REPO

ERRORS = REPO / "tests" / "data" / "capacity_errors"

REFUSALS = r'''import json, os
from pathlib import Path


def refused(at, take=True):
    """The first refusal queued for ``at`` (taken off the queue unless ``take`` is false), else None."""
    path = Path(os.environ["STANDIN_WORLD"]) / "refusals.json"
    if not path.exists():
        return None
    queue = json.loads(path.read_text())
    hit = next((r for r in queue if r["at"] == at), None)
    if hit is not None and take:
        queue.remove(hit)
        tmp = path.with_name(f"refusals.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(queue))
        os.replace(tmp, path)
    return hit
'''

SHOW = r'''import datetime, json

PROVIDER = "registry.terraform.io/hashicorp/google"


def parts(address):
    """'module.m.google_x.this["a"]' -> ('module.m', 'google_x', 'this', 'a')."""
    base, _, index = address.partition("[")
    *module, kind, name = base.split(".")
    return ".".join(module), kind, name, index.rstrip("]").strip('"') if index else None


def show(changes, have, want_doc, targeted):
    acts, config = {}, dict(have)
    for action, name, conf in changes:
        acts.setdefault(name, []).append(action)
        if action == "create":
            config[name] = conf
    out = []
    for name in sorted(set(have) | set(acts)):
        if targeted and name not in acts:
            continue  # -target plans only the targeted resource
        address = want_doc["addresses"][name]  # a resource without an address is the stand-in's bug: fail
        module, kind, rname, index = parts(address)
        did = acts.get(name, ["no-op"])
        actions = ["delete", "create"] if set(did) == {"delete", "create"} else did
        before = {"name": name, "config": have[name]} if name in have else None
        after = None if actions == ["delete"] else {"name": name, "config": config[name]}
        rc = {"address": address, **({"module_address": module} if module else {}), "mode": "managed",
              "type": kind, "name": rname, **({"index": index} if index is not None else {}),
              "provider_name": PROVIDER,
              "change": {"actions": actions, "before": before, "after": after, "after_unknown": {},
                         "before_sensitive": {} if before else False, "after_sensitive": {} if after else False}}
        if actions == ["delete", "create"]:
            rc["action_reason"] = "replace_because_cannot_update"
            rc["change"]["replace_paths"] = [["config"]]
        out.append(rc)
    out.sort(key=lambda rc: rc["address"])
    doc = {"format_version": "1.2", "terraform_version": "1.11.4", "planned_values": {"root_module": {}},
           "resource_changes": out, "output_changes": {},
           "prior_state": {"format_version": "1.0", "terraform_version": "1.11.4", "values": {"root_module": {}}},
           "configuration": {"provider_config": {"google": {"name": "google", "full_name": PROVIDER}},
                             "root_module": {}},
           "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "applyable": any(rc["change"]["actions"] != ["no-op"] for rc in out), "complete": not targeted,
           "errored": False}
    return json.dumps(doc, separators=(",", ":")) + "\n"
'''

#: The modules' addresses of what the stand-in world names by module (modules/*/main.tf).
ADDRESSES = {"filestore": "google_filestore_instance.this", "shared_pd": "google_compute_disk.this",
             "dashboard": "google_monitoring_dashboard.this", "tpu": "google_project_iam_custom_role.mig_reader"}
SLOTS = {"vm": 'google_tpu_v2_vm.this["{}"]', "mig": 'google_compute_instance_group_manager.slice["{}"]'}


def addresses(settings: Any, spec: Any, names: dict[str, str], slots: list[str]) -> dict[str, str]:
    """The Terraform address of each resource the desired world of ``spec``'s module names."""
    out = {name: ADDRESSES[kind] for name, kind in names.items() if kind in ADDRESSES}
    out.update({n: SLOTS[settings.arch].format("ab"[i]) for i, n in enumerate(slots)})
    if spec.identity:
        out[spec.identity] = spec.identity
    return out


#: Where each kind of refusal is said, and the recorded text it is said with.
KINDS = {"quota": "check-capacity", "stockout": "apply", "not-ready": "not-ready"}


def refusal(settings: Any, kind: str) -> dict[str, str]:
    """One queued refusal of ``kind`` for ``settings``'s slice, in the words Google (or, for the quota
    the check reads, the real check) uses."""
    s = settings
    if kind == "quota":  # the quota read allows none: the real check's line (builder.planning.capacity)
        need = capacity.need(s)
        assert isinstance(need, capacity.Need), need
        text = f"tpubuild: error: {capacity.refusal(need, 0)}"
    elif kind == "stockout" and s.arch == "vm":  # the Cloud TPU API, through google_tpu_v2_vm
        text = ((ERRORS / "tpu_vm_stockout_queue_hint.txt").read_text().replace("us-central1-c", s.zone)
                .replace('google_tpu_v2_vm.tpu', SLOTS["vm"].format("a")))
    elif kind == "stockout":  # Compute Engine, making the group's VMs (the apply waits for them: STABLE)
        text = ((ERRORS / "compute_zone_resource_pool_exhausted.txt").read_text()
                .replace("fontbakery-168509", s.project_id).replace("us-central1-a", s.zone))
    else:  # TPU VM state / the MIG's instanceStatus and currentAction while VMs are made
        text = "CREATING" if s.arch == "vm" else "PROVISIONING CREATING"
    return {"at": KINDS[kind], "kind": kind, "text": text.strip()}


def queue(world_root: Path, *refusals: dict[str, str]) -> None:
    (world_root / "refusals.json").write_text(json.dumps(list(refusals)))


def pending(world_root: Path) -> list[dict[str, str]]:
    path = world_root / "refusals.json"
    return json.loads(path.read_text()) if path.exists() else []


def kinds(action: str, steps: list[dict[str, Any]]) -> list[str]:
    """The refusals a pipeline meets: the quota where it checks capacity, a stockout where it makes a
    slice (every action but destroy), a slice not ready where it swaps one for another (not create)."""
    ids = {st["id"] for st in steps}
    return [k for k, there in (("quota", "check-capacity" in ids), ("stockout", action != "destroy"),
                               ("not-ready", action != "create" and any(i.endswith("-swap") for i in ids)))
            if there]


#: sleep: a step's poll (the slice's apply waiting 5 s for its guard's verdict) takes a tenth of a second here.
SLEEP = '#!/bin/sh\nexec /bin/sleep 0.1\n'
