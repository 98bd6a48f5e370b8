"""The plan guard: read ``terraform show -json`` of a saved plan and decide whether to apply it.

Pure: :func:`evaluate` takes the parsed JSON document, the plan module, the action and the
``_ALLOW_DATA_LOSS`` override and returns a :class:`Decision`. Reading the file is the command's
job (``builder/commands/guard.py``).

Rules (see docs/safety.md):

* During ``create``, ``update`` and ``auto``, a plan that destroys or replaces a data-holding
  resource (:data:`PROTECTED_TYPES`: the Filestore instance and the shared persistent disk) is
  refused unless ``allow_data_loss`` is set. "Destroys or replaces" means the resource change's
  ``actions`` contain ``"delete"``: ``["delete"]``, ``["delete", "create"]`` (replace) and
  ``["create", "delete"]`` (create-before-destroy replace).
* During ``destroy`` deleting them is the point (the pipeline snapshots the shared PD and backs up
  Filestore on tiers with backups first); a destroy plan must not create or update anything.
* Replacing or deleting a TPU (:data:`TPU_TYPES`) is allowed but announced: it interrupts training.
* A plan Terraform marked ``errored`` (or not ``applyable`` when there is something to do) is
  refused; a document that is not a Terraform plan is bad input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from builder.errors import BadInput

#: Plan modules (see builder.plan) and the actions whose pipelines apply Terraform plans.
MODULES: tuple[str, ...] = ("tpu", "filestore", "shared_pd", "mig", "dashboard")
ACTIONS: tuple[str, ...] = ("create", "update", "auto", "destroy")

#: Resource types that hold data, with what the user would lose.
PROTECTED_TYPES: dict[str, str] = {
    "google_filestore_instance": "the Filestore share (checkpoints and preprocessed data)",
    "google_compute_disk": "the shared persistent disk (the dataset)",
}
#: TPU resource types, by architecture: a replacement interrupts training.
TPU_TYPES: dict[str, str] = {"google_tpu_node": "node", "google_tpu_v2_vm": "vm"}

OVERRIDE = "_ALLOW_DATA_LOSS=true"
_KNOWN_ACTIONS = frozenset({"no-op", "create", "read", "update", "delete", "forget"})
_SUPPORTED_FORMAT_MAJOR = "1"


@dataclass(frozen=True)
class Change:
    """One managed resource's planned change."""

    address: str
    type: str
    actions: tuple[str, ...]
    replace_paths: tuple[str, ...] = ()
    deposed: bool = False

    @property
    def kind(self) -> str:
        """``create``, ``update``, ``replace``, ``delete``, ``no-op``, ``read`` or ``forget``."""
        if "delete" in self.actions and "create" in self.actions:
            return "replace"
        if "delete" in self.actions:
            return "delete"
        return self.actions[0] if self.actions else "no-op"

    @property
    def destroys(self) -> bool:
        return "delete" in self.actions

    def describe(self) -> str:
        verb = {"replace": "replaced", "delete": "destroyed"}.get(self.kind, self.kind)
        why = f" ({', '.join(self.replace_paths)} forces replacement)" if self.replace_paths else ""
        deposed = " (a deposed object left by an earlier failed apply)" if self.deposed else ""
        return f"{self.address} would be {verb}{why}{deposed}"


@dataclass(frozen=True)
class Decision:
    """What the guard decided. ``refusal`` is the one line printed when ``proceed`` is false."""

    proceed: bool
    module: str
    action: str
    changes: tuple[Change, ...]
    refusal: str = ""
    warnings: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        out = {"create": 0, "update": 0, "replace": 0, "delete": 0}
        for c in self.changes:
            if c.kind in out:
                out[c.kind] += 1
        return out

    def summary(self) -> str:
        n = self.counts()
        verdict = "proceed" if self.proceed else "REFUSED"
        return (f"guard: {self.module} ({self.action}): {n['create']} to add, {n['update']} to change, "
                f"{n['replace']} to replace, {n['delete']} to destroy; {verdict}")


def check_args(module: str, action: str) -> None:
    if module not in MODULES:
        raise BadInput(f"--module {module!r} is not a plan module; use one of {', '.join(MODULES)}")
    if action not in ACTIONS:
        hint = " (initialize runs no Terraform)" if action == "initialize" else ""
        raise BadInput(f"--action {action!r} is not an action that applies a plan{hint}; "
                       f"use one of {', '.join(ACTIONS)}")


def changes_of(doc: Any, source: str = "plan") -> tuple[Change, ...]:
    """The managed resource changes of a ``terraform show -json`` document, checked for shape."""
    if not isinstance(doc, Mapping):
        raise BadInput(f"{source}: is not a Terraform plan (expected a JSON object); "
                       "pass the output of 'terraform show -json PLANFILE'")
    fmt = doc.get("format_version")
    if not isinstance(fmt, str) or "resource_changes" not in doc and "planned_values" not in doc:
        raise BadInput(f"{source}: has no format_version/planned_values, so it is not "
                       "'terraform show -json' output of a saved plan; pass that output")
    if fmt.split(".")[0] != _SUPPORTED_FORMAT_MAJOR:
        raise BadInput(f"{source}: format_version {fmt!r} is not supported (need 1.x); "
                       "use Terraform 1.x to produce the plan JSON")
    raw = doc.get("resource_changes", [])
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise BadInput(f"{source}: resource_changes is not a list; pass unmodified 'terraform show -json' output")
    out: list[Change] = []
    for i, rc in enumerate(raw):
        where = f"{source}: resource_changes[{i}]"
        if not isinstance(rc, Mapping):
            raise BadInput(f"{where} is not an object; pass unmodified 'terraform show -json' output")
        address, rtype, change = rc.get("address"), rc.get("type"), rc.get("change")
        if not isinstance(address, str) or not isinstance(rtype, str) or not isinstance(change, Mapping):
            raise BadInput(f"{where} lacks address, type or change; pass unmodified 'terraform show -json' output")
        if not (address.isprintable() and rtype.isprintable() and address and rtype):
            raise BadInput(f"{where}: address {address!r} or type {rtype!r} is not a Terraform name; "
                           "pass unmodified 'terraform show -json' output")
        actions = change.get("actions")
        if (not isinstance(actions, list) or not actions
                or not all(isinstance(a, str) and a in _KNOWN_ACTIONS for a in actions)):
            raise BadInput(f"{where} ({address}): change.actions {actions!r} is not a list of Terraform actions; "
                           "pass unmodified 'terraform show -json' output")
        if rc.get("mode", "managed") != "managed":
            continue  # data sources are only read
        paths = change.get("replace_paths") or []
        shown = tuple(".".join(str(p) for p in path) if isinstance(path, list) else str(path) for path in paths)
        out.append(Change(address, rtype, tuple(actions), shown, bool(rc.get("deposed"))))
    return tuple(out)


def evaluate(doc: Any, module: str, action: str, *, allow_data_loss: bool = False,
             source: str = "plan") -> Decision:
    """Decide whether the plan in ``doc`` may be applied for ``module`` during ``action``."""
    check_args(module, action)
    changes = changes_of(doc, source)

    def refuse(line: str) -> Decision:
        return Decision(False, module, action, changes, refusal=line)

    if doc.get("errored") is True:
        return refuse(f"{source}: Terraform marked this plan as errored; fix the error shown by the "
                      f"{module}-plan step and run the build again")
    if doc.get("applyable") is False and any(c.kind not in ("no-op", "read") for c in changes):
        return refuse(f"{source}: Terraform marked this plan as not applyable; fix the {module}-plan step's "
                      "errors and run the build again")

    warnings: list[str] = []
    if action == "destroy":
        building = [c for c in changes if c.kind in ("create", "update", "replace")]
        if building:
            return refuse(f"{source}: {building[0].address} would be {building[0].kind}d by a destroy; "
                          "a destroy plan must only delete; produce it with 'terraform plan -destroy'")
        for c in changes:
            if c.type in PROTECTED_TYPES and c.destroys:
                warnings.append(f"{c.address} will be destroyed: {PROTECTED_TYPES[c.type]} goes away with it "
                                "(the pipeline snapshotted or backed it up first where it could)")
    else:
        lost = [c for c in changes if c.type in PROTECTED_TYPES and c.destroys]
        if lost and not allow_data_loss:
            more = f" (and {len(lost) - 1} more)" if len(lost) > 1 else ""
            first = lost[0]
            return refuse(f"{module}: {first.describe()}{more} during {action}, losing {PROTECTED_TYPES[first.type]}; "
                          f"refusing. Revert the change that forces this, or rerun with {OVERRIDE} to accept the loss")
        for c in lost:
            warnings.append(f"DATA LOSS ALLOWED ({OVERRIDE}): {c.describe()}; {PROTECTED_TYPES[c.type]} is lost")
    for c in changes:
        if c.type in TPU_TYPES and c.destroys:
            if action == "destroy":
                warnings.append(f"{c.address} will be destroyed: training on it stops")
            else:
                warnings.append(f"{c.describe()}: this interrupts training; running jobs stop and must "
                                "resume from their last checkpoint")
    return Decision(True, module, action, changes, warnings=tuple(warnings))
