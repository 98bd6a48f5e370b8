"""The guard's plan fixtures that real Terraform writes.

``regenerate(dest, tf)`` plans the plan modules of three values files with ``terraform`` 1.11
through the stand-in provider (tools/tfstandin, tests/support/terraform.py), in the pipeline's
order, and writes ``terraform show -json`` of each shape below as ``<module directory>_<shape>.json``:

* ``create``: the plan of an empty state;
* ``noop``: the plan again after the fake apply of ``create`` (the state exists, nothing changes);
* ``update_in_place`` / ``resize``: an updatable input changed (labels, Filestore capacity, PD
  size, MIG size) on the applied state; not applied;
* ``destroy``: ``plan -destroy`` of the applied state;
* ``make_before_break``: a change that makes the slice again (tpu_vm: the accelerator type;
  tpu_mig: the template's labels) under make-before-break: the new slot is created beside the
  running one, which stays (the guard's DOUBLE BILLING);
* ``count_zero``: ``tpu_vm`` switched to a queued resource (``count = var.queued ? 0 : 1``), so
  ``google_tpu_v2_vm.this[0]`` goes with ``delete_because_count_index``.

The node architecture's roots are destroy only (``modules/_shared/destroy_only.tf``): their one
fixture is ``destroy``, ``plan -destroy`` by today's root of the state their last full version
applied (:data:`STATES`, tests/data/node_state).

What the stand-in cannot write (a replacement: it knows no ForceNew; create-before-destroy; a
deposed object; an errored plan) stays hand-made in ``tests/data/plans/generate.py``;
``tests/data/plans/MANIFEST.json`` says for every fixture who made it and, for the hand-made
ones, why (tests/terraform/test_plan_fixtures.py holds the two to each other).

The documents are Terraform's, byte for byte, but for four normalisations that keep them stable
across runs, machines and unrelated edits: ``timestamp`` is fixed; ``relevant_attributes`` (which
Terraform lists in Go map order, different each run) is sorted; the temporary workspace path
becomes ``/tpubuild-fixtures``; and the text of ``env_setup/scripts/startup.sh`` (which the host
modules read with ``file()``) becomes ``<env_setup/scripts/startup.sh>``.

Run: ``python tests/data/plans/generate.py --terraform`` (needs terraform and the stand-in).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from builder.config import load
from builder.inputs import tfvars
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES, NODE, REPO
from tests.support.terraform import Terraform, Workspace

STARTUP = REPO / "env_setup" / "scripts" / "startup.sh"
NODE_STATE = REPO / "tests" / "data" / "node_state"
#: destroy-only module directory → the state an earlier, full version of it applied.
STATES: dict[str, Path] = {"tpu_node": NODE_STATE / "tpu.tfstate", "mig": NODE_STATE / "mig.tfstate"}
TIMESTAMP = "2026-01-05T10:00:00Z"
WORKSPACE = "/tpubuild-fixtures"

Change = Callable[[dict[str, Any]], dict[str, Any]]


def _labels(values: dict[str, Any]) -> dict[str, Any]:
    return {**values, "labels": {**values["labels"], "team": "nlp"}}


#: values file → {module directory: {shape: the tfvars change (None: the plan of the state as is)}}.
#: A directory is written from the first values file that names it; the other modules of a file
#: are only created and applied (their outputs feed the next module's terraform_remote_state).
SHAPES: dict[Path, dict[str, dict[str, Change | None]]] = {
    NODE: {
        "filestore": {"update_in_place": lambda v: {**v, "capacity_gb": v["capacity_gb"] * 2}},
        "shared_pd": {"resize": lambda v: {**v, "size_gb": v["size_gb"] * 2}},
        "tpu_node": {},  # destroy only (STATES)
        "mig": {},
        "dashboard": {},
    },
    EXAMPLES / "vm-v4-32.env": {
        "tpu_vm": {"update_in_place": _labels, "count_zero": lambda v: {**v, "queued": True},
                   "make_before_break": lambda v: {**v, "accelerator_type": "v4-64"}},
    },
    EXAMPLES / "mig-v6e-16-spot.env": {
        "tpu_mig_access": {},
        # the health check's schedule changes in place; the labels are on the instance template, so
        # under make-before-break (the example's default) they make a second MIG beside the running one
        "tpu_mig": {"update_in_place": lambda v: {**v, "health_schedule": "*/5 * * * *"},
                    "make_before_break": _labels},
    },
}


def names() -> list[str]:
    """Every fixture name regenerate() writes (without .json)."""
    out = ["empty"]
    for per_dir in SHAPES.values():
        for directory, extra in per_dir.items():
            shapes = ("destroy",) if directory in STATES else ("create", "noop", *extra, "destroy")
            out += [f"{directory}_{shape}" for shape in shapes]
    return sorted(out)


def _normalise(text: str, root: Path) -> str:
    doc = json.loads(text.replace(str(root), WORKSPACE))
    doc["timestamp"] = TIMESTAMP
    if "relevant_attributes" in doc:  # Terraform lists them in map order, which varies run to run
        doc["relevant_attributes"].sort(key=lambda a: (a["resource"], json.dumps(a["attribute"])))
    startup = STARTUP.read_text()

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return "<env_setup/scripts/startup.sh>" if value == startup else value

    return json.dumps(walk(doc), indent=2) + "\n"


def _show(tf: Terraform, work: Path, name: str, *args: str) -> str:
    tf(work, "plan", "-input=false", "-no-color", "-lock=false", f"-out={name}.tfplan", *args)
    return tf(work, "show", "-json", f"{name}.tfplan").stdout


def _one_values_file(tf: Terraform, env: Path, root: Path) -> dict[str, str]:
    settings = load(env)
    ws = Workspace(root)
    out: dict[str, str] = {}
    order = list(tfvars.all_for(settings))
    later = {m: order[i + 1:] for i, m in enumerate(order)}
    for module, values in tfvars.all_for(settings).items():
        directory = Path(module_dir(settings, module)).name
        if directory in STATES:  # destroy only: what an earlier version applied, destroyed
            shutil.copy(STATES[directory], ws.state / f"{module}.tfstate")
            work = ws.module(module_dir(settings, module), module, values)
            tf.init(work)
            out[f"{directory}_destroy"] = _show(tf, work, "destroy", "-destroy")
            continue
        shapes = SHAPES[env].get(directory)
        if shapes is None and not any(Path(module_dir(settings, m)).name in SHAPES[env] for m in later[module]):
            continue  # nothing written below needs its outputs
        work = ws.module(module_dir(settings, module), module, values)
        tf.init(work)
        if shapes is None:  # only its outputs are needed, by a module written below
            tf(work, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")
            continue
        create = _show(tf, work, "create")
        tf(work, "apply", "-input=false", "-no-color", "-lock=false", "create.tfplan")
        out[f"{directory}_create"] = create
        out[f"{directory}_noop"] = _show(tf, work, "noop")
        for shape, change in shapes.items():
            (work / "terraform.tfvars.json").write_text(json.dumps(change(values), indent=1))
            out[f"{directory}_{shape}"] = _show(tf, work, shape)
        (work / "terraform.tfvars.json").write_text(json.dumps(values, indent=1))
        out[f"{directory}_destroy"] = _show(tf, work, "destroy", "-destroy")
    return {name: _normalise(text, root) for name, text in out.items()}


def _empty(tf: Terraform, root: Path) -> dict[str, str]:
    """A module with nothing in it and an empty state (what a plan module with no resources writes)."""
    root.mkdir(parents=True)
    (root / "main.tf").write_text("terraform {}\n")
    return {"empty": _normalise(_show(tf, root, "empty"), root)}


def regenerate(dest: Path, tf: Terraform, *, workers: int = 3) -> list[str]:
    """Plan everything in a temporary workspace and write the fixtures into ``dest``; returns the
    names written. Values files are independent (own workspace, own states): planned in parallel."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tpubuild-fixtures-") as tmp:
        base = Path(tmp)
        jobs: list[Callable[[], dict[str, str]]] = [
            (lambda env=env, i=i: _one_values_file(tf, env, base / f"ws{i}")) for i, env in enumerate(SHAPES)]
        jobs.append(lambda: _empty(tf, base / "empty"))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda job: job(), jobs))
    written: dict[str, str] = {}
    for result in results:
        written.update(result)
    for name, text in written.items():
        (dest / f"{name}.json").write_text(text)
    assert sorted(written) == names(), (sorted(written), names())
    return sorted(written)
