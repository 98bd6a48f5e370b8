"""Real Terraform against the stand-in provider (tools/tfstandin): helpers for tests/terraform/test_terraform.py.

* ``standin_terraform()``: the tools a real-Terraform test needs (``require``: a skip on a laptop, a
  failure in CI), then a ``Terraform`` on the stand-in;
* ``standin_env()``: installs the stand-in (cached) and returns the environment Terraform needs
  (``TF_CLI_CONFIG_FILE`` → a mirror holding only the stand-in google/google-beta, 8.7.0 and 6.50.0);
* ``Terraform``: runs ``terraform`` in a folder and returns the completed process;
* ``Workspace``: a copy of ``modules/`` (and ``env_setup/``, which the modules read with
  ``file()``) in a temporary folder where each root module gets an override file
  (``tpubuild_standin_override.tf``): the backend becomes ``local`` (``<ws>/state/<plan module>.tfstate``)
  and every ``terraform_remote_state`` reads the local state of the plan module its GCS prefix
  names (``"${var.env_name}/filestore"`` → ``state/filestore.tfstate``), so applying the plan
  modules in the pipeline's order gives each one real (fake-applied) upstream outputs; a root that
  reads its own state (modules/tpu_vm) finds an empty one before its first apply, as on GCS.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO, require

TOOLS = REPO / "tools" / "tfstandin"
MODULES = REPO / "modules"
OVERRIDE = "tpubuild_standin_override.tf"
_REMOTE = re.compile(r'data\s+"terraform_remote_state"\s+"(\w+)"\s*\{(.*?)\n\}', re.S)
_PREFIX = re.compile(r'prefix\s*=\s*"[^"]*/(\w+)"')


def module_dirs() -> list[Path]:
    """Every Terraform module under modules/ (a folder with .tf files), roots and children; not
    modules/_shared, the files they link (modules/_shared/README.md)."""
    return sorted(p for p in MODULES.iterdir() if p.is_dir() and p.name != "_shared" and any(p.glob("*.tf")))


def is_root(path: Path) -> bool:
    return any(re.search(r'^\s*backend\s+"', f.read_text(), re.M) for f in path.glob("*.tf"))


sys.path.insert(0, str(TOOLS))
try:
    import install  # noqa: E402  (tools/tfstandin is not a package)
finally:
    sys.path.remove(str(TOOLS))

#: The provider release the roots pin, and the one the legacy node roots keep.
CURRENT, LEGACY = install.CURRENT, install.LEGACY


def standin_env() -> dict[str, str]:
    return {**os.environ, **install.install().env()}


class Terraform:
    def __init__(self, env: dict[str, str], exe: str = "terraform") -> None:
        self.env = env
        self.exe = exe

    def __call__(self, cwd: Path, *args: str, check: bool = True, extra_env: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **(extra_env or {})}
        proc = subprocess.run([self.exe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        if check and proc.returncode != 0:
            raise AssertionError(f"terraform {' '.join(args)} in {cwd} failed ({proc.returncode}):\n"
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return proc

    def init(self, cwd: Path, *, backend: bool = True) -> None:
        args = ["init", "-input=false", "-no-color"] + ([] if backend else ["-backend=false"])
        self(cwd, *args)

    def plan_json(self, cwd: Path, name: str, *args: str) -> dict[str, Any]:
        """``terraform plan -out`` then ``show -json``; the plan file stays as ``<name>.tfplan``."""
        self(cwd, "plan", "-input=false", "-no-color", "-lock=false", f"-out={name}.tfplan", *args)
        shown = self(cwd, "show", "-json", f"{name}.tfplan")
        return json.loads(shown.stdout)


class Workspace:
    def __init__(self, root: Path, modules: Path = MODULES, state: Path | None = None) -> None:
        self.root = root
        self.state = state or root / "state"
        self.state.mkdir(parents=True, exist_ok=True)
        ignore = shutil.ignore_patterns(".terraform", "*.tfstate*", ".terraform.lock.hcl", OVERRIDE)
        shutil.copytree(modules, root / "modules", ignore=ignore, dirs_exist_ok=True)
        shutil.copytree(REPO / "env_setup", root / "env_setup", ignore=ignore, dirs_exist_ok=True)

    def module(self, directory: str, plan_module: str, tfvars: dict[str, Any] | None = None) -> Path:
        """Prepare ``modules/<directory>`` (repo-relative dir name) for plan module ``plan_module``."""
        path = self.root / "modules" / Path(directory).name
        source = "\n".join(f.read_text() for f in sorted(path.glob("*.tf")) if f.name != OVERRIDE)
        lines = ["terraform {", "  backend \"local\" {", f"    path = {json.dumps(str(self.state / (plan_module + '.tfstate')))}",
                 "  }", "}"]
        for name, body in _REMOTE.findall(source):
            prefix = _PREFIX.search(body)
            assert prefix, f"{directory}: terraform_remote_state.{name} has no recognisable prefix"
            target = self.state / f"{prefix.group(1)}.tfstate"
            if prefix.group(1) == plan_module and not target.exists():
                # a root reading its own state (modules/tpu_vm's slots): the GCS backend writes an
                # empty state at init when there is none; the local one does not, so do it here
                target.write_text(json.dumps({"version": 4, "terraform_version": "1.11.0", "serial": 0,
                                              "lineage": f"tpubuild-{plan_module}", "outputs": {}, "resources": []}))
            lines += [f'data "terraform_remote_state" "{name}" {{', '  backend = "local"',
                      f"  config = {{ path = {json.dumps(str(target))} }}", "}"]
        (path / OVERRIDE).write_text("\n".join(lines) + "\n")
        if tfvars is not None:
            (path / "terraform.tfvars.json").write_text(json.dumps(tfvars, indent=1))
        return path


def resources(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every resource of ``planned_values`` (root and child modules)."""
    out: list[dict[str, Any]] = []

    def walk(module: dict[str, Any]) -> None:
        out.extend(module.get("resources", []))
        for child in module.get("child_modules", []):
            walk(child)

    walk(plan.get("planned_values", {}).get("root_module", {}))
    return out


def counts(plan: dict[str, Any]) -> dict[str, int]:
    """{create, update, delete, no-op, ...} over managed resource_changes."""
    out: dict[str, int] = {}
    for change in plan.get("resource_changes", []):
        if change.get("mode") != "managed":
            continue
        key = "+".join(change["change"]["actions"])
        out[key] = out.get(key, 0) + 1
    return out


def child_caller(project: str, call: str, source: str, arguments: str) -> str:
    """main.tf of a root, one folder below the repository, that configures the google provider
    for ``project`` and calls the child module ``modules/<source>`` as ``call`` with ``arguments``
    (HCL lines)."""
    return f"""
terraform {{
  required_providers {{
    google = {{
      source  = "hashicorp/google"
      version = "~> 8.7"
    }}
  }}
}}

provider "google" {{
  project = "{project}"
}}

module "{call}" {{
  source = "../modules/{source}"

{arguments}
}}
"""


def standin_terraform() -> "Terraform":
    """terraform, npm and the stand-in's Python packages (``require`` each), then a ``Terraform``
    whose environment installs only the stand-in provider."""
    require("terraform", shutil.which("terraform") is not None, "https://developer.hashicorp.com/terraform/install")
    require("npm", shutil.which("npm") is not None, "apt-get install npm")
    try:
        import msgpack  # noqa: F401
        from tf.gen import tfplugin_pb2  # noqa: F401
    except ImportError as exc:
        require("the stand-in's Python packages", False, f"pip install msgpack && pip install --no-deps tf==1.2.0 ({exc})")
    return Terraform(standin_env())


def git_tree(commit: str, dest: Path) -> None:
    """``modules/`` and ``env_setup/`` of ``commit`` extracted into ``dest``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "modules", "env_setup"],
                             capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def apply_slice_inputs(tf: "Terraform", ws: "Workspace", settings: Any) -> None:
    """Apply, with today's modules, every plan module of ``settings`` that the slice reads (all but
    ``mig`` and ``dashboard``: filestore, shared_pd, tpu) into ``ws``'s states."""
    from builder import tfvars
    from builder.plan import module_dir

    for module, values in tfvars.all_for(settings).items():
        if module in ("mig", "dashboard"):
            continue
        work = ws.module(module_dir(settings, module), module, values)
        tf.init(work)
        tf(work, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")


def old_module(tmp_path: Path, commit: str, state: Path, tfdir: str, plan_module: str,
               values: dict[str, Any]) -> Path:
    """``tfdir`` as ``commit`` had it, in a workspace of its own under ``tmp_path`` that shares
    ``state`` (the new module's), given HEAD's ``values`` reduced to what it declared; the caller
    inits and applies it. Needs ``commit`` in the clone's history (CI's checkout has it)."""
    require("git history", subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", commit],
                                          capture_output=True).returncode == 0, "a full clone")
    old_src = tmp_path / "old"
    old_src.mkdir(exist_ok=True)
    git_tree(commit, old_src)
    ws = Workspace(tmp_path / "ws-old", modules=old_src / "modules", state=state)
    return ws.module(tfdir, plan_module, old_values(old_src / tfdir, values))


def old_values(old_dir: Path, values: dict[str, Any]) -> dict[str, Any]:
    """HEAD's tfvars reduced to the variables the old module declares (new ones did not exist)."""
    import hcl2

    declared: set[str] = set()
    for tf_file in old_dir.glob("*.tf"):
        with tf_file.open() as handle:
            for block in hcl2.load(handle).get("variable", []):
                declared |= {name.strip('"') for name in block}
    return {k: v for k, v in values.items() if k in declared}


#: Dataset disk types the shared_pd module accepted before Hyperdisk ML (its ``type`` validation then).
OLD_DISK_TYPES = ("pd-standard", "pd-balanced", "pd-ssd")


def as_applied_by_old_modules(env: Path) -> tuple[Any, bool]:
    """An example's settings as an environment applied by older modules could have them, and
    whether its shared_pd module existed then. Those modules had no health check, so the slice
    is taken with ``TPU_RECOVERY="off"`` (a health check is a create, not an upgrade); and they
    refused a Hyperdisk ML dataset disk, so a v6e or TPU7x environment of that era had no dataset
    disk attached to its hosts (``SHARED_PD_DISK_ATTACH="false"``) and no state of a Hyperdisk ML
    disk to carry over: a test of an old state skips that module."""
    from builder.config import load, load_text, read_text

    text = read_text(env) + '\nTPU_RECOVERY="off"\n'
    with_disk = load(env).shared_pd_type in OLD_DISK_TYPES
    if not with_disk:
        text += 'SHARED_PD_DISK_ATTACH="false"\n'
    return load_text(text, env), with_disk
