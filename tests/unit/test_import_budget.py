"""What each offline verb imports, against a budget declared per verb: a guard on start-up that is
not a timing (benchmarks/cli_startup.py measures; this fails).

Each case runs one verb in a fresh interpreter (``python -c PROBE <verb> ...``), with the tree
under test first on ``sys.path``. The probe puts a finder at the head of ``sys.meta_path`` that
returns nothing and writes down, for each module imported for the first time, the frames that
asked for it (``module:line`` from the outermost builder frame in); at exit it hands back the
modules that were loaded. Every module outside the standard library must match one pattern of the
verb's budget (:data:`BUDGETS`), and none may be in :data:`NEVER` (``builder.cloud.*``, ``google.*``
and the other Google client stacks) nor in :data:`HEAVY` (standard-library modules kept off
start-up). A module outside the budget fails with the chain that brought it in, e.g.::

    builder.cloud.interrupted: builder.cli:129 > builder.commands.verb:79 > builder.commands.pipeline_cmds:16
      (from builder.cloud.interrupted import lines)

The budgets name a verb's own work only (``builder.commands.<module>`` and
``builder.commands.verbs.<verb>``): loading another verb's work fails. Without credentials (no
``GOOGLE_APPLICATION_CREDENTIALS``, empty ``HOME`` and ``CLOUDSDK_CONFIG``) no verb here loads the
cloud edge; with credentials ``render``, ``validate``, ``trigger`` and a one-candidate ``train
--dry-run`` still read nothing from Google, so their budgets are the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, NO_CLOUD, REPO, SHIPPED, rewrite_env

PROBE = r"""
import json, linecache, os, sys
SKIP = ("<frozen importlib", os.path.dirname(__import__("importlib").__file__))

class Watch:
    '''Writes down who first asked for each module; finds nothing itself.'''
    def __init__(self):
        self.asked = {}
    def find_spec(self, name, path=None, target=None):
        if name not in self.asked:
            chain, frame = [], sys._getframe(1)
            while frame is not None:
                code = frame.f_code.co_filename
                if not code.startswith(SKIP) and frame.f_globals.get("__name__") != "__main__":
                    chain.append((frame.f_globals.get("__name__"), frame.f_lineno,
                                  linecache.getline(code, frame.f_lineno).strip()))
                frame = frame.f_back
            self.asked[name] = chain[::-1]
        return None

watch = Watch()
sys.meta_path.insert(0, watch)
from builder.cli import main
try:
    code = main(sys.argv[1:])
finally:
    with open(os.environ["IMPORT_BUDGET_OUT"], "w") as out:
        json.dump({m: c for m, c in watch.asked.items() if m in sys.modules}, out)
raise SystemExit(code)
"""

#: Never loaded by an offline verb: the cloud edge and the Google client stacks.
NEVER = ("builder.cloud", "builder.cloud.*", "google", "google.*", "grpc", "grpc.*", "proto", "proto.*",
         "requests", "requests.*", "urllib3", "urllib3.*", "hcl2", "hcl2.*")
#: Standard-library modules kept off start-up (each costs milliseconds, and only a rarer path needs
#: it: a typo's "did you mean", package metadata, the network and the event loop the clients use).
HEAVY = ("difflib", "importlib.metadata", "pkg_resources", "asyncio", "email", "http", "ssl",
         "socket", "concurrent", "multiprocessing")
#: Standard-library modules kept off the start-up of the verbs not named: hashlib loads OpenSSL
#: (2 ms), and only the image's tag (builder/catalogue/builder_image.py) needs it; dataclasses
#: imports inspect (with ast, dis, tokenize: 5 ms), and only a launch's Job is one
#: (models/roberta/rules.py: the rules validate runs read no Job); jinja2 imports inspect too.
ONLY_FOR: dict[str, tuple[str, ...]] = {"hashlib": ("render",), "dataclasses": ("train --dry-run",),
                                        "inspect": ("train --dry-run", "render")}

#: What every verb loads: the CLI, the verbs' machinery, the values file's reading and its checks
#: (builder.config, the catalogue, the facts), and the model keys the values file names.
COMMON = ("builder", "builder.cli", "builder.commands", "builder.commands.verb", "builder.commands.parser",
          "builder.commands.verbs", "builder.facts", "builder.facts.*", "builder.config", "builder.config.*",
          "builder.catalogue", "builder.catalogue.*", "builder.planning", "builder.planning.applied",
          "dotenv", "dotenv.*", "tpubuild_models", "tpubuild_models.*.keys", "tpubuild_models.*.facts",
          "tpubuild_models.roberta.rules",
          # the plug-ins' one LaunchError (roberta's rules raise it): a module that imports nothing
          "tpubuild_models.launch_error",
          # each model's package itself (the registry loads its keys.py through it): every folder of models/
          # with a launcher.py, as the registry finds them
          *sorted(f"tpubuild_models.{d.name}" for d in (REPO / "models").iterdir() if (d / "launcher.py").is_file()))
#: What the plan of an action loads (plan and render): the request, the plan, its description and
#: its renderings (the render layer is offline by construction: the Cloud Build config, its YAML,
#: the plan's other formats).
PLANNING = ("builder.commands.pipeline_cmds", "builder.planning.*", "builder.inputs", "builder.inputs.*",
            "builder.render", "builder.render.*")

#: verb -> (its arguments, the patterns of what it may load besides COMMON)
BUDGETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "validate": ((), ("builder.commands.verbs.validate", "builder.commands.core")),
    "plan": ((), ("builder.commands.verbs.plan", *PLANNING, "builder.commands.compare")),
    "plan --all": (("--all",), ("builder.commands.verbs.plan", *PLANNING, "builder.commands.compare",
                                "builder.commands.plan_all")),
    # render compares only when told (--applied) or for auto: not the comparison's module; jinja2
    # renders the step scripts
    "render": (("--action", "create"), ("builder.commands.verbs.render", *PLANNING, "jinja2", "jinja2.*",
                                        "markupsafe", "markupsafe.*")),
    "train --dry-run": (("roberta", "--dry-run"), (
        "builder.commands.verbs.train", "builder.commands.train", "builder.commands.observe",
        "builder.commands.runtime", "builder.render", "builder.render.observe", "builder.render.mig_hosts",
        "tpubuild_models.*")),
    # the triggers are YAML (PyYAML writes them)
    "trigger": (("--repo-owner", "o", "--repo-name", "n"), (
        "builder.commands.verbs.trigger", "builder.commands.bootstrap", "builder.inputs", "builder.inputs.*",
        "builder.render", "builder.render.yamlout", "yaml", "yaml.*", "_yaml")),
}

#: The values files each verb runs on: the shipped one (a TPU VM slice) and a TPU MIG of Compute
#: Engine (another host transport, other modules).
VALUES = (SHIPPED, EXAMPLES / "mig-v6e-16-spot.env")


def stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


def allowed(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def offline_env(tmp_path: Path, *, credentials: bool) -> dict[str, str]:
    """The environment of a verb run: no emulator, no credentials anywhere google.auth looks (or,
    with ``credentials``, an ADC file: a user who signed in), the tree under test first."""
    home = tmp_path / "home"
    (home / "gcloud").mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in NO_CLOUD and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HOME=str(home), CLOUDSDK_CONFIG=str(home / "gcloud"), NO_GCE_CHECK="true",
               PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    if credentials:
        adc = home / "gcloud" / "application_default_credentials.json"
        adc.write_text(json.dumps({"type": "authorized_user", "client_id": "x", "client_secret": "y",
                                   "refresh_token": "z"}))
        env["GOOGLE_APPLICATION_CREDENTIALS"] = str(adc)
    return env


def loaded(tmp_path: Path, argv: list[str], env: dict[str, str]) -> dict[str, list[list]]:
    """module -> the chain that first asked for it, for ``tpubuild *argv`` in a fresh interpreter."""
    out = tmp_path / "imports.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={**env, "IMPORT_BUDGET_OUT": str(out)})
    assert proc.returncode == 0, (argv, proc.stderr[-2000:])
    return json.loads(out.read_text())


def chain(frames: list[list]) -> str:
    """``module:line > ...`` from the CLI in, and the line of the last frame."""
    start = next((i for i, (mod, _, _) in enumerate(frames) if mod and mod.startswith("builder")), 0)
    shown = " > ".join(f"{mod}:{line}" for mod, line, _ in frames[start:]) or "(the interpreter)"
    return f"{shown}\n      ({frames[-1][2]})" if frames else shown


def over_budget(modules: dict[str, list[list]], verb: str) -> list[str]:
    budget = (*COMMON, *BUDGETS[verb][1])
    bad = []
    for name, frames in modules.items():
        heavy = (*HEAVY, *(m for m, verbs in ONLY_FOR.items() if verb not in verbs))
        if allowed(name, NEVER) or (stdlib(name) and allowed(name, heavy)) or not (
                stdlib(name) or allowed(name, budget)):
            bad.append(f"{name}: {chain(frames)}")
    return bad


def repository(tmp_path: Path, values: Path) -> Path:
    """A repository of two environments for ``plan --all``: the shipped values.env at its root and
    ``values`` (named ``other``) as environments/other/values.env; its root values.env."""
    root = tmp_path / "repo"
    (root / "environments" / "other").mkdir(parents=True)
    (root / "values.env").write_text(SHIPPED.read_text())
    (root / "environments" / "other" / "values.env").write_text(rewrite_env(values.read_text(),
                                                                           ENV_BUILD_NAME="other"))
    return root / "values.env"


def run_verb(tmp_path: Path, verb: str, values: Path, *, credentials: bool = False) -> dict[str, list[list]]:
    word = verb.split()[0]
    if "--all" in BUDGETS[verb][0]:
        values = repository(tmp_path, values)
    return loaded(tmp_path, [word, "--values", str(values), *BUDGETS[verb][0]],
                  offline_env(tmp_path, credentials=credentials))


@pytest.mark.parametrize("values", VALUES, ids=lambda p: p.stem)
@pytest.mark.parametrize("verb", list(BUDGETS))
def test_an_offline_verb_loads_only_its_budget(tmp_path: Path, verb: str, values: Path) -> None:
    modules = run_verb(tmp_path, verb, values)
    assert f"builder.commands.verbs.{verb.split()[0]}" in modules  # the probe saw the verb run
    bad = over_budget(modules, verb)
    assert not bad, f"`tpubuild {verb}` loads what its budget does not allow:\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("verb", ["validate", "render", "trigger", "train --dry-run"])
def test_with_credentials_a_verb_that_reads_nothing_from_google_loads_no_more(tmp_path: Path, verb: str) -> None:
    bad = over_budget(run_verb(tmp_path, verb, SHIPPED, credentials=True), verb)
    assert not bad, f"`tpubuild {verb}` with credentials loads what its budget does not allow:\n  " + "\n  ".join(bad)


def test_the_budget_catches_an_import_and_names_its_chain(tmp_path: Path) -> None:
    """The check itself: a module outside the budget is reported with the frames that imported it."""
    modules = {"builder.cloud.lock": [["builder.cli", 129, "return int(args.func(args) or 0)"],
                                      ["builder.commands.pipeline_cmds", 16, "from builder.cloud import lock"]],
               "json": [], "jinja2": [["builder.render.pipeline", 30, "import jinja2"]]}
    bad = over_budget(modules, "plan")
    assert bad == ["builder.cloud.lock: builder.cli:129 > builder.commands.pipeline_cmds:16\n"
                   "      (from builder.cloud import lock)",
                   "jinja2: builder.render.pipeline:30\n      (import jinja2)"]
    assert over_budget(modules, "render") == bad[:1]
