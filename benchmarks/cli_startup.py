"""CLI start-up cost: `tpubuild render --action create` against `python -c pass`, side by side.

    python benchmarks/cli_startup.py [--runs N] [--values PATH] [--command render|plan|validate]

Both are run as fresh subprocesses N times each, interleaved so that machine noise hits both
alike; the medians and their ratio are printed. The aim is a ratio of 4 or less for
`render`: `render` must not import the Google Cloud client libraries,
`plan`/`validate` not even jinja2, the CLI imports only the module of the command it runs
(builder/cli.py COMMAND_OWNERS) and nothing does work at import time. Both commands run with
bytecode caching on (PYTHONDONTWRITEBYTECODE is dropped for them), as an installed tpubuild does:
pip compiles the package at install. This is a measurement, not a test: it prints and exits 0.
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
AIM = 4.0


def tpubuild_command() -> list[str]:
    exe = Path(sys.executable).with_name("tpubuild")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("tpubuild")
    return [found] if found else [sys.executable, "-m", "builder"]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="runs of each command (default 21)")
    ap.add_argument("--values", default=str(REPO / "values.env"))
    ap.add_argument("--command", choices=("render", "plan", "validate"), default="render")
    args = ap.parse_args(argv)

    baseline = [sys.executable, "-c", "pass"]
    ours = [*tpubuild_command(), args.command, "--values", args.values]
    if args.command in ("render", "plan"):
        ours += ["--action", "create"]
    timed(baseline)  # warm the page cache for both
    timed(ours)
    base_t: list[float] = []
    ours_t: list[float] = []
    for _ in range(args.runs):
        base_t.append(timed(baseline))
        ours_t.append(timed(ours))
    base_med, ours_med = statistics.median(base_t), statistics.median(ours_t)
    ratio = ours_med / base_med
    print(f"{'command':<44} {'median':>9} {'min':>9}   runs={args.runs}")
    print(f"{'python -c pass':<44} {base_med * 1000:>7.1f}ms {min(base_t) * 1000:>7.1f}ms")
    label = f"tpubuild {' '.join(ours[len(tpubuild_command()):][:1])} --action create"
    if args.command == "validate":
        label = "tpubuild validate"
    print(f"{label:<44} {ours_med * 1000:>7.1f}ms {min(ours_t) * 1000:>7.1f}ms")
    verdict = "within" if ratio <= AIM else "ABOVE"
    print(f"ratio {ratio:.2f}x ({verdict} the aim of {AIM:g}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
