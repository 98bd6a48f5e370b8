"""The rendered pipelines' critical paths, in minutes, from one table of step durations.

    python benchmarks/critical_path.py [--actions create,update,destroy] [--values PATH ...]

For every example (examples/*.env and values.env) and action it renders the Cloud Build config
(offline, as `tpubuild render` does), then walks its ``waitFor`` graph with the durations of
:func:`builder.catalogue.durations.duration` (each step kind's minutes, an apply's module's) and prints, now and before the capacity check, the seed change
and the slice first (``before``: the same steps without ``check-capacity``, with the seed held
before the disk users' plan, and with the slice's plan waiting for the apply of every module it
reads the state of, Filestore's and the disk's, as the pipeline was rendered until then):

* ``slice``: minutes until the slice is requested (the start of the accelerator's apply, or of
  its queue step for a queued TPU VM: where Google is first asked for the chips); its ``before``
  is only the slice first undone (:func:`slice_later`), the other columns' the older pipeline;
* ``billed``: minutes until the first billed resource is being made (the start of the first
  apply of a module with prices on its catalogue entry, builder/catalogue/modules.py);
* ``quota``: minutes until the TPU quota is known to hold the slice (the end of
  ``check-capacity``; before, the end of the accelerator's apply, where a refusal showed);
* ``tpu``: minutes until the TPU exists (the end of the accelerator's apply or queue step);
* ``train``: minutes until training can start (the end of every step but finalize; under
  make-before-break with a MODEL, the build starts it itself: the end of ``tpu-resume``, after
  ``tpu-checkpoint`` waited for the checkpoint on the old slice); for a destroy, the build's length
  (the other figures do not apply).

The durations are estimates, documented where a source gives one and otherwise measured or
typical values for the step's container start, image pull and work; they are one table
(builder/catalogue/durations.py, which ``tpubuild plan`` also reads for make-before-break's overlap), so
every figure moves together when one is corrected. Every figure is modelled, none measured: the
graph is the rendered one, the minutes are estimates, and what the model leaves out (a queue's or a
stockout's wait, Terraform's own retries, a step's container pull beyond its kind's figure) is not
counted. On update and auto the slice's apply waits for its gates' verdicts inside the step
(``times(verdicts=True)``); on create it does not, as a plan that only creates is applied at once.
``before`` of the slice column is the slice first undone (:func:`slice_later`), which
``tests/unit/test_critical_path.py`` pins to the graphs rendered just before that change
(tests/data/critical_path/); the other columns' ``before`` rewires today's graph as the pipeline was
before the capacity check and the seed change (:func:`before`), which no one commit's goldens hold.
It prints and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.catalogue.durations import duration  # noqa: E402  (step minutes: each kind's, an apply's module's)


def slice_later(config: dict[str, Any], arch: str) -> dict[str, Any]:
    """The same Build as rendered before the slice came first: the slice's plan waits for the
    apply of every module whose state it reads (``reads_applied``: Filestore, the disk; on mig its
    access too, ``identity_from``, whose state it read then), and every guard for
    ``check-capacity`` (the applies waited through them). The modules are those of ``arch``, the
    file's architecture: a module name means another module on each (on mig ``tpu`` is the
    slice's access, which read no storage state; looked up across both, it took the vm slice's
    waits, and every mig figure was 3.0 minutes high)."""
    from builder.catalogue import modules as catalogue

    steps = [dict(st) for st in config["steps"]]
    ids = {st["id"] for st in steps}
    creates = _creates(config)
    for st in steps:
        reads = [sp for sp in catalogue.specs(arch) if st["id"] == f"{sp.name}-plan" and sp.reads_applied]
        if reads and creates:
            read = (*reads[0].reads_applied, *reads[0].identity_from)
            st["waitFor"] = [w for w in st["waitFor"] if w != "-"] + [f"{r}-apply" for r in read if f"{r}-apply" in ids]
            for other in steps:  # a failover made the storage wait for the slice: then it did not
                if other["id"] in {f"{r}-plan" for r in reads[0].reads_applied}:
                    other["waitFor"] = [w for w in other["waitFor"] if w != f"{reads[0].name}-apply"] or ["-"]
        if st["id"].endswith("-guard") and "check-capacity" in ids:
            st["waitFor"] = [*st["waitFor"], "check-capacity"]
    for st in steps:  # a step asking beside the apply (mig-calendar) came after it
        module, kind = st["id"].rsplit("-", 1) if "-" in st["id"] else (st["id"], "")
        if kind not in ("apply", "guard") and f"{module}-plan" in st["waitFor"]:
            st["waitFor"] = [w for w in st["waitFor"] if w != f"{module}-plan"] + [f"{module}-apply"]
    for st in steps:  # the slice's apply waited for its gates (planning.plan.asks_first undone)
        module = st["id"].removesuffix("-apply")
        if st["id"].endswith("-apply") and f"{module}-plan" in st["waitFor"]:
            gated = [g["id"] for g in steps if g["id"] in {f"{module}-{k}" for k in _gate_kinds()}]
            st["waitFor"] = [w for w in st["waitFor"] if w != f"{module}-plan"] + gated[-1:]
    return {**config, "steps": steps}


def _gate_kinds() -> set[str]:
    """The step kinds that gate an apply: the guard, and every catalogue entry's GATE steps
    (builder.planning.plan.gates); the build lists a module's gates in their order."""
    from builder.catalogue import modules as catalogue
    from builder.catalogue.module_parts import GATE

    return {"guard", *(x.kind for sp in catalogue.CATALOGUE for x in sp.steps if x.at == GATE)}


def before(config: dict[str, Any], arch: str) -> dict[str, Any]:
    """The same Build as rendered before the capacity check and the seed change: no
    ``check-capacity``, and the seed held at the disk users' plan instead of their apply."""
    steps = [dict(st) for st in slice_later(config, arch)["steps"] if st["id"] != "check-capacity"]
    for st in steps:
        wait = [w for w in st["waitFor"] if w != "check-capacity"] or ["-"]
        seeds = [w for w in wait if w.endswith("-seed")]
        if st["id"].rsplit("-", 1)[-1] in ("apply", "attach") and seeds:  # then: the hosts' plan waited
            wait = [w for w in wait if w not in seeds]
            plan = next(p for p in steps if p["id"] == st["id"].rsplit("-", 1)[0] + "-plan")
            plan["waitFor"] = [w for w in plan["waitFor"] if w != "-"] + seeds
        st["waitFor"] = wait
    return {**config, "steps": steps}


def times(config: dict[str, Any], settings: Any, *, verdicts: bool = False) -> dict[str, tuple[float, float]]:
    """step id → (start, end) in minutes, every step starting when all it waits for have ended.

    ``verdicts``: the applies also wait for their module's gates' verdicts inside the step (the slice's
    apply runs beside its guard, ``planning.plan.asks_first``, and applies at once only a plan that
    only creates: on an update or auto the model takes the wait, the worst case; on a create none)."""
    out: dict[str, tuple[float, float]] = {}
    by_id = {st["id"]: st for st in config["steps"]}
    gates = {f"-{k}" for k in _gate_kinds()}

    def waits(st: dict[str, Any]) -> list[str]:
        wait = [w for w in st["waitFor"] if w != "-"]
        if verdicts and st["id"].endswith("-apply"):
            module = st["id"].removesuffix("-apply")
            wait += [g for g in by_id if g.startswith(f"{module}-") and g[len(module):] in gates]
        return wait

    def visit(sid: str) -> tuple[float, float]:  # in the order of waitFor (a rewired Build is not in list order)
        if sid not in out:
            st = by_id[sid]
            start = max((visit(w)[1] for w in waits(st)), default=0.0)
            # the same file planned against itself replaces no slice: make-before-break's steps only look
            # (`tpubuild plan --applied OLD` prints what a replacing update adds: builder/planning/replacement.py)
            out[sid] = (start, start + duration(st, settings, replacing=False))
        return out[sid]

    for st in config["steps"]:
        visit(st["id"])
    return out


def figures(config: dict[str, Any], settings: Any, *, verdicts: bool = False) -> dict[str, float | None]:
    from builder.catalogue import modules as catalogue

    t = times(config, settings, verdicts=verdicts)
    end = max(e for _s, e in t.values())
    if not any(st["id"] == "check-capacity" for st in config["steps"]) and not _creates(config):
        return {"slice": None, "billed": None, "quota": None, "tpu": None, "train": end}  # a destroy: only its length
    billed = [t[f"{sp.name}-apply"][0] for sp in catalogue.specs(settings.arch) if sp.prices and f"{sp.name}-apply" in t]
    acc = catalogue.accelerator_module(settings.arch)
    made = [t[i][1] for i in (f"{acc}-apply", f"{acc}-queue") if i in t]
    # where Google is first asked for the chips: a queued TPU VM's queue step, a calendar request's
    # step where gcloud makes it (mig-calendar), else the slice's apply
    asks = [f"{acc}-{k}" for k in ("queue", "calendar", "apply") if f"{acc}-{k}" in t]
    asked = t[asks[0]][0] if asks else None
    from builder.planning.capacity import Need, held, need

    # the check knows the quota only where tpubuild knows which one (it warns and passes elsewhere),
    # or the reservation or calendar-mode request a mig slice consumes instead
    checked = "check-capacity" in t and (isinstance(need(settings), Need) or held(settings) is not None)
    quota = t["check-capacity"][1] if checked else (max(made) if made else None)
    return {"slice": asked, "billed": min(billed) if billed else None, "quota": quota, "tpu": max(made) if made else None,
            "train": max(end for sid, (_s, end) in t.items() if sid != "finalize")}


def _creates(config: dict[str, Any]) -> bool:
    """Whether the Build applies (a destroy's guards run ``--action destroy``)."""
    return not any("--action destroy" in st.get("args", [""])[-1] for st in config["steps"] if st["id"].endswith("-guard"))


def rows(values: list[Path], actions: list[str]) -> list[tuple[str, str, dict[str, float | None], dict[str, float | None]]]:
    from builder.config import load
    from builder.render.pipeline import render
    from builder.planning.plan import make_plan

    out = []
    for path in values:
        s = load(path)
        for action in actions:
            config = render(s, make_plan(s, action))
            wait = action != "create"  # the verdict wait inside the slice's apply (times)
            old = {**figures(before(config, s.arch), s, verdicts=wait),
                   "slice": figures(slice_later(config, s.arch), s, verdicts=wait)["slice"]}
            out.append((path.name, action, old, figures(config, s, verdicts=wait)))
    return out


def _m(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--actions", default="create,update,destroy")
    ap.add_argument("--values", nargs="*", type=Path,
                    default=[*sorted((REPO / "examples").glob("*.env")), REPO / "values.env"])
    args = ap.parse_args(argv)
    keys = ("slice", "billed", "quota", "tpu", "train")
    print("MODELLED, not measured: minutes summed over each rendered pipeline's waitFor graph from the step kinds' "
          "and modules' estimated minutes (builder/catalogue/durations.py); update and auto count the slice's apply "
          "waiting for its guard's verdict, create does not (docs/pipeline.md, 'The critical path, modelled')")
    print("minutes until: slice = the slice requested, billed = first billed resource, quota = TPU quota known, tpu = TPU made, "
          "train = training can start (before -> now)")
    print(f"{'values':<24} {'action':<8} " + " ".join(f"{k:>14}" for k in keys))
    for name, action, old, new in rows(args.values, args.actions.split(",")):
        print(f"{name:<24} {action:<8} " + " ".join(f"{_m(old[k]) + ' -> ' + _m(new[k]):>14}" for k in keys))
    print(FLOOR)
    return 0


#: How ``slice`` is reached (docs/pipeline.md, "The slice first").
FLOOR = ("slice: the slice's apply (and mig-calendar's request) waits for the slice's plan (terraform init and plan, "
         "~1.0) and the capacity check (~1.5 with the builder image), not for its guard: a plan that only creates is "
         "applied at once (the guard cannot refuse one), any other waits in the step for the guard's verdict. On mig "
         "the slice is planned without its access module's state and its apply waits for tpu-identity, which makes "
         "the hosts' service account first (~1.0).")


if __name__ == "__main__":
    raise SystemExit(main())
