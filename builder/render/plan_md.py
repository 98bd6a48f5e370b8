"""``tpubuild plan --format markdown``: what a reviewer of a pull request reads (the GitOps plan
build keeps it as ``plan.md`` beside plan.txt and plan.json; builder/inputs/gitops.py): the
action, the money as a table (each priced resource, the change per hour, what is committed), and
the pipeline the merge would run as a Mermaid picture (builder/render/mermaid.py), which GitHub
and most markdown viewers draw.
"""

from __future__ import annotations

from typing import Any

from builder.catalogue.cost import Item, money


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def money_table(cost: dict[str, Any], replacement: dict[str, Any] | None = None) -> list[str]:
    """The priced resources after the change, one row each, the change per hour, and what a
    make-before-break replacement bills while both slices run; then the prices' provenance and
    what is committed (the "Totals" of the text plan), one bullet each."""
    out = ["| module | resource | cost |", "|---|---|---|"]
    for raw in cost["after"]["items"]:
        item = Item(**raw)
        out.append(f"| {item.module} | {_cell(item.what)} | {_cell(item.text().removeprefix(item.what + ': '))} |")
    out.append(f"| **all** | per hour, before → after | **{_cell(cost['change'])}** |")
    if replacement and replacement.get("overlap_cost") is not None:
        r = replacement
        out.append(f"| {r['module']} | both slices during the replacement: ~{r['overlap_minutes']:.0f} min, at most "
                   f"{r['overlap_minutes_max']:.0f} min | ~{money(r['overlap_cost'])}, at most "
                   f"{money(r['overlap_cost_max'])} |")
    out.append("")
    prices = cost["prices"]
    notes = [*cost["after"]["bounds"], *([cost["candidates"]["text"]] if "candidates" in cost else []),
             f"list prices in {prices['currency']} from {prices['file']}, retrieved {prices['retrieved']}; "
             "your bill may differ"]
    if cost["after"]["unconfirmed"]:
        notes.append(f"(unconfirmed): not found in Google's price pages when last checked ({prices['checked']}); "
                     f"check {', '.join(prices['check_at'])} before relying on it")
    notes += [t["text"] for t in cost["totals"]]
    return out + [f"- {n}" for n in notes]


def markdown(info: dict[str, Any], picture: str | None) -> str:
    """``plan``'s ``info`` (builder/planning/describe.py) and the pipeline's picture (None: no
    pipeline runs) as one markdown page."""
    where = f"{info['project_id']}/{info['zone']}"
    out = [f"# tpubuild plan: {info['action']} {info['env']} in {where}", ""]
    changed = [f"{what}: {', '.join(info[what])}" for what in ("created", "changed", "destroyed") if info.get(what)]
    out += [f"- {line}" for line in changed or ["nothing changes"]]
    if "auto" in info:
        out.append(f"- {info['auto']['summary']}")
    out += [f"- **{w}**" for w in info.get("warnings", [])]
    if "cost" in info:
        out += ["", "## Cost", "", *money_table(info["cost"], info.get("replacement"))]
    if info.get("notes"):
        out += ["", "## Notes", "", *[f"- {n}" for n in info["notes"]]]
    out += ["", "## The pipeline", ""]
    if picture is None:
        out.append("No pipeline runs.")
    else:
        out += ["Each step of the Cloud Build pipeline, grouped by module; an arrow is a `waitFor`, a dotted one a "
                "verdict the slice's apply waits for inside its step. Rounded: where Google is asked for the "
                "slice; hexagons: guards and gates; slanted: make-before-break (docs/pipeline.md, "
                "\"The pipeline as a picture\").", "", "```mermaid", picture.rstrip("\n"), "```"]
    return "\n".join(out) + "\n"
