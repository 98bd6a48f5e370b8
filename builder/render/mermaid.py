"""The pipeline as a picture: a rendered Cloud Build config's step graph as a Mermaid flowchart
(``tpubuild render --format mermaid``; ``plan --format markdown`` puts it beside the money).

Drawn from the Build itself, so it cannot drift from what runs: one node per step, an edge
``a --> b`` exactly where step ``b``'s ``waitFor`` names ``a`` (a step that waits for ``-`` starts
with the build and has no edge in), the steps of one plan module inside a ``subgraph`` named after
it, the build-wide ones (``tpubuild-image``, ``check-capacity``, ``finalize``) outside. Each step's
role is marked by its shape and class (docs/pipeline.md, "The pipeline as a picture"):

* the slice's request (:func:`slice_request`): where Google is first asked for the chips;
* a guard (``<module>-guard``), which reads the saved plan before it is applied;
* a gate: ``check-capacity`` (no apply starts before it passes) and a module's gate steps
  (builder.catalogue.module_parts ``GATE``: ``mig-drain``);
* a make-before-break step (builder.catalogue.module_parts ``MOVES``: prepare, swap, checkpoint,
  release, resume).

Node ids are the step ids with ``-`` made ``_`` (the label keeps the step id).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder.catalogue import modules as catalogue
from builder.catalogue.module_parts import GATE, MOVES
from builder.planning.plan import asks_first, extra, gates

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.planning.plan import Plan

#: role → (shape's opening, closing, the class's style, the words the label adds).
ROLES: dict[str, tuple[str, str, str, str]] = {
    "request": ('(["', '"])', "fill:#fde68a,stroke:#b45309,stroke-width:3px", "the slice's request"),
    "guard": ('{{"', '"}}', "fill:#dbeafe,stroke:#1d4ed8", ""),
    "gate": ('{{"', '"}}', "fill:#fee2e2,stroke:#b91c1c", "gate"),
    "mbb": ('[/"', '"/]', "fill:#dcfce7,stroke:#15803d", "make-before-break"),
}
#: Where Google is asked for the chips, first match wins: a queued request, a calendar-mode request
#: made by gcloud, else the accelerator module's apply.
REQUEST_KINDS = ("queue", "calendar", "apply")


def slice_request(settings: Settings, plan: Plan) -> str | None:
    """The id of the step that asks Google for the slice, or None when the plan makes none (a
    destroy, or an update that leaves the accelerator alone)."""
    acc = catalogue.accelerator_module(settings.arch)
    op = plan.get(acc)
    if op is None or op.op != "apply":
        return None
    ids = {st.id for st in plan.steps}
    return next((f"{acc}-{k}" for k in REQUEST_KINDS if f"{acc}-{k}" in ids), None)


def roles(settings: Settings, plan: Plan) -> dict[str, str]:
    """Step id → its role (:data:`ROLES`), for the steps that have one."""
    gate_kinds = {x.kind for steps in extra(settings, plan).values() for x in steps if x.at == GATE}
    move_kinds = {x.kind for x in MOVES}
    out: dict[str, str] = {}
    for st in plan.steps:
        if st.kind == "guard":
            out[st.id] = "guard"
        elif st.kind == "capacity" or st.kind in gate_kinds:
            out[st.id] = "gate"
        elif st.kind in move_kinds:
            out[st.id] = "mbb"
    request = slice_request(settings, plan)
    if request is not None:
        out[request] = "request"
    return out


def verdicts(settings: Settings, plan: Plan, config: dict[str, Any]) -> list[tuple[str, str]]:
    """(last gate, apply) of each apply that waits for its gate's verdict inside its step, not in ``waitFor``."""
    waits = {st["id"]: st["waitFor"] for st in config["steps"]}
    out = []
    for op in plan.operations:
        apply, gate = f"{op.module}-apply", f"{op.module}-{gates(settings, plan, op.module)[-1]}"
        if asks_first(settings, op.module, op.op) and apply in waits and gate in waits and gate not in waits[apply]:
            out.append((gate, apply))
    return out


def node_id(step_id: str) -> str:
    return step_id.replace("-", "_")


def flowchart(settings: Settings, plan: Plan, config: dict[str, Any]) -> str:
    """The Mermaid flowchart of ``config`` (what ``builder.render.pipeline.render`` made of ``plan``)."""
    marked = roles(settings, plan)
    module_of = {st.id: st.module for st in plan.steps}
    steps = config["steps"]
    ids = [st["id"] for st in steps]
    if len({node_id(i) for i in ids}) != len(ids):  # a bug here: two steps would be one node
        raise AssertionError(f"step ids collide as Mermaid ids: {ids}")

    def node(step_id: str) -> str:
        role = marked.get(step_id)
        if role is None:
            return f'{node_id(step_id)}["{step_id}"]'
        start, end, _style, words = ROLES[role]
        return f"{node_id(step_id)}{start}{step_id}{'<br/>' + words if words else ''}{end}"

    lines = ["flowchart TD",
             f"  %% tpubuild {plan.action} of {settings.env_name} ({settings.arch}, {settings.accelerator_type}): "
             "one node per step, an edge per waitFor"]
    modules = list(dict.fromkeys(module_of.get(i, "") for i in ids))
    for module in modules:
        own = [i for i in ids if module_of.get(i, "") == module]
        if not module:
            lines += [f"  {node(i)}" for i in own]
            continue
        lines.append(f'  subgraph mod_{module}["{module}"]')
        lines += [f"    {node(i)}" for i in own]
        lines.append("  end")
    for st in steps:
        lines += [f"  {node_id(w)} --> {node_id(st['id'])}" for w in st["waitFor"] if w != "-"]
    lines += [f"  {node_id(gate)} -. verdict .-> {node_id(apply)}" for gate, apply in verdicts(settings, plan, config)]
    for role, (_start, _end, style, _words) in ROLES.items():
        members = [node_id(i) for i in ids if marked.get(i) == role]
        if members:
            lines += [f"  classDef {role} {style}", f"  class {','.join(members)} {role}"]
    return "\n".join(lines) + "\n"

