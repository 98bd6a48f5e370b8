"""What one real-Terraform check costs through the stand-in provider, three ways, side by side.

    python benchmarks/terraform_standin.py [--rounds N] [--values PATH]

For every plan module of one values file (default examples/mig-v6e-16-spot.env: filestore,
shared_pd, the slice's identity, the MIG with google and google-beta, the dashboard) each round
runs `terraform init`, `validate`, `plan -out`, `show -json` and `apply`, in a fresh copy of
modules/, three ways in turn (so machine noise hits all three alike):

* **managed**: Terraform starts the stand-in itself, a new Python process per provider each time
  it needs one (several per command), and converts the whole schema (about 1,600 types) each time:
  what the suite did before;
* **reattached, whole schema**: one long-lived process per provider release
  (`TF_REATTACH_PROVIDERS`), serving the whole schema;
* **reattached, views** (what tests/support/terraform.py does now): the same process serves each
  command the real schema of the types its configuration and state name.

Prints each way's median seconds per round and per command, and the median of the rounds' ratios
against managed. A measurement, not a test: it prints and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder import config
from builder.inputs import tfvars  # noqa: E402
from builder.planning.plan import module_dir  # noqa: E402
from tests.support.terraform import Reattached, Terraform, Workspace, install, standin_env  # noqa: E402

COMMANDS = (("init", "-input=false", "-no-color"), ("validate", "-no-color"),
            ("plan", "-input=false", "-no-color", "-lock=false", "-out=p.tfplan"), ("show", "-json", "p.tfplan"),
            ("apply", "-input=false", "-no-color", "-lock=false", "-auto-approve"))


def one_round(tf: Terraform, values: Path) -> dict[str, float]:
    settings = config.load(values)
    spent: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tf-bench-") as tmp:
        ws = Workspace(Path(tmp))
        for module, inputs in tfvars.all_for(settings).items():
            work = ws.module(module_dir(settings, module), module, inputs)
            for args in COMMANDS:
                start = time.perf_counter()
                tf(work, *args)
                spent[args[0]] = spent.get(args[0], 0.0) + time.perf_counter() - start
    spent["round"] = sum(spent.values())
    return spent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--values", type=Path, default=REPO / "examples" / "mig-v6e-16-spot.env")
    args = parser.parse_args(argv)
    env = standin_env()
    ways = {"managed": Terraform(env, reattach=False),
            "reattached, whole schema": Terraform(env, reattach=True,
                                                  standins=Reattached(install.cache_dir(), whole=True)),
            "reattached, views": Terraform(env, reattach=True, standins=Reattached(install.cache_dir()))}
    for tf in ways.values():  # warm-up: processes started, views made, caches read
        one_round(tf, args.values)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, tf in ways.items():
            runs[name].append(one_round(tf, args.values))
    print(f"terraform through the stand-in: {args.values.name}, every plan module, {args.rounds} rounds "
          "(init, validate, plan, show -json, apply each)")
    print(f"  {'way':<26} {'round s':>8} {'ratio':>7}   " + " ".join(f"{c[0]:>9}" for c in COMMANDS))
    for name, rounds in runs.items():
        ratio = statistics.median(m["round"] / r["round"] for m, r in zip(runs["managed"], rounds))
        cells = " ".join(f"{statistics.median(r[c[0]] for r in rounds):9.2f}" for c in COMMANDS)
        print(f"  {name:<26} {statistics.median(r['round'] for r in rounds):8.1f} {ratio:6.1f}x   {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
