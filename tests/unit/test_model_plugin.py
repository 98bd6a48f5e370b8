"""Models are plug-ins: everything builder/ needs from a model is declared by the model's folder
(builder/config/model_registry.py DECLARED), builder/ names no model in its code, and a throw-away model
written here, beside its values.env, is validated, planned, launched (--dry-run) and profiled
(--dry-run) with builder/ untouched."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

from builder.config import load
from builder.config import model_registry
from builder.inputs import tfvars
from tests.conftest import EXAMPLES, REPO
from tests.unit.test_model_registry import TOY

VM = EXAMPLES / "vm-v5p-32.env"
#: Words of a model that builder/ must not carry (each model's folder declares them instead).
MODEL_WORDS = ("fairseq", "train_inner", "torch_tpu", "torch-tpu")


def _code_text(path: Path) -> str:
    """A Python file's code without its docstrings and comments: identifiers and string literals."""
    tree = ast.parse(path.read_text())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    words = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.append(node.value)
        elif isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.alias)):
            words.append(getattr(node, "name", ""))
    return "\n".join(words)


def test_builder_names_no_model_in_its_code() -> None:
    names = [*model_registry.MODELS, *MODEL_WORDS]
    assert "roberta" in names and "torchtpu" in names
    found = []
    for path in sorted((REPO / "builder").rglob("*")):
        if path.suffix == ".py":
            text = _code_text(path)
        elif path.suffix in (".j2", ".sh", ".tf", ".json") and "data" not in path.parts:
            text = path.read_text()
        else:
            continue
        found += [f"{path.relative_to(REPO)}: {name}" for name in names if re.search(name, text, re.IGNORECASE)]
    assert found == []


TOY_KEYS = '''
from builder.config.keys import KeySpec, integer, text

CODE_DIR = ".tpubuild/toy"
PROFILER = "toy_observe.py"
PROFILER_PORT = 9555
STEP_WORD = "toy-step"
DATA_KEYS = ("TOY_DATA",)


def check(settings):
    if settings.model_options["toy_steps"] == 13:
        return [("TOY_STEPS", "13 steps is unlucky", "choose another number")]
    return []


KEYS = (
    KeySpec("TOY_DATA", "toy_data", "", text, "where the toy reads its data"),
    KeySpec("TOY_STEPS", "toy_steps", 10, integer(1, 100, "steps"), "how long the toy trains"),
)
'''


def _toy(tmp_path: Path, **values: str) -> Path:
    (tmp_path / "models/toy").mkdir(parents=True, exist_ok=True)
    (tmp_path / "models/toy/keys.py").write_text(TOY_KEYS)
    (tmp_path / "models/toy/launcher.py").write_text(TOY)
    lines = [ln for ln in VM.read_text().splitlines() if not ln.startswith(("MODEL=", "ROBERTA_"))]
    lines += ['MODEL="toy"', *(f'{k}="{v}"' for k, v in values.items())]
    path = tmp_path / "values.env"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_throwaway_plugin_is_validated_planned_launched_and_profiled(tmp_path: Path, cli) -> None:
    values = _toy(tmp_path, TOY_DATA="gs://toy-bucket/data", TOY_STEPS="20")
    code, out, err = cli("validate", "--values", values)
    assert code == 0, err
    settings = load(values)
    assert settings.model_options["toy_steps"] == 20  # its keys reach the Settings
    code, out, err = cli("plan", "--values", values)
    assert code == 0, err
    # the dashboard's step metric counts the toy's own word
    dashboard = tfvars.for_module(settings, "dashboard")
    assert '"toy-step"' in dashboard["step_log_filter"] and "train_inner" not in dashboard["step_log_filter"]
    assert dashboard["step_label"] == "toy-step"  # no STEP_LABEL declared: the metric's description names its word
    code, out, err = cli("train", "toy", "--dry-run", "--values", values)
    assert code == 0 and out.startswith("# toy on 4 hosts\n"), err
    code, out, err = cli("profile", "--dry-run", "--values", values)
    assert code == 0, err
    capture = next(w for w in shlex.split(out) if "toy_observe.py" in w)
    assert ".tpubuild/toy/toy_observe.py" in capture and "--port 9555" in capture


def test_a_throwaway_plugins_own_rules_and_data_keys_are_validated(tmp_path: Path, cli) -> None:
    values = _toy(tmp_path, TOY_STEPS="13")
    code, out, err = cli("validate", "--values", values)
    assert code == 2 and err.count("error:") == 1 and "TOY_STEPS: 13 steps is unlucky" in err, err
    values = _toy(tmp_path, TOY_DATA="gs://goog-toy/data")  # a DATA_KEYS bucket name is checked
    code, out, err = cli("validate", "--values", values)
    assert code == 2 and "TOY_DATA" in err and "goog" in err, err


def test_every_view_reads_the_selected_models_declaration(tmp_path: Path) -> None:
    roberta = load(VM)
    assert model_registry.declared(roberta.repo_root, roberta.model, "STEP_WORD") == "train_inner"
    assert model_registry.declared(None, "torchtpu", "STEP_WORD") == "tpubuild-step"
    assert model_registry.declared(None, "", "CODE_DIR") == ""  # MODEL="": nothing declared
    assert model_registry.declared(None, "roberta", "CODE_DIR") == ".tpubuild/roberta"
    # roberta's label keeps the step metric's description of every environment applied before plug-ins
    assert tfvars.for_module(roberta, "dashboard")["step_label"] == "fairseq train_inner"
