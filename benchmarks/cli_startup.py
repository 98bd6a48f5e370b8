"""CLI start-up cost: `tpubuild render`, `plan` and `validate` against `python -c pass`, side by side.

    python benchmarks/cli_startup.py [--runs N] [--values PATH ...] [--examples] [--against CHECKOUT] [--markdown]

Every command runs as a fresh subprocess, N rounds, each run of a tpubuild command right after a
run of `python -c pass` (a pair), so machine noise hits both alike; each command's median wall
time, the median of its pairs' ratios (wall, and CPU: the child's user + system time, which a
machine loaded by other work disturbs less) and its aim are printed side by side. The aims:
`validate` and `plan` 2x, `render` 4.5x (it renders jinja2 templates; see the reference row).
`--values` (repeatable; default the shipped values.env) picks the files, `--examples` adds every
examples/*.env. `--against` names a second checkout (e.g. `git worktree add /tmp/base 3365dae`):
its commands run in the same rounds, interleaved with this tree's, so before and after come from
one run, and `now / before` is the median over the rounds of this tree's time over the other's.
A checkout's code is picked by PYTHONPATH, with the console script of this interpreter
(`tpubuild`, as pip installs it; `python -m builder` where there is none). The spread
(interquartile range of the baseline, in % of its median) says how noisy the machine was.
`--markdown` prints the table as docs/startup.md holds it, with the date. A reference row,
`python -c 'import jinja2'`, shows the floor under `render`: it renders jinja2 templates, so it
pays that import on top of what `plan` does.

What keeps the ratios low: the CLI imports only the file of the verb it runs
(builder/commands/verbs/<name>.py), no offline verb loads the cloud edge or a Google client, and
each verb loads only its budget of modules (tests/unit/test_import_budget.py fails on a module
outside it, naming the chain that imported it); docs/startup.md says where the rest goes.
Commands run with bytecode caching on (PYTHONDONTWRITEBYTECODE is dropped for them), as an
installed tpubuild does: pip compiles the package at install. This is a measurement, not a test:
it prints and exits 0.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The aim of each verb: its time over `python -c pass`'s (issue: validate and plan 2x, render 4.5x).
AIMS: dict[str, float] = {"render": 4.5, "plan": 2.0, "validate": 2.0}
BASELINE = "python -c pass"
#: The reference row: importing jinja2 and nothing else (no aim: it is not a command).
JINJA2 = "(reference) python -c 'import jinja2'"
VERBS: tuple[tuple[str, ...], ...] = (("render", "--action", "create"), ("plan", "--action", "create"),
                                      ("validate",))


@dataclass(frozen=True)
class Case:
    label: str
    cmd: list[str]
    env: dict[str, str]
    #: (verb and values file, checkout tag): which rows are the same command in two checkouts
    key: str = ""
    tag: str = ""


@dataclass
class Times:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    #: this run over the baseline run just before it (wall, CPU)
    ratio: list[float] = field(default_factory=list)
    cpu_ratio: list[float] = field(default_factory=list)


def tpubuild_command() -> list[str]:
    exe = Path(sys.executable).with_name("tpubuild")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("tpubuild")
    return [found] if found else [sys.executable, "-m", "builder"]


def checkout_env(checkout: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU is the child's user + system time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def spread(times: list[float]) -> float:
    """Interquartile range in % of the median."""
    q = statistics.quantiles(times, n=4)
    return (q[2] - q[0]) / statistics.median(times) * 100


def cases(files: list[Path], checkouts: list[tuple[str, Path]]) -> list[Case]:
    """The reference row, then each verb and file in every checkout, side by side (interleaved)."""
    out = [Case(JINJA2, [sys.executable, "-c", "import jinja2"], checkout_env(None))]
    for values in files:
        for verb in VERBS:
            for tag, checkout in checkouts:
                label = f"{' '.join(verb)} {values.name}" + (f" [{tag}]" if len(checkouts) > 1 else "")
                cmd = [*tpubuild_command(), verb[0], "--values", str(values), *verb[1:]]
                out.append(Case(label, cmd, checkout_env(checkout), f"{' '.join(verb)} {values.name}", tag))
    return out


def measure(all_cases: list[Case], runs: int) -> tuple[Times, dict[str, Times]]:
    """N rounds; each command right after a run of the baseline (a pair). The order within a round
    reverses every other round, so a drift of the machine's speed favours no checkout."""
    baseline = [sys.executable, "-c", "pass"]
    base_env = checkout_env(None)
    for case in all_cases:  # warm the page cache and the bytecode caches
        timed(case.cmd, case.env)
    base, times = Times(), {c.label: Times() for c in all_cases}
    for round_no in range(runs):
        for case in (all_cases if round_no % 2 == 0 else all_cases[::-1]):
            b_wall, b_cpu = timed(baseline, base_env)
            wall, cpu = timed(case.cmd, case.env)
            base.wall.append(b_wall)
            base.cpu.append(b_cpu)
            t = times[case.label]
            t.wall.append(wall)
            t.cpu.append(cpu)
            t.ratio.append(wall / b_wall)
            t.cpu_ratio.append(cpu / b_cpu if b_cpu else float("nan"))
    return base, times


def aim_of(label: str) -> float | None:
    return AIMS.get(label.split()[0]) if label != JINJA2 else None


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def now_over_before(all_cases: list[Case], times: dict[str, Times]) -> dict[str, tuple[float, float]]:
    """key -> (wall, CPU): the median over the rounds of this checkout's run over the other's."""
    out = {}
    for key in dict.fromkeys(c.key for c in all_cases if c.key):
        this, other = (next(c.label for c in all_cases if c.key == key and c.tag == t) for t in ("this", "against"))
        a, b = times[this], times[other]
        out[key] = (med([x / y for x, y in zip(a.wall, b.wall)]), med([x / y for x, y in zip(a.cpu, b.cpu)]))
    return out


def text_table(all_cases: list[Case], base: Times, times: dict[str, Times], runs: int) -> list[str]:
    lines = [f"{'command':<48} {'median':>9} {'min':>9} {'wall':>7} {'cpu':>7}  aim   rounds={runs}",
             f"{BASELINE:<48} {med(base.wall) * 1000:>7.1f}ms {min(base.wall) * 1000:>7.1f}ms {1:>6.2f}x {1:>6.2f}x"]
    for case in all_cases:
        t, aim = times[case.label], aim_of(case.label)
        ratio = med(t.ratio)
        verdict = "" if aim is None else ("within" if ratio <= aim else "ABOVE")
        lines.append(f"{case.label:<48} {med(t.wall) * 1000:>7.1f}ms {min(t.wall) * 1000:>7.1f}ms {ratio:>6.2f}x "
                     f"{med(t.cpu_ratio):>6.2f}x  {f'{aim:g}x' if aim else '':<4} {verdict}")
    return lines


def markdown(all_cases: list[Case], base: Times, times: dict[str, Times], runs: int, against: Path) -> list[str]:
    """The table docs/startup.md holds: before (``--against``) and now, their ratios to `python -c
    pass` and now over before, from one interleaved run."""
    lines = [f"{time.strftime('%Y-%m-%d', time.gmtime())}, {os.cpu_count()} cores, Python "
             f"{sys.version.split()[0]}, {runs} rounds, one interleaved run; `{BASELINE}`: median "
             f"{med(base.wall) * 1000:.1f} ms wall, {med(base.cpu) * 1000:.1f} ms CPU (its interquartile range: "
             f"{spread(base.wall):.0f}% of its median); before: {against}",
             "",
             "| command | before: median, ×pass (wall, CPU) | now: median, ×pass (wall, CPU) | now ÷ before (wall, CPU) | aim |",
             "|---|---|---|---|---|"]
    ref = times[JINJA2]
    lines.append(f"| `python -c 'import jinja2'` (reference) | | {med(ref.wall) * 1000:.0f} ms, {med(ref.ratio):.2f}×, "
                 f"{med(ref.cpu_ratio):.2f}× | | |")
    for key, (wall, cpu) in now_over_before(all_cases, times).items():
        now, before = (times[next(c.label for c in all_cases if c.key == key and c.tag == t)] for t in ("this", "against"))
        aim = AIMS[key.split()[0]]
        lines.append(f"| `tpubuild {key}` | {med(before.wall) * 1000:.0f} ms, {med(before.ratio):.2f}×, "
                     f"{med(before.cpu_ratio):.2f}× | {med(now.wall) * 1000:.0f} ms, {med(now.ratio):.2f}×, "
                     f"{med(now.cpu_ratio):.2f}× | {wall:.2f}×, {cpu:.2f}× | {aim:g}× |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="rounds (default 21)")
    ap.add_argument("--values", action="append", help="values file (repeatable; default values.env)")
    ap.add_argument("--examples", action="store_true", help="also every examples/*.env")
    ap.add_argument("--against", type=Path, help="a second checkout, measured in the same rounds")
    ap.add_argument("--markdown", action="store_true", help="with --against: also the table docs/startup.md holds")
    args = ap.parse_args(argv)

    files = [Path(v) for v in args.values or [str(REPO / "values.env")]]
    if args.examples:
        files += sorted((REPO / "examples").glob("*.env"))
    checkouts: list[tuple[str, Path]] = [("this", REPO)]
    if args.against:
        checkouts.append(("against", args.against.resolve()))
    all_cases = cases(files, checkouts)
    base, times = measure(all_cases, args.runs)
    print("\n".join(text_table(all_cases, base, times, args.runs)))
    print(f"wall, cpu: median over the pairs of (command / the baseline run just before it); noise: the"
          f" baseline's interquartile range is {spread(base.wall):.0f}% of its median"
          f" ({' vs '.join(str(c) for _, c in checkouts)})")
    if args.against:
        for key, (wall, cpu) in now_over_before(all_cases, times).items():
            print(f"now / before, {key}: {wall:.2f}x wall, {cpu:.2f}x cpu (median over the rounds)")
        if args.markdown:
            print("\n".join(["", *markdown(all_cases, base, times, args.runs, args.against)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
