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
import threading
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
    import rules  # noqa: E402  (Google's rules the stand-in enforces; tests/terraform/test_standin_rules.py)
finally:
    sys.path.remove(str(TOOLS))

HISTORY = rules.HISTORY

#: The provider release the roots pin, and the one the legacy node roots keep.
CURRENT, LEGACY = install.CURRENT, install.LEGACY


def standin_env() -> dict[str, str]:
    return {**os.environ, **install.install().env()}


_LOCKED = re.compile(r'provider\s+"registry\.terraform\.io/hashicorp/(google(?:-beta)?)"\s*\{\s*version\s*=\s*"([^"]+)"')
_STATE_PATH = re.compile(r'\bpath\s*=\s*"([^"]+\.tfstate)"')
_TYPE_NAME = re.compile(r"\bgoogle_[a-z0-9_]+")


def names_used(cwd: Path, args: tuple[str, ...] = ()) -> set[str]:
    """Every ``google_*`` word of what a Terraform command in ``cwd`` reads: the root's ``.tf``
    files, the child modules ``init`` recorded (``.terraform/modules/modules.json``), the states the
    root's backend and remote-state overrides name, and the command's arguments. A superset of the
    resource and data source types the command can touch (the provider keeps only its real types)."""
    files = list(cwd.glob("*.tf"))
    recorded = cwd / ".terraform" / "modules" / "modules.json"
    if recorded.exists():
        for entry in json.loads(recorded.read_text()).get("Modules", []):
            files += list((cwd / entry.get("Dir", ".")).glob("*.tf"))
    text = "\n".join(f.read_text() for f in files)
    states = [Path(m) for m in _STATE_PATH.findall(text)] + list(cwd.glob("*.tfstate"))
    text += "\n".join(f.read_text() for f in states if f.exists()) + "\n".join(args)
    return set(_TYPE_NAME.findall(text))


class Reattached:
    """The stand-in providers as long-lived processes, one per (provider, release), started on first
    use and shared by every Terraform command of this test process (``TF_REATTACH_PROVIDERS``).

    A managed provider is a new Python process each time Terraform needs it (several per command,
    one per provider), and Terraform core converts its whole schema (about 1,600 types) each time:
    together most of a stand-in command's time. A reattached process (``tools/tfstandin/plugin.py
    --reattach``) reads the schema once and serves each command a *view*: the real schema of exactly
    the types the command's configuration and state name (``names_used``), each type whole. What
    Terraform checks is unchanged: a type the configuration uses is served as the real provider
    defines it, a type the real provider lacks is absent from the view as from the provider (and
    reported unsupported), and a type left out of a view by mistake fails the command, never passes
    it (``tests/terraform/test_standin_views.py`` proves both against the whole schema).
    Terraform still chooses the release: ``terraform init`` runs unattached (it installs from the
    stand-in mirror and writes ``.terraform.lock.hcl`` as before), and every later command of that
    folder reattaches the releases its lock file names. The processes end with this one."""

    def __init__(self, cache: Path, whole: bool = False) -> None:
        self.cache = cache
        self.whole = whole  # serve the whole schema to every command (no views)
        self._processes: dict[tuple[str, str], subprocess.Popen[str]] = {}
        self._views: dict[tuple[str, str, frozenset[str]], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def _process(self, provider: str, version: str) -> subprocess.Popen[str]:
        key = (provider, version)
        if key not in self._processes or self._processes[key].poll() is not None:
            release = next(r for r in install.RELEASES if r.provider_version == version)
            schema = install.schema_path(self.cache, release, provider)
            proc = subprocess.Popen([sys.executable, str(TOOLS / "plugin.py"), "--reattach", str(schema)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert proc.stdout and proc.stdout.readline().strip() == "ready", \
                f"the {provider} {version} stand-in did not start"
            self._processes[key] = proc
            self._views = {k: v for k, v in self._views.items() if k[:2] != key}
        return self._processes[key]

    def address(self, provider: str, version: str, names: set[str]) -> dict[str, Any]:
        shown = frozenset({"*"} if self.whole else names)
        with self._lock:
            key = (provider, version, shown)
            proc = self._process(provider, version)
            if key not in self._views:
                assert proc.stdin and proc.stdout
                proc.stdin.write("view " + " ".join(sorted(shown)) + "\n")
                proc.stdin.flush()
                handshake = proc.stdout.readline().strip().split("|")
                assert len(handshake) >= 4 and handshake[2] == "unix", \
                    f"the {provider} {version} stand-in served no view: {handshake}"
                self._views[key] = {"Protocol": "grpc", "ProtocolVersion": 6, "Pid": proc.pid, "Test": True,
                                    "Addr": {"Network": "unix", "String": handshake[3]}}
            return self._views[key]

    def env_for(self, cwd: Path, args: tuple[str, ...] = ()) -> dict[str, str]:
        """``TF_REATTACH_PROVIDERS`` for the releases ``cwd``'s lock file names (none before init)."""
        lock = cwd / ".terraform.lock.hcl"
        if not lock.exists():
            return {}
        locked = _LOCKED.findall(lock.read_text())
        if not locked or any(v not in {r.provider_version for r in install.RELEASES} for _, v in locked):
            return {}
        names = names_used(cwd, args)
        return {"TF_REATTACH_PROVIDERS": json.dumps(
            {f"registry.terraform.io/hashicorp/{p}": self.address(p, v, names) for p, v in locked})}


_REATTACHED: Reattached | None = None


def reattached() -> Reattached:
    global _REATTACHED
    if _REATTACHED is None:
        _REATTACHED = Reattached(install.cache_dir())
    return _REATTACHED


class Terraform:
    """``terraform`` in a folder. With ``reattach`` (the default), every command but ``init``
    talks to the long-lived stand-in processes of ``Reattached`` instead of starting its own."""

    def __init__(self, env: dict[str, str], exe: str = "terraform", reattach: bool | None = None,
                 standins: Reattached | None = None) -> None:
        self.env = env
        self.exe = exe
        self.standins = standins  # default: this process's ``reattached()``
        #: TPUBUILD_STANDIN_REATTACH=0 gives every command its own provider processes, as Terraform
        #: would by itself (benchmarks/terraform_standin.py compares the two)
        self.reattach = os.environ.get("TPUBUILD_STANDIN_REATTACH", "1") != "0" if reattach is None else reattach

    def __call__(self, cwd: Path, *args: str, check: bool = True, extra_env: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **(extra_env or {})}
        if self.reattach and args and args[0] != "init" and "TF_REATTACH_PROVIDERS" not in env:
            env.update((self.standins or reattached()).env_for(Path(cwd), args))
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
        # modules of an older commit build a state as a real project let them then: before Google
        # enforced its TPU MIG rules (bulk mode), which the stand-in then does not apply (rules.py)
        self.history = modules != MODULES
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
        if self.history and re.search(r'^provider\s+"google"\s*\{', source, re.M):
            lines += ['provider "google" {', f"  request_reason = {json.dumps(HISTORY)}", "}"]
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


#: What HEAD's modules change on purpose in a state an older release applied, by the child
#: module resource (type, name): the one action and, for an update, the only attributes it may
#: move, with why. Everything else an upgrade plans must stay a no-op (nothing lost: no create
#: of what moved, no delete, no replace). Only changes newer than every commit the history
#: tests start from belong here (LAST_6X, PREVIOUS_RELEASE, BEFORE_SLOTS are older).
INTENDED_SINCE: dict[tuple[str, str], tuple[str, frozenset[str], str]] = {
    ("google_storage_bucket_iam_member", "checkpoints"): (
        "create", frozenset(),
        "new (modules/host_identity, checkpoint_writer): the training hosts' Storage Object User on "
        "workspace/<env>/checkpoints/; an added IAM member, nothing else granted or revoked"),
    ("google_cloud_scheduler_job", "health"): (
        "update", frozenset({"retry_config"}),
        "modules/health: the health job now retries a failed run (retry_config), in place"),
}


def unintended(plan: dict[str, Any]) -> dict[str, list[str]]:
    """{address: actions} of the managed changes ``plan`` makes (anything but no-op and read) that
    INTENDED_SINCE does not name: another action, an update that moves another attribute, or a
    resource of the root module itself."""
    out: dict[str, list[str]] = {}
    for change in plan.get("resource_changes", []):
        actions = change["change"]["actions"]
        if change.get("mode") != "managed" or actions in (["no-op"], ["read"]):
            continue
        action, attrs, _ = INTENDED_SINCE.get((change["type"], change["name"]), ("", frozenset(), ""))
        ok = bool(change.get("module_address")) and actions == [action]
        if ok and action == "update":
            before, after = change["change"]["before"] or {}, change["change"]["after"] or {}
            ok = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)} <= attrs
        if not ok:
            out[change["address"]] = actions
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
    """Apply, with today's modules, every plan module of ``settings`` but ``mig`` and ``dashboard``
    (filestore, shared_pd, tpu) into ``ws``'s states: what the slice reads, and on mig its access,
    whose state the slice's older modules read (today's derive the account and tag)."""
    from builder.inputs import tfvars
    from builder.planning.plan import module_dir

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
