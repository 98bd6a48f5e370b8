"""Models plug in: builder/config/model_registry.py's registry and Launcher protocol, a model's
keys in its own package, a launcher of the user's own beside values.env, and the one host
transport (models/hosts.py) building every shell line from templates and quoted words."""

from __future__ import annotations

import ast
import shlex
from pathlib import Path

from builder.config import known_keys, load
from builder.config import model_registry
from builder.config.keys import KEYS
from tests.conftest import EXAMPLES, REPO

VM = EXAMPLES / "vm-v4-32.env"


def test_every_registered_model_owns_its_keys() -> None:
    core = {k.name for k in KEYS}
    for model in model_registry.MODELS:
        keys = model_registry.load(REPO / "models", f"{model}.keys").KEYS
        assert keys, model
        for spec in keys:
            assert spec.name.startswith(f"{model.upper()}_") and spec.field.startswith(f"{model}_"), spec
            assert spec.name not in core
        assert {k.name for k in keys} <= set(known_keys())
    assert not (REPO / "builder/config/model_keys.py").exists()  # one place: the model's package


def test_model_keys_reach_settings_through_the_registry(make_env) -> None:
    s = load(make_env(VM, ROBERTA_TOTAL_BATCH="4096", ROBERTA_EXTRA_ARGS="--dropout 0.2"))
    assert s.model_options["roberta_total_batch"] == 4096
    assert s.model_options["roberta_extra_args"] == ("--dropout", "0.2")


def test_roberta_launcher_satisfies_the_protocol() -> None:
    launcher = model_registry.load(REPO / "models", "roberta.launcher")
    assert model_registry.missing(launcher) == []
    assert set(model_registry.LAUNCHER_MEMBERS) >= {n for n in vars(model_registry.Launcher)
                                                     if not n.startswith("_")} - {"Job", "LaunchError"}


def test_shipped_launchers_plug_in_on_every_arch() -> None:
    """``launcher_problems`` does not import a launcher of the source tree (start-up cost): this
    proves what it takes for granted, for every shipped launcher and every architecture a values
    file can name. A shipped launcher that drops an architecture fails here: then
    ``launcher_problems`` must import it again."""
    from builder.facts.generations import PATHS as ARCHES

    shipped = model_registry.available(None)
    assert shipped == sorted(model_registry.MODELS)
    for model in shipped:
        launcher = model_registry.load(model_registry.SOURCE_MODELS, f"{model}.launcher")
        for arch in ARCHES:
            assert model_registry.launcher_fit(launcher, REPO / "models" / model / "launcher.py", model, arch) is None
            assert model_registry.launcher_problems(model_registry.SOURCE_MODELS, model, arch) is None


TOY = '''
from dataclasses import dataclass

from .. import hosts


class LaunchError(ValueError):
    def __init__(self, key, what, fix):
        super().__init__(what)
        self.key, self.what, self.fix = key, what, fix


@dataclass(frozen=True)
class Job:
    reach: object
    hosts: int

    @classmethod
    def from_settings(cls, s):
        return cls(hosts.for_arch(s.arch, s.project_id, s.zone, not s.tpu_external_ips, s.hosts,
                                  tpu_name=s.tpu_name, mig_name=s.mig_name), s.hosts)


def plan_train(job, models_root):
    return [hosts.Step("say hello", (job.reach.ssh("all", hosts.detached("echo 'hi there'")),))]


def plan_stop(job, models_root):
    return [hosts.Step("stop", (job.reach.ssh("all", hosts.stop_line(), ready=False),))]


def plan_logs(job, host, *, follow, lines=200):
    if host >= job.hosts:
        raise LaunchError("--host", f"no host {host}", "use a smaller one")
    return [hosts.Step("log", (job.reach.ssh(str(host), hosts.tail_line("toy.log", lines, follow=follow)),))]


def render(steps):
    return hosts.render(steps)


def header(job, model):
    return f"# {model} on {job.hosts} hosts"


def log_dir(job):
    return "."
'''


def test_a_model_of_ones_own_plugs_in_beside_values_env(tmp_path: Path, cli) -> None:
    """models/toy/launcher.py beside values.env, importing the shipped transport: train, logs and
    its refusals work without a line of tpubuild changed."""
    values = tmp_path / "values.env"
    values.write_text(VM.read_text())
    (tmp_path / "models/toy").mkdir(parents=True)
    (tmp_path / "models/toy/launcher.py").write_text(TOY)
    code, out, err = cli("train", "toy", "--dry-run", "--values", values)
    assert code == 0, err
    assert out.startswith("# toy on 4 hosts\nset -euo pipefail\n# 1. say hello\ngcloud alpha compute tpus tpu-vm ssh")
    line = out.splitlines()[-1]
    assert shlex.split(line)[-1].endswith("setsid nohup echo 'hi there' >/dev/null 2>&1 </dev/null &")
    code, out, err = cli("logs", "--model", "toy", "--host", "9", "--dry-run", "--values", values)
    assert (code, err) == (2, "tpubuild: error: --host: no host 9; use a smaller one\n")
    # plan_probe is optional: without it, the probe (and so a make-before-break move) is one line
    code, out, err = cli("stop", "--model", "toy", "--probe", "--dry-run", "--values", values)
    assert code == 2 and out == "" and err.count("\n") == 1 and "has no plan_probe" in err, err


def test_a_launcher_that_lacks_a_member_is_one_line(tmp_path: Path, cli) -> None:
    values = tmp_path / "values.env"
    values.write_text(VM.read_text())
    (tmp_path / "models/half").mkdir(parents=True)
    (tmp_path / "models/half/launcher.py").write_text(TOY.split("def plan_stop")[0])
    code, out, err = cli("train", "half", "--dry-run", "--values", values)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "lacks plan_stop, plan_logs, render, header, log_dir" in err


def test_shell_words_stay_quoted_around_a_shell_variable() -> None:
    hosts = model_registry.hosts()
    node = hosts.for_arch("node", "p", "z", True, 2, tpu_name="t", mig_name="m")
    line = node.scp("/src dir", "/mnt/a b/")
    assert line.split()[4:6] == ["'/src", "dir'"] and "\"$LEADER\":'/mnt/a b/'" in line  # the variable expands
    assert shlex.split(line)[5] == "$LEADER:/mnt/a b/"
    each = node.each("echo $HOME")
    assert each.startswith('for vm in $(gcloud compute instance-groups managed list-instances m ')
    assert ' ssh "$vm" ' in each and each.endswith("; done")
    assert hosts.join(["a b", hosts.Word('"$X"'), "$Y"]) == "'a b' \"$X\" '$Y'"


MODEL_FILES = ("models/hosts.py", "models/run_lines.py", "models/slots.py", "models/roberta/launcher.py", "models/roberta/host_lines.py",
               "models/roberta/recipe.py", "models/roberta/rules.py", "models/torchtpu/launcher.py", "models/torchtpu/launch.py",
               "models/roberta_torchtpu/launcher.py", "models/roberta_torchtpu/plan.py")
SHELL = (";", "&&", "||", "$(", "|", ">", "<")


def test_no_shell_is_built_by_concatenation_or_replace() -> None:
    """The transport and the launcher: no ``.replace`` on a line, no ``+`` of strings, and no
    f-string that writes shell syntax (templates and quoted word lists do); ``# `` comments of the
    printed script excepted."""
    for rel in MODEL_FILES:
        tree = ast.parse((REPO / rel).read_text())
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                assert node.func.attr != "replace", where
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                sides = (node.left, node.right)
                assert not any(isinstance(x, (ast.JoinedStr, ast.Constant)) and isinstance(getattr(x, "value", ""), str)
                               for x in sides), where
            if isinstance(node, ast.JoinedStr) and not rel.endswith(("recipe.py", "rules.py", "launch.py")):  # messages, no shell
                text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
                if not text.startswith("# "):
                    assert not any(tok in text for tok in SHELL), (where, text)


def test_mig_hosts_reaches_the_transport_without_the_cli() -> None:
    tree = ast.parse((REPO / "builder/render/mig_hosts.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m and m.startswith(("builder.commands", "builder.cli")) for m in imported), imported
