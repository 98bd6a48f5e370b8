"""Seconds tpubuild's own steps add to a pipeline (installs, container starts), before and after
the builder image, side by side in one run.

    python benchmarks/tool_overhead.py [--runs N] [--quick] [--format text|json]

For every example (examples/*.env and values.env) x create/update/destroy the pipeline is rendered
(``builder.render.pipeline.render``) and its tool steps counted: the steps that run in the tpubuild
builder image (guard, finalize) and the ``tpubuild-image`` step. Each is priced from per-step
costs measured here:

* before (the wheel step, as tpubuild did until the builder image): one ``tpubuild-wheel`` step
  (a container start plus ``pip wheel`` of the repository and its dependencies), then every tool
  step a container start plus ``pip install --no-index`` of tpubuild from those wheels;
* after: the ``tpubuild-image`` step (a container start plus one registry lookup, the image being
  there) and every tool step a container start, nothing installed.

Measured: ``pip wheel`` of this repository (pip's cache on, as a warm Cloud Build worker has none:
a lower bound) and the median of ``--runs`` installs of the wheel into a fresh venv (pip's cache
off). A container start is measured with ``docker run --rm`` of the base image when a Docker daemon
answers and has the image; otherwise it is the documented 568 ms (median Docker container start
on native Linux with cloud SSD storage: S. Khan, "Decomposing Docker Container Startup
Performance", arXiv:2602.15214, 2026). The registry lookup is counted at 1 s (not measured: no
registry is reachable here), so the after column is constants only, each labelled with its source
in the output; the image pull is counted in neither column. ``--quick`` measures the install of tpubuild alone (``--no-deps``,
no network): a lower bound of the before column, for the test. Sums are over steps (parallel
guards overlap in wall time, so the sums bound what the tool adds to the build's critical path).
The builder image is pulled once per build, like python:3.11-slim before it; the size the
dependencies add to it is printed beside. This is a measurement, not a test: it prints and exits 0.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ACTIONS = ("create", "update", "destroy")
#: Documented container start (see the module docstring) and the registry lookup of the image step.
CONTAINER_START_S = 0.568
CONTAINER_SOURCE = "constant, documented: arXiv:2602.15214 (native Linux, cloud SSD, median)"
LOOKUP_S = 1.0
LOOKUP_SOURCE = ("constant, assumed: no registry is reachable here to time `gcloud artifacts docker images describe`; "
                 "Artifact Registry documents no latency")
#: What neither column counts: both pull an image once per build (python:3.11-slim before, the builder
#: image after, larger by the install's MB); a pull's seconds depend on the worker's network, not measured here.
NOT_COUNTED = "not counted in either column: the image pull once per build (the builder image is larger by the install's MB)"


def _timed(cmd: list[str], **kw) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    return time.perf_counter() - start


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure_pip(runs: int, quick: bool) -> dict[str, float]:
    """Seconds of the wheel step and of one install into a fresh venv; MB the install adds."""
    with tempfile.TemporaryDirectory(prefix="tpubuild-tool-overhead-") as tmp:
        root = Path(tmp)
        wheels = root / "wheels"
        src = root / "src"  # a copy: pip builds in place, never in the checkout
        shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "*.egg-info",
                                                                 "build", "tests", "examples", "benchmarks"))
        extra = ["--no-deps", "--no-build-isolation"] if quick else []
        wheel_s = _timed([sys.executable, "-m", "pip", "wheel", "-q", *extra, "--wheel-dir", str(wheels), str(src)])
        installs, added = [], 0
        for n in range(runs):
            venv = root / f"venv{n}"
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            before = _size(venv)
            installs.append(_timed([str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-cache-dir",
                                    "--disable-pip-version-check", "--no-index", "--find-links", str(wheels),
                                    *(["--no-deps"] if quick else []), "tpubuild"]))
            added = _size(venv) - before
            shutil.rmtree(venv)
    return {"wheel_s": wheel_s, "install_s": statistics.median(installs), "install_mb": added / 1e6}


def measure_container(runs: int) -> tuple[float, str]:
    from builder.render.pipeline import IMAGES

    docker = shutil.which("docker")
    base = IMAGES["python"]
    if docker is None or subprocess.run([docker, "info"], capture_output=True).returncode != 0:
        return CONTAINER_START_S, CONTAINER_SOURCE + " (no Docker daemon here)"
    if subprocess.run([docker, "image", "inspect", base], capture_output=True).returncode != 0:
        return CONTAINER_START_S, CONTAINER_SOURCE + f" ({base} is not pulled here)"
    starts = [_timed([docker, "run", "--rm", base, "true"]) for _ in range(max(runs, 3))]
    return statistics.median(starts), f"measured: docker run --rm {base} true, median of {len(starts)}"


def tool_steps(values: Path, action: str) -> tuple[int, bool]:
    """(steps that run in the builder image, whether the image step is there) of one rendering."""
    from builder.config import load
    from builder.render.pipeline import image, render
    from builder.planning.plan import make_plan

    settings = load(values)
    config = render(settings, make_plan(settings, action))
    ours = image(settings, "tpubuild")
    return sum(st["name"] == ours for st in config["steps"]), any(st["id"] == "tpubuild-image" for st in config["steps"])


def rows(costs: dict[str, float]) -> list[dict]:
    start, install, wheel = costs["start_s"], costs["install_s"], costs["wheel_s"]
    out = []
    for values in [*sorted((REPO / "examples").glob("*.env")), REPO / "values.env"]:
        for action in ACTIONS:
            tools, has_image = tool_steps(values, action)
            before = (start + wheel) + tools * (start + install)
            after = (start + LOOKUP_S if has_image else 0.0) + tools * start
            before, after = round(before, 2), round(after, 2)  # the ratio printed is of the figures printed
            out.append({"values": values.relative_to(REPO).as_posix(), "action": action, "tool_steps": tools,
                        "installs_before": tools, "installs_after": 0,
                        "before_s": before, "after_s": after,
                        "ratio": round(before / after, 2) if after else None})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="installs (and container starts) measured (default 3)")
    ap.add_argument("--quick", action="store_true", help="tpubuild alone, no dependencies, no network (a lower bound)")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    args = ap.parse_args(argv)
    costs = measure_pip(max(args.runs, 1), args.quick)
    costs["start_s"], start_source = measure_container(args.runs)
    table = rows(costs)
    if args.format == "json":
        print(json.dumps({"costs": costs, "start_source": start_source, "lookup_s": LOOKUP_S,
                          "lookup_source": LOOKUP_SOURCE, "not_counted": NOT_COUNTED,
                          "quick": args.quick, "rows": table}, indent=2))
        return 0
    scope = "tpubuild alone (--quick: a lower bound)" if args.quick else "tpubuild and its dependencies"
    print("each figure, measured here or a constant with its source:")
    print(f"  container start {costs['start_s']:.2f}s: {start_source}")
    print(f"  pip install of {scope} into a fresh venv {costs['install_s']:.2f}s: measured, median of "
          f"{max(args.runs, 1)} ({costs['install_mb']:.0f} MB, which the builder image carries instead)")
    print(f"  wheel step {costs['wheel_s']:.2f}s: measured, one `pip wheel` of this repository (pip's cache on: a lower bound)")
    print(f"  registry lookup {LOOKUP_S:.2f}s: {LOOKUP_SOURCE}")
    print(f"  {NOT_COUNTED}")
    print(f"{'values':<30} {'action':<8} {'tool steps':>10} {'installs':>13} {'before':>9} {'after':>9} {'ratio':>7}")
    for r in table:
        ratio = f"{r['ratio']:.1f}x" if r["ratio"] else "-"
        print(f"{r['values']:<30} {r['action']:<8} {r['tool_steps']:>10} {r['installs_before']:>6} -> {r['installs_after']:<4}"
              f" {r['before_s']:>8.1f}s {r['after_s']:>8.1f}s {ratio:>7}")
    before = sum(r["before_s"] for r in table)
    after = sum(r["after_s"] for r in table)
    print(f"all {len(table)} pipelines ({len(table) // len(ACTIONS)} values files x {', '.join(ACTIONS)}): "
          f"{before:.0f}s before, {after:.0f}s after ({before / after:.1f}x less tool overhead; after = constants only)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
