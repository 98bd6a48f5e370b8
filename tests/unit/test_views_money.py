"""Money, told the same by every view: for every shipped values file (values.env, examples/*.env)
× a table of edits (resize up and down, provisioning, TTL: the edits of
tests/unit/test_views_agree.py, which checks the plan's own records against each other), the user's
commands, run as the user runs them (``tpubuild plan`` in text and ``--format json``, ``render``,
``train MODEL --dry-run``, with ``--applied FILE`` holding the file before the edit), agree on the
hosts, the VM count and shape of the slice, the hourly cost, the totals and the make-before-break
overlap. The update applies the edit; the destroy takes what was applied (the file before it).

:data:`MONEY` is the one place that says how each money figure of the plan's JSON is printed in its
text: a new figure (a committed total, a flex-start maximum, the cost until the TTL, a destroy's
monthly tail, an overlap bound) is one row there, and every case checks it from then on. A total
of ``cost.totals`` (a list of records, builder/planning/money.py) is addressed by its ``kind``:
``cost.totals.calendar_committed.total``. A row may be a pattern where the text puts a bound
("at most", "at least", "about") or a ``~`` between the words and the figure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from builder.catalogue.cost import bound_prefix
from builder.catalogue.durations import duration
from builder.catalogue.modules import accelerator_module, hosts_module
from tests.conftest import REPO, rewrite_env
from tests.unit.test_views_agree import EDITS, FILES, _load

#: The shipped files (the legacy node file is not shipped: test_views_agree covers its destroy).
SHIPPED = [f for f in FILES if f.parent.name != "data"]
#: The edits whose money changes (test_views_agree.EDITS holds more).
MONEY_EDITS = ("resize up", "resize down", "provisioning", "ttl")

#: JSON field of ``plan --format json`` (a dotted path) → the text ``plan`` prints for its value.
#: A field absent from the JSON, or null, is not checked; a new money figure is one row here.
MONEY: dict[str, Callable[[Any], "str | re.Pattern[str]"]] = {
    "cost.change": lambda v: f"Cost per hour: {v}",
    "cost.after.total": lambda v: v,
    "cost.before.total": lambda v: v,
    "cost.after.hourly_known": lambda v: f"${v:,.2f}/h",
    "cost.before.hourly_known": lambda v: f"${v:,.2f}/h",
    "cost.after.bounds": lambda v: "\n" + "".join(f"  {b}\n" for b in v),  # each stand-in's reason, said once
    "cost.totals": lambda v: "\nTotals:\n" + "".join(f"  {t['text']}\n" for t in v) if v else "",
    "replacement.overlap_minutes": lambda v: f"together for ~{v:.0f} min",
    "replacement.overlap_minutes_max": lambda v: f" min (at most {v:.0f} min, the steps' timeouts)",
    "replacement.overlap_cost": lambda v: f": ~${v:,.2f}, at most $",
    "replacement.overlap_cost_max": lambda v: f", at most ${v:,.2f} (",
    "replacement.old_hourly": lambda v: f" at ${v:,.2f}/h",
    "replacement.new_hourly": lambda v: f" at ${v:,.2f}/h, which stands idle until the release",
    "replacement.bound": lambda v: "the figures are " + {"at most": "ceilings", "at least": "floors",
                                                         "stand-in": "neither"}[v],
    "ttl.hours": lambda v: f"destroyed {v} h after it is created",
    # the totals (builder/planning/money.py): a rate × hours, or a monthly tail
    **{f"cost.totals.{kind}.{field}": shown for kind in ("calendar_committed", "calendar_before_window", "flex_max",
                                                               "calendar_after_destroy")
       for field, shown in (("total", lambda v: _usd(v, " (")), ("hourly", lambda v: f"${v:,.2f}/h × "),
                            ("hours", lambda v: re.compile(rf"× (\d+ days \()?{v:,.0f} h\)")))},
    "cost.totals.until_ttl.total": lambda v: _usd(v, " for the first "),
    "cost.totals.until_ttl.hourly": lambda v: f"${v:,.2f}/h), then ",
    "cost.totals.until_ttl.hours": lambda v: re.compile(rf"for the first (\d+ days \()?{v:,.0f} h\b"),
    "cost.totals.until_ttl.worst_total": lambda v: _usd(v, " for those "),
    "cost.totals.monthly_after_destroy.total": lambda v: (re.compile("every month: " + _usd(v, " (the ").pattern)
                                                          if v else "every month: the buckets "),
    "cost.totals.checkpoint_copy.total": lambda v: (re.compile("checkpoints in the bucket, every month: "
                                                               + _usd(v, " (the newest copy").pattern)
                                                    if v else "checkpoints in the bucket, every month: the newest"),
}
#: The facts of the slice: JSON field → the text of the plan's header.
SHAPE: dict[str, Callable[[Any], str]] = {
    "hosts": lambda v: f"\n  hosts:        {v} (",
    "accelerator_type": lambda v: f"\n  accelerator:  {v} (",
    "chips": lambda v: f", {v} chips)",
    "slice.vms": lambda v: f"\n  slice:        {v} x ",
    "slice.machine_type": lambda v: f" x {v}, ",
}


def _usd(value: float, then: str = "") -> re.Pattern[str]:
    """A figure as the text prints it: a bound word and ``~`` may stand before it."""
    return re.compile(rf"(at most |at least |about )?~?\${value:,.2f}{re.escape(then)}")


def _field(info: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(info, list):  # a list of records, each named by its kind (cost.totals)
            info = next((r for r in info if isinstance(r, dict) and r.get("kind") == part), None)
            if info is None:
                return None
            continue
        if not isinstance(info, dict) or part not in info:
            return None
        info = info[part]
    return info


def _told(info: dict[str, Any], text: str, table: dict[str, Callable[[Any], Any]], story: str) -> int:
    """Every field of ``table`` that the JSON holds is printed as the table says; how many were."""
    seen = 0
    for path, shown in table.items():
        value = _field(info, path)
        if value is not None:
            want = shown(value)
            if isinstance(want, re.Pattern):
                assert want.search(text), (story, path, want.pattern)
            else:
                assert want in text, (story, path, want)
            seen += 1
    return seen


def _sums(info: dict[str, Any], text: str, story: str) -> None:
    """The money records add up, each total's line states its own figure with its own bound, and
    each kept thing of a destroy is printed with its monthly figure."""
    for est in (info["cost"]["before"], info["cost"]["after"]):
        if est is None:
            continue
        assert est["total"].startswith(bound_prefix(est["bound"] or "")), (story, est["total"], est["bound"])
        assert est["bounds"] == list(dict.fromkeys(f"{i['bound']}: {i['bound_why']}" for i in est["items"]
                                                   if i["bound"] and i["hourly"] is not None)), story
    for t in info["cost"]["totals"]:
        assert f"\n  {t['text']}\n" in text, (story, t["kind"])
        assert re.search(rf"^{re.escape(bound_prefix(t['bound']))}~?\${t['total']:,.2f}\b",
                         t["text"].rsplit(": ", 1)[1] if t["per"] == "hours" else
                         t["text"].split("every month: ", 1)[1]) or not t["total"], (story, t)
        if t["per"] == "hours":
            assert t["total"] == pytest.approx(t["hourly"] * t["hours"], abs=0.01), (story, t)
        else:
            priced = [i for i in t["items"] if i["monthly"] is not None]
            assert t["total"] == pytest.approx(sum(i["monthly"] for i in priced), abs=0.01), (story, t)
            for i in t["items"]:
                figure = "" if i["monthly"] is None else f" {'~' if i['approximate'] else ''}${i['monthly']:,.2f}"
                assert f"{i['what']}{figure} (" in t["text"] or f"{i['what']}: {i['how']}" in t["text"], (story, i)


@lru_cache(maxsize=None)
def _cases() -> list[tuple[Path, str, str]]:
    out = []
    for path in SHIPPED:
        text = path.read_text(encoding="utf-8")
        for edit in MONEY_EDITS:
            new = EDITS[edit](text)
            if new is not None and _load(new, str(path)) is not None:
                out += [(path, edit, "update"), (path, edit, "destroy")]
    return out


def _run(cli: Callable[..., tuple[int, str, str]], *args: Any) -> str:
    code, out, err = cli(*args)
    assert code == 0, (args, err)
    return out


def _rendered(cli: Callable[..., tuple[int, str, str]], *args: Any) -> list[dict[str, Any]]:
    return json.loads(_run(cli, "render", *args, "--format", "json"))["steps"]


@pytest.mark.parametrize("path,edit,action", _cases(), ids=[f"{p.name}-{e}-{a}" for p, e, a in _cases()])
def test_money_views_agree(path: Path, edit: str, action: str, tmp_path: Path, cli) -> None:
    text = path.read_text(encoding="utf-8")
    (tmp_path / "applied.env").write_text(text)
    (tmp_path / "values.env").write_text(EDITS[edit](text) or "")
    old, new = _load(text, "applied.env"), _load(EDITS[edit](text) or "", "values.env")
    story = f"{path.name} {edit} {action}"
    args = ("--values", tmp_path / "values.env", "--action", action, "--applied", tmp_path / "applied.env")
    said = _run(cli, "plan", *args)
    info = json.loads(_run(cli, "plan", *args, "--format", "json"))
    ba, accel, hosts = info["before_after"], accelerator_module(new.arch), hosts_module(new.arch)

    # the plan's text prints every figure its JSON holds, and the JSON's figures add up
    assert _told(info, said, MONEY, story) >= 2, story
    _sums(info, said, story)
    for item in info["cost"]["after"]["items"]:
        shown = ("price unknown" if item["hourly"] is None else
                 f"{bound_prefix(item['bound'])}{'~' if item['approximate'] else ''}${item['hourly']:,.2f}/h")
        assert f"  {item['what']}: {shown}" in said, (story, item)
    known = [i["hourly"] for i in info["cost"]["after"]["items"] if i["hourly"] is not None]
    assert info["cost"]["after"]["hourly_known"] == pytest.approx(sum(known), abs=0.01), story
    if ba["hosts_before"] != ba["hosts_after"]:
        assert f"  hosts: {ba['hosts_before']} → {ba['hosts_after']}" in said, story

    # the slice the plan describes is the one it acts on: the edited file's on an update, the
    # applied one (what really goes) on a destroy, with no word of how a change would be made
    subject = old if action == "destroy" else new
    assert _told(info, said, SHAPE, story) == (5 if new.arch == "mig" else 3), story
    assert (info["hosts"], info["accelerator_type"]) == (subject.hosts, subject.accelerator_type), story
    if subject.arch == "mig":
        assert (info["slice"]["vms"], info["slice"]["topology"]) == (subject.mig_shape.vms,
                                                                     subject.mig_shape.topology), story
    tpu_items = [i for i in info["cost"]["after"]["items"] + (info["cost"]["before"] or {"items": []})["items"]
                 if i["module"] == accel]
    assert all(i["what"].startswith(f"TPU {old.accelerator_type} ") or i["what"].startswith(
        f"TPU {new.accelerator_type} ") for i in tpu_items), (story, tpu_items)
    if action == "destroy":
        assert (ba["hosts_before"], ba["hosts_after"]) == (old.hosts, 0), story
        assert info["cost"]["after"]["items"] == [] and info["replacement"] is None, story
        (op,) = [o for o in info["operations"] if o["module"] == hosts]
        assert "make-before-break" not in op["what"] and "drained first" not in op["what"], (story, op)
        if old.arch == "mig":
            assert f"({old.mig_shape.vms} x {old.mig_shape.machine_type}, " in op["what"], (story, op)
        return
    assert (ba["hosts_before"], ba["hosts_after"]) == (old.hosts, new.hosts), story

    # render: the same steps; the slice it makes is the plan's; the overlap is its steps' minutes
    steps = _rendered(cli, *args)
    assert [st["id"] for st in steps] == [st["id"] for st in info["steps"]], story
    mine = {st["id"]: " ".join(st.get("args", [])) for st in steps}
    if f"{accel}-resize" in mine:  # mig: the group is resized to (or waits for) the slice's VMs
        counts = {int(n) for n in re.findall(r"\b(\d+) VMs\b", mine[f"{accel}-resize"])}
        assert counts == {info["slice"]["vms"]}, (story, counts)
    assert any(new.accelerator_type in script for sid, script in mine.items() if sid.startswith(f"{accel}-")), story
    rep = info["replacement"] or {}
    if rep.get("overlap_minutes") is not None:
        ids = [st["id"] for st in steps if st["id"].startswith(f"{accel}-")]
        billed = ids[ids.index(f"{accel}-apply"):ids.index(f"{accel}-release") + 1]
        assert rep["overlap_minutes"] == sum(duration({"id": sid}, new) for sid in billed), story
        # the rendered timeouts bound those steps: the expected overlap fits in them, and the upper
        # bound is exactly what they allow
        bound_s = sum(int(st["timeout"].rstrip("s")) for st in steps if st["id"] in billed)
        assert rep["overlap_minutes"] * 60 <= bound_s, (story, bound_s)
        assert rep["overlap_minutes_max"] * 60 == bound_s, (story, rep["overlap_minutes_max"], bound_s)
        # both slices for those minutes: the running one at the applied values' price (the cost
        # before), the new one at the price the cost after holds for it
        new_chips = [i["hourly"] for i in info["cost"]["after"]["items"] if i["module"] == accel]
        assert [rep["new_hourly"]] == [pytest.approx(h, abs=1e-4) for h in new_chips], (story, rep)
        if rep["overlap_cost"] is not None:
            old_chips = [i["hourly"] for i in info["cost"]["before"]["items"] if i["module"] == accel]
            assert [rep["old_hourly"]] == [pytest.approx(h, abs=1e-4) for h in old_chips], (story, rep)
            both = rep["old_hourly"] + rep["new_hourly"]
            assert rep["overlap_cost"] == pytest.approx(both * rep["overlap_minutes"] / 60, abs=0.01), story
            assert rep["overlap_cost_max"] == pytest.approx(both * rep["overlap_minutes_max"] / 60, abs=0.01), story

    # train --dry-run: the hosts and devices the plan makes (a file with no MODEL trains nothing)
    if not new.model:
        return
    launch = _run(cli, "train", new.model, "--dry-run", "--values", tmp_path / "values.env")
    head = re.search(r"^# tpubuild train \S+: (\S+) \((\w+)\), (\d+) host\(s\), (\d+) (?:devices|chips);", launch, re.M)
    assert head is not None, (story, launch[:200])
    assert (head[1], head[2], int(head[3])) == (info["accelerator_type"], info["arch"], info["hosts"]), story
    if new.arch == "mig":
        assert f"lists ${{#TPUBUILD_HOSTS[@]}} of {info['slice']['vms']} VMs" in launch, story


def _figures(value: Any, path: str) -> set[str]:
    """The dotted paths of the numbers under ``value``: in a list of records named by their kind
    (the totals) each record's by its kind; other lists (the cost items, a tail's items, which
    the cases check line by line) excluded."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in _figures(v, f"{path}.{k}")}
    if isinstance(value, list) and all(isinstance(r, dict) and "kind" in r for r in value):
        return {p for r in value for p in _figures(r, f"{path}.{r['kind']}")}
    return {path} if isinstance(value, (int, float)) and not isinstance(value, bool) else set()


#: Plans that hold every kind of money figure: a make-before-break resize with a TTL, calendar
#: mode (a committed window), flex-start (a run limit), a destroy (what keeps billing).
FIGURE_PLANS = (("values.env", "update", {"TPU_ACCELERATOR_TYPE": "v3-128", "ENV_TTL_HOURS": "8"}),
                ("examples/mig-v6e-32-calendar.env", "create", {}), ("examples/mig-v6e-16-flex.env", "create", {}),
                ("values.env", "destroy", {}), ("examples/mig-v6e-32-calendar.env", "destroy", {}))


@pytest.mark.parametrize("name,action,edits", FIGURE_PLANS, ids=[f"{n}-{a}" for n, a, _ in FIGURE_PLANS])
def test_every_money_figure_is_a_row_of_the_table(cli, tmp_path: Path, name: str, action: str,
                                                   edits: dict[str, str]) -> None:
    """Every number the plan's JSON holds under ``cost`` (before, after and any total beside them),
    ``replacement`` and ``ttl`` is a row of :data:`MONEY`, so the property test checks that the
    text prints it: a money figure added to the JSON without a row fails here."""
    text = (REPO / name).read_text(encoding="utf-8")
    (tmp_path / "applied.env").write_text(text)
    (tmp_path / "values.env").write_text(rewrite_env(text, **edits))
    info = json.loads(_run(cli, "plan", "--values", tmp_path / "values.env", "--action", action,
                           "--applied", tmp_path / "applied.env", "--format", "json"))
    figures = set()
    for key in ("cost", "replacement", "ttl"):
        if isinstance(info.get(key), dict):
            figures |= {p[1:] for p in _figures({k: v for k, v in info[key].items() if k != "prices"}, f".{key}")}
    assert figures, info.keys()
    assert figures <= set(MONEY), sorted(figures - set(MONEY))
    said = _run(cli, "plan", "--values", tmp_path / "values.env", "--action", action,
                "--applied", tmp_path / "applied.env")
    assert _told(info, said, MONEY, name) >= len(figures), name
    _sums(info, said, name)
