"""Action dispatch: (settings, action, scope flags) → a DAG of Terraform module operations.

The dispatch table (docs/pipeline.md has the rationale):

============  ===========  ===============================================================
action        flags        operations
============  ===========  ===============================================================
initialize    none         no Terraform at all (buckets and workspace, run in-process)
create        none         apply filestore ‖ shared_pd ‖ tpu ‖ mig (mig: steps wait for
                           tpu's account, ``_identity_waits``; node: mig after the rest)
                           (shared_pd only when a host attaches it: ``not_wanted``)
update        tpu          apply tpu
update        mig          apply mig
update        tpu + mig    apply tpu ‖ mig (as in create)
update        none         apply everything, in create's order
update        ``only``     apply the named modules, in create's order (GitOps ``auto``)
destroy       none         mig, then tpu, then filestore ‖ shared_pd (buckets are kept)
destroy       tpu/mig      only the named modules, mig before tpu
============  ===========  ===============================================================

``dashboard`` (modules/dashboard: the Cloud Monitoring dashboard and the log-based step metric)
depends on nothing and nothing depends on it: create/update apply it in the first stage,
a full destroy removes it in the first stage; the scope flags never touch it.

The slice is asked for first: the TPU VM (vm) and the slice's MIG (mig) read the share's and the
disk's states only when they are there (``reads_applied``), so they are applied beside them; the
hosts read the NFS export from the workspace (``filestore-publish``) and get the disk from their
attach step, which waits for it. They are still destroyed *before* both (``destroy_before``).

:func:`make_plan` takes an action and flags that ``builder.planning.request.parse`` accepted: the user's
input reaches it only through there, which refuses every combination that would mean nothing
(nothing may silently do nothing). This module is pure: no I/O, no imports beyond the standard library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.catalogue import modules as catalogue
from builder.catalogue.module_parts import AFTER, ASKS, BEFORE, BESIDE, EARLY, GATE, ExtraStep, fails_over
from builder.catalogue.modules import ModuleSpec, accelerator_module, hosts_module
from builder.facts.actions import APPLIES, PLAN_ACTIONS, Action
from builder.facts.errors import BadInput
from builder.facts.records import record, replace
from builder.planning import move_steps

__all__ = ["ACTIONS", "Operation", "Plan", "Step", "hosts_module", "make_plan", "module_dir", "steps"]

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

ACTIONS: tuple[Action, ...] = PLAN_ACTIONS


@record
class Operation:
    """One Terraform module operation: ``op`` (apply|destroy) of ``module`` once every module in
    ``after`` has finished its own operation."""

    module: str
    op: str
    after: tuple[str, ...] = ()


@record
class Step:
    """One step of the pipeline that carries out a plan: ``kind`` (a row of
    ``builder.render.pipeline.KINDS``) for plan module ``module`` ('' for the build-wide steps), once the
    steps ``after`` (by id) have finished. ``builder.render.pipeline`` renders each step as it stands."""

    id: str
    kind: str
    module: str = ""
    after: tuple[str, ...] = ()


@record
class Plan:
    """The DAG of one action. ``operations`` is in a topological order (each operation comes
    after everything it waits for); ``initialize`` has none."""

    action: Action
    arch: str
    operations: tuple[Operation, ...]
    tpu: bool = False
    mig: bool = False
    only: frozenset[str] | None = None
    steps: tuple[Step, ...] = ()

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(o.module for o in self.operations)

    def get(self, module: str) -> Operation | None:
        return next((o for o in self.operations if o.module == module), None)

    def applies(self, module: str) -> bool:
        op = self.get(module)
        return op is not None and op.op == "apply"

    def destroys(self, module: str) -> bool:
        op = self.get(module)
        return op is not None and op.op == "destroy"

    @property
    def full_destroy(self) -> bool:
        """True for a destroy without scope flags (every module of the architecture)."""
        return self.action is Action.DESTROY and not (self.tpu or self.mig)

    def stages(self) -> tuple[tuple[Operation, ...], ...]:
        """Operations grouped by depth in the DAG: everything in one stage can run in parallel;
        an operation is in the stage after the deepest of the operations it waits for."""
        depth: dict[str, int] = {}
        for o in self.operations:
            depth[o.module] = 1 + max((depth[a] for a in o.after), default=-1)
        count = 1 + max(depth.values(), default=-1)
        return tuple(tuple(o for o in self.operations if depth[o.module] == d) for d in range(count))


def module_dir(settings: Settings, module: str) -> str:
    """The Terraform directory (repo-relative) of a plan module."""
    spec = catalogue.spec(settings.arch, module)
    if spec is None:
        raise BadInput(f"{module!r} is not a plan module of the {settings.arch} architecture; "
                       f"use one of {', '.join(catalogue.modules(settings.arch))}")
    return spec.tfdir


def _restrict(kept: tuple[str, ...], full: dict[str, tuple[str, ...]]) -> tuple[Operation, ...]:
    """The sub-DAG of ``full`` on ``kept`` (in that order): each kept module waits for its
    nearest kept ancestors (a transitive reduction), so removing a module keeps the order of
    the rest."""
    ancestors: dict[str, set[str]] = {}

    def anc(m: str) -> set[str]:
        if m not in ancestors:
            ancestors[m] = set()
            for a in full[m]:
                ancestors[m] |= {a} | anc(a)
        return ancestors[m]

    ops = []
    keep = set(kept)
    for m in kept:
        mine = anc(m) & keep
        direct = {a for a in mine if not any(a in anc(b) for b in mine if b != a)}
        ops.append(Operation(m, "", tuple(x for x in kept if x in direct)))
    return tuple(ops)


def make_plan(
    settings: Settings,
    action: Action,
    *,
    tpu: bool = False,
    mig: bool = False,
    only: frozenset[str] | None = None,
) -> Plan:
    """The operations of ``action`` for these settings (``builder.planning.request.plan_for`` is the way
    in for a user's request: it refuses first what would mean nothing)."""
    arch = settings.arch
    action = Action(action)
    if action is Action.INITIALIZE:
        return Plan(action, arch, ())
    if action in APPLIES:
        order = tuple(m for m in catalogue.modules(arch) if m not in not_wanted(settings))
        if action is Action.UPDATE and only is not None:
            kept = tuple(m for m in order if m in only)  # builder.planning.request refuses an empty one
        elif action is Action.UPDATE and (tpu or mig):
            kept = tuple(m for m in order if m in catalogue.in_scope(tpu=tpu, mig=mig))
        else:
            kept = order
        ops = _restrict(*_placed(settings, kept))
        op = "apply"
    elif action is Action.DESTROY:
        order = catalogue.destroy_order(arch)
        if tpu or mig:
            kept = tuple(m for m in order if m in catalogue.in_scope(tpu=tpu, mig=mig))
        else:
            kept = order
        ops = _restrict(kept, catalogue.destroy_after(arch))
        op = "destroy"
    else:
        raise ValueError(f"{action} has no plan of its own: builder.planning.auto decides it first")
    operations = tuple(Operation(o.module, op, o.after) for o in ops)
    plan = Plan(action, arch, operations, tpu=tpu, mig=mig, only=frozenset(only) if only is not None else None)
    return replace(plan, steps=steps(settings, plan))


def _placed(settings: Settings, kept: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """Create's order of ``kept`` and its DAG. A build that fails over (``fails_over``: several
    candidates) asks for the slice first and makes what it reads the state of (Filestore, the
    disk: ``reads_applied``) after it, in the zone that granted it (docs/capacity.md)."""
    full = catalogue.create_after(settings.arch)
    acc = accelerator_module(settings.arch)
    if acc not in kept:
        return kept, full
    zonal = catalogue.spec(settings.arch, acc).reads_applied  # type: ignore[union-attr]
    if settings.moving_from:  # a move: the new zone's storage is copied first, the slice made after it
        return kept, {**full, acc: (*full.get(acc, ()), *(m for m in zonal if m in kept))}
    if not fails_over(settings):
        return kept, full
    full = {m: (*deps, acc) if m in zonal else deps for m, deps in full.items()}
    # the slice first, after only what it needs itself (on mig nothing: its access, global, is
    # applied beside it, and its apply waits only for the access's identity step, _identity_waits)
    needs: list[str] = []
    todo = [acc]
    while todo:
        for dep in full.get(todo.pop(), ()):
            if dep in kept and dep not in needs:
                needs.append(dep)
                todo.append(dep)
    first = (*(m for m in kept if m in needs), acc)
    return (*first, *(m for m in kept if m not in first)), full


def not_wanted(settings: Settings) -> dict[str, str]:
    """The modules create and update leave out with these values, each with why (a catalogue
    entry's ``wanted``/``unwanted_why``); destroy still takes them."""
    return {sp.name: sp.unwanted_why for sp in catalogue.specs(settings.arch) if not sp.is_wanted(settings)}


# ---- what a plan does beyond Terraform (the pipeline renders it, `tpubuild plan` tells it) ----

def attaches_disk(settings: Settings, module: str) -> bool:
    """Whether ``module``'s machines attach the shared PD (the hosts' module)."""
    return settings.shared_pd_attach and module == hosts_module(settings.arch)


def runs_setup_script(settings: Settings, module: str) -> bool:
    """Whether ``module``'s machines run the startup script (and so MIG_SETUP_SCRIPT)."""
    return module == hosts_module(settings.arch)


def extra(settings: Settings, plan: Plan) -> dict[str, tuple[ExtraStep, ...]]:
    """module → the steps beyond plan → guard → apply its operation in ``plan`` runs (its
    catalogue entry's ``steps``)."""
    return {o.module: catalogue.extra_steps(settings, o.module, o.op) for o in plan.operations}


def runs(settings: Settings, plan: Plan, kind: str) -> str:
    """The module of ``plan`` that runs the extra step ``kind`` (seed, backup, queue, ...), '' none."""
    return next((m for m, xs in extra(settings, plan).items() if any(x.kind == kind for x in xs)), "")


def seeds(settings: Settings, plan: Plan) -> bool:
    """A seed step follows the disk's apply when there is a dataset to copy."""
    return bool(runs(settings, plan, "seed"))


def restore_snapshot(settings: Settings, plan: Plan) -> str:
    """What an applied module starts from ('' none): 'latest' (its restore step finds the newest)
    or a snapshot's name (the entry's ``snapshot``)."""
    return next((sp.snapshot(settings) for sp in catalogue.specs(settings.arch)
                 if sp.snapshot is not None and plan.applies(sp.name)), "")


def loses_data(settings: Settings, plan: Plan) -> tuple[ModuleSpec, ...]:
    """The data modules ``plan`` destroys with nothing kept first (no snapshot or backup step
    before the destroy): their data is gone for good."""
    steps_of = extra(settings, plan)
    return tuple(sp for sp in catalogue.specs(settings.arch) if sp.holds_data and plan.destroys(sp.name)
                 and not any(x.at == BEFORE for x in steps_of[sp.name]))


def steps(settings: Settings, plan: Plan) -> tuple[Step, ...]:
    """Every step of ``plan``'s pipeline, in the order the build lists them (docs/pipeline.md has
    the anatomy): per operation ``[restore|snapshot|backup|unqueue|identity] → plan → guard → [drain] →
    apply → [resize|queue|attach|seed|publish]``, with ``tpubuild-image`` first, then ``check-capacity``
    when the accelerator is applied (beside the guards; every apply, and a gate step such as
    mig-drain, waits for it), and ``finalize`` last."""
    if not plan.operations:
        return ()
    s = settings
    out: list[Step] = []

    def add(step_id: str, kind: str, module: str, after: list[str]) -> str:
        out.append(Step(step_id, kind, module, tuple(dict.fromkeys(after))))
        return step_id

    tools = add("tpubuild-image", "image", "", [])  # the builder image guard and finalize run in
    # the capacity check: when the accelerator is applied, every guard (so every apply, the first
    # billed step of each module) waits for the TPU quota to be known to hold the slice
    checked = [add("check-capacity", "capacity", "", [tools])] if plan.applies(accelerator_module(s.arch)) else []
    extras = extra(s, plan)
    beside = [f"{m}-{x.kind}" for m, xs in extras.items() for x in xs if x.at == BESIDE]
    placed_by = {sp.name: sp.reads_applied for sp in catalogue.specs(s.arch)}
    disk = next((sp.name for sp in catalogue.specs(s.arch) if any(x.kind == "seed" for x in sp.steps)), "")
    last: dict[str, str] = {}  # module → its last step, which the modules after it wait for
    for op in plan.operations:
        m = op.module
        at = {w: [x.kind for x in extras[m] if x.at == w]
              for w in (BEFORE, EARLY, GATE, AFTER, BESIDE, ASKS)}
        # what waits for the slice to know its zone (a failover: the storage) waits for its
        # acquisition, not for its later steps (which wait for the disk in turn)
        deps = [f"{a}-apply" if m in placed_by.get(a, ()) else last.get(a, f"{a}-apply") for a in op.after]
        # the hosts that attach the shared PD wait for its seed: Compute Engine refuses the
        # seeder's read-write attachment once a host holds the disk read-only. A module with an
        # attach step (the TPU VM, a MIG but in calendar mode) is made beside the seed and only its
        # attach waits; the others (a calendar MIG's template carries the disk) wait at their apply,
        # their plan and guard beside it
        # the slice does not wait for the disk (it reads the disk's state only when there,
        # ``reads_applied``): its attach step does, or its apply where it has none (calendar)
        seeded = [*([f"{disk}-apply"] if plan.applies(disk) and disk not in op.after else []), *beside] \
            if op.op == "apply" and attaches_disk(s, m) else []
        attach_later = "attach" in at[AFTER]
        pre = [add(f"{m}-{k}", k, m, deps) for k in at[BEFORE]]
        early = [add(f"{m}-{k}", k, m, [tools]) for k in at[EARLY]]
        add(f"{m}-plan", "plan", m, [*deps, *pre])
        gate = add(f"{m}-guard", "guard", m, [f"{m}-plan", tools])
        for k in at[GATE]:
            gate = add(f"{m}-{k}", k, m, [gate, *checked])
        # the slice is asked for before its gates' verdicts when its plan only creates (asks_first)
        gate = f"{m}-plan" if asks_first(s, m, op.op) else gate
        last[m] = add(f"{m}-apply", "apply", m, [gate, *checked, *early, *([] if attach_later else seeded)])
        asks = [add(f"{m}-{k}", k, m, [f"{m}-plan", *checked]) for k in at[ASKS]]  # beside the apply
        for k in at[AFTER]:
            last[m] = add(f"{m}-{k}", k, m, [last[m], *asks, *(seeded if k == "attach" else [])])
            asks = []
        for k in at[BESIDE]:
            add(f"{m}-{k}", k, m, [f"{m}-apply"])
    if s.moving_from:  # the old zone's storage is deleted last, after the slice's handover
        move_steps.releases(s, plan, last, {st.id for st in out}, tools, add)
    out = _identity_waits(s, plan, out, last)
    waited = {a for st in out for a in st.after}
    add("finalize", "finalize", "", [st.id for st in out if st.id not in waited])
    return _topological(out)


def asks_first(settings: Settings, module: str, op: str) -> bool:
    """Whether ``module``'s apply runs beside its gates (its guard, and a gate step such as mig-drain)
    instead of after them: the slice's, where it is made or changed. Its apply applies a plan that
    only creates at once: the guard's rules cannot refuse it (builder/planning/guard.py refuses
    deletes, replacements and forgets) and a gate has nothing to act on (no slice exists). Before any
    other plan it waits for the last gate's verdict (``<module>.<gate>.ok`` beside the plan,
    builder/templates/_verdict.sh.j2; :func:`gates`), in builder/templates/_await_guard.sh.j2
    (docs/pipeline.md, "The slice first"). So Google is asked for the chips as soon as the slice is
    planned."""
    spec = catalogue.spec(settings.arch, module)
    return spec is not None and spec.accelerator and not spec.destroy_only and op == "apply"


def gates(settings: Settings, plan: Plan, module: str) -> tuple[str, ...]:
    """The kinds of the steps ``module``'s apply is gated by, in order: its guard, then any gate step
    (mig-drain) the plan has; the last one's verdict is what a slice's apply waits for."""
    return ("guard", *(x.kind for x in extra(settings, plan).get(module, ()) if x.at == GATE))


def _identity_waits(s: Settings, plan: Plan, out: list[Step], last: dict[str, str]) -> list[Step]:
    """A module whose hosts run as another's account (its entry's ``identity_from``) reads nothing
    of that module: its apply waits for that module's ``identity`` step (the account exists before
    any VM runs as it), and its first step after the apply for that module's last step (the roles
    and firewall rules exist before anything reaches the hosts). Where that module is not applied
    (an update scoped to the slice), its account is there already."""
    ids = {st.id for st in out}
    for op in plan.operations:
        spec = catalogue.spec(s.arch, op.module)
        if op.op != "apply" or spec is None:
            continue
        made = [(f"{a}-identity", last[a]) for a in spec.identity_from if plan.applies(a) and f"{a}-identity" in ids]
        if not made:
            continue
        waits = {f"{op.module}-apply": [i for i, _ in made]}
        first_after = next((x.kind for x in catalogue.extra_steps(s, op.module, op.op) if x.at == AFTER), "")
        if first_after:
            waits[f"{op.module}-{first_after}"] = [done for _, done in made]
        out = [replace(st, after=tuple(dict.fromkeys((*st.after, *waits[st.id])))) if st.id in waits else st
               for st in out]
    return out


def _topological(out: list[Step]) -> tuple[Step, ...]:
    """``out`` with every step after those it waits for (Cloud Build's ``waitFor`` names earlier
    steps only), otherwise in the order it was made: the slice's attach waits for the disk's
    apply, which a failover puts after the slice."""
    done: set[str] = set()
    left = list(out)
    ordered: list[Step] = []
    while left:
        ready = next(st for st in left if set(st.after) <= done)
        ordered.append(ready)
        done.add(ready.id)
        left.remove(ready)
    return tuple(ordered)
