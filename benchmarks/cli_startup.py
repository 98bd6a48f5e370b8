"""CLI start-up cost: `tpubuild render`, `plan` and `validate` against `python -c pass`, side by side.

    python benchmarks/cli_startup.py [--runs N] [--values PATH ...] [--examples] [--against CHECKOUT]

Every command runs as a fresh subprocess, N rounds, each run of a tpubuild command right after a
run of `python -c pass` (a pair), so machine noise hits both alike; each command's median, the
median of its pairs' ratios and the aim (3x or less) are printed side by side. `--values` (repeatable; default
the shipped values.env) picks the files, `--examples` adds every examples/*.env. `--against`
names a second checkout (e.g. a `git worktree` of main): its commands run in the same rounds, so
before and after come from one run. A checkout's code is picked by PYTHONPATH, with the
console script of this interpreter (`tpubuild`, as pip installs it; `python -m builder` where
there is none). The spread (interquartile range of the baseline, in % of its median) says how
noisy the machine was. A reference row, `python -c 'import jinja2'`, shows the floor under
`render`: it renders jinja2 templates, so it pays that import on top of what `plan` does.

What keeps the ratios low: the CLI imports only the file of the verb it runs
(builder/commands/verbs/<name>.py), `render` never imports the Google Cloud client libraries,
`plan`/`validate` not even jinja2 (tests/unit/test_pipeline_cli.py checks both), and nothing does
work at import time that the verb does not need. Commands run with bytecode caching on
(PYTHONDONTWRITEBYTECODE is dropped for them), as an installed tpubuild does: pip compiles the
package at install. This is a measurement, not a test: it prints and exits 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
AIM = 3.0
#: The reference row: importing jinja2 and nothing else (no aim: it is not a command).
JINJA2 = "(reference) python -c 'import jinja2'"
VERBS: tuple[tuple[str, ...], ...] = (("render", "--action", "create"), ("plan", "--action", "create"),
                                      ("validate",))


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


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed


def spread(times: list[float]) -> float:
    """Interquartile range in % of the median."""
    q = statistics.quantiles(times, n=4)
    return (q[2] - q[0]) / statistics.median(times) * 100


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="rounds (default 21)")
    ap.add_argument("--values", action="append", help="values file (repeatable; default values.env)")
    ap.add_argument("--examples", action="store_true", help="also every examples/*.env")
    ap.add_argument("--against", type=Path, help="a second checkout, measured in the same rounds")
    args = ap.parse_args(argv)

    files = [Path(v) for v in args.values or [str(REPO / "values.env")]]
    if args.examples:
        files += sorted((REPO / "examples").glob("*.env"))
    checkouts: list[tuple[str, Path]] = [("this", REPO)]
    if args.against:
        checkouts.append(("against", args.against.resolve()))
    baseline = ("python -c pass", [sys.executable, "-c", "pass"], checkout_env(None))
    # not a command: what importing jinja2 alone costs, the floor under `render` (its templates)
    reference = (JINJA2, [sys.executable, "-c", "import jinja2"], checkout_env(None))
    cases = [baseline, reference]
    for tag, checkout in checkouts:
        for values in files:
            for verb in VERBS:
                label = f"{' '.join(verb)} {values.name}" + (f" [{tag}]" if args.against else "")
                cmd = [*tpubuild_command(), verb[0], "--values", str(values), *verb[1:]]
                cases.append((label, cmd, checkout_env(checkout)))
    for _, cmd, env in cases:  # warm the page cache and the bytecode caches
        timed(cmd, env)
    times: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    ratios: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    for _ in range(args.runs):
        for label, cmd, env in cases[1:]:  # each command right after a run of the baseline: a pair
            base_t = timed(baseline[1], baseline[2])
            times[baseline[0]].append(base_t)
            times[label].append(timed(cmd, env))
            ratios[label].append(times[label][-1] / base_t)

    print(f"{'command':<52} {'median':>9} {'min':>9} {'ratio':>7}  aim   rounds={args.runs}")
    for label, _, _ in cases:
        med = statistics.median(times[label])
        ratio = statistics.median(ratios[label]) if ratios[label] else 1.0
        verdict = "" if label in (baseline[0], JINJA2) else ("within" if ratio <= AIM else "ABOVE")
        print(f"{label:<52} {med * 1000:>7.1f}ms {min(times[label]) * 1000:>7.1f}ms {ratio:>6.2f}x"
              f"  {f'{AIM:g}x' if verdict else '':<3} {verdict}")
    print(f"ratio: median over the pairs of (command / the baseline run just before it); noise: the"
          f" baseline's interquartile range is {spread(times[baseline[0]]):.0f}% of its median"
          f" ({' vs '.join(str(c) for _, c in checkouts)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
