"""Google's rules for TPU MIGs that the API enforces and the provider's schema does not: the
stand-in refuses, at plan time, what a real project would refuse at apply (docs/terraform.md,
"What the stand-in refuses"; the rules and their sources: docs/modules.md, "Google's rules for TPU
MIGs"). Each rule is one function of what ``PlanResourceChange`` sees; ``Rules.check`` returns
the refusals as (summary, detail) pairs, which the server answers as error diagnostics.

Terraform plans a resource after those it references, in one provider process per plan, so the
instance templates are seen before the group that runs them, and the group before its resize
request: ``Rules`` remembers what it saw. A group's template is the one its ``version`` names; a
template created in the same plan has no name yet, so the group takes the template whose
name_prefix is the group's name and a dash (modules/tpu_mig's convention) or, failing that, the
only unnamed one.
"""

from __future__ import annotations

import re
from typing import Any

#: The provider's request_reason that marks a state built by an older commit's modules in the tests
#: (tests/support/terraform.py, Workspace): what a real project let them make before Google
#: enforced these rules, so none applies to that command.
HISTORY = "tfstandin: applied before Google enforced its TPU MIG rules"

#: Machine types of TPU VMs on Compute Engine (ct5p-hightpu-4t, ct6e-standard-4t, tpu7x-standard-4t).
TPU_MACHINE = re.compile(r"^(ct\d|tpu\d)")

ABOUT_BULK = "https://docs.cloud.google.com/compute/docs/instance-groups/about-bulk-mode"
MULTI_HOST = "https://docs.cloud.google.com/compute/docs/tpus/create-tpu-mig-multi-host-slice"

#: The API's own words where a field report (July 2026) quotes them: the refusals of a TPU MIG
#: without bulk mode and of a resize request on one; else the documented limitation.
NEEDS_BULK = "MIGs with TPU accelerator topology require BULK mode in target size policy"
NO_RESIZE_REQUEST = "Creating resize requests for managed instance group with TPU is not allowed"
FLEX_REPAIR = ("A MIG in bulk mode whose instance template uses the flex-start provisioning model must turn "
               "repairs off: instanceLifecyclePolicy.defaultActionOnFailure must be DO_NOTHING")
GROW_FROM_ZERO = ("A MIG in bulk mode adds instances only while its target size is 0: resize it to 0 first, "
                  "then to the new size")
MODE_FIXED = "The target size policy mode of an existing MIG cannot be changed"

MIG_TYPES = ("google_compute_instance_group_manager", "google_compute_region_instance_group_manager")
REQUEST_TYPES = ("google_compute_resize_request", "google_compute_region_resize_request")


def _first(value: Any, block: str) -> dict[str, Any]:
    items = value.get(block) if isinstance(value, dict) else None
    return items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}


def _mode(value: Any) -> str:
    mode = _first(value, "target_size_policy").get("mode")
    return mode if isinstance(mode, str) else "INDIVIDUAL"


def _workload_policy(value: dict[str, Any]) -> bool:
    policies = value.get("resource_policies") or []
    return any(isinstance(p, dict) and p.get("workload_policy") not in (None, "") for p in policies)


def _template_name(link: Any) -> str | None:
    if not isinstance(link, str):
        return None
    return link.split("/instanceTemplates/")[-1].split("?")[0]


class Rules:
    """What one provider process saw in a plan, and the refusals of each resource it plans."""

    def __init__(self, enforced: bool = True) -> None:
        self.enforced = enforced
        self.templates: list[dict[str, Any]] = []
        self.tpu_groups: set[str] = set()

    def check(self, type_name: str, prior: Any, proposed: Any) -> list[tuple[str, str]]:
        if not isinstance(proposed, dict) or not self.enforced:
            return []
        if type_name in ("google_compute_instance_template", "google_compute_region_instance_template"):
            self.templates.append(proposed)
            return []
        if type_name in MIG_TYPES:
            return self._group(prior if isinstance(prior, dict) else None, proposed)
        if type_name in REQUEST_TYPES:
            group = proposed.get("instance_group_manager")
            name = group.rsplit("/", 1)[-1] if isinstance(group, str) else None
            if name is not None and name in self.tpu_groups:
                return [(NO_RESIZE_REQUEST, f"{name}: Google refuses a resize request on a MIG of TPU VMs; "
                         f"grow a bulk-mode group from 0 instead ({ABOUT_BULK}, "
                         "\"Features not supported in bulk mode\")")]
        return []

    def _template(self, group: dict[str, Any]) -> dict[str, Any]:
        links = [_template_name(v.get("instance_template")) for v in group.get("version") or [] if isinstance(v, dict)]
        names = [n for n in links if n]
        for t in self.templates:
            if isinstance(t.get("name"), str) and t["name"] in names:
                return t
        if names or not isinstance(group.get("name"), str):
            return {}
        unnamed = [t for t in self.templates if not isinstance(t.get("name"), str)]
        by_prefix = [t for t in unnamed if t.get("name_prefix") == f"{group['name']}-"]
        return by_prefix[0] if by_prefix else (unnamed[0] if len(unnamed) == 1 else {})

    def _group(self, prior: dict[str, Any] | None, group: dict[str, Any]) -> list[tuple[str, str]]:
        name = group.get("name") if isinstance(group.get("name"), str) else "the group"
        template = self._template(group)
        machine = template.get("machine_type")
        tpu = _workload_policy(group) or (isinstance(machine, str) and bool(TPU_MACHINE.match(machine)))
        if tpu:
            self.tpu_groups.add(name)
        mode, out = _mode(group), []
        # on create: a group made before Google enforced it (a field report of July 2026)
        # keeps running, and is replaced, never changed, to get the mode (MODE_FIXED below)
        if prior is None and _workload_policy(group) and mode != "BULK":
            out.append((NEEDS_BULK, f"{name}: a multi-host TPU slice (a workload policy with an accelerator "
                        f"topology) needs target_size_policy {{ mode = \"BULK\" }} ({ABOUT_BULK}; {MULTI_HOST})"))
        flex = _first(template, "scheduling").get("provisioning_model") == "FLEX_START"
        repair = _first(group, "instance_lifecycle_policy").get("default_action_on_failure")
        if mode == "BULK" and flex and repair != "DO_NOTHING":
            out.append((FLEX_REPAIR, f"{name}: set instance_lifecycle_policy {{ default_action_on_failure = "
                        f"\"DO_NOTHING\" }} ({ABOUT_BULK}, \"Configuration changes and resizing\")"))
        if prior is not None:
            if _mode(prior) != mode:
                out.append((MODE_FIXED, f"{name}: {_mode(prior)} -> {mode}; a new group is needed "
                            f"({ABOUT_BULK}, \"Configuration changes and resizing\")"))
            was, size = prior.get("target_size"), group.get("target_size")
            if mode == "BULK" and isinstance(was, int) and isinstance(size, int) and 0 < was < size:
                out.append((GROW_FROM_ZERO, f"{name}: target size {was} -> {size} ({ABOUT_BULK}, "
                            "\"Configuration changes and resizing\")"))
        return out
