"""The golden launch scripts: what ``tpubuild train/stop/logs/run --dry-run`` print, byte for
byte, for every shipped values file (a refactor must not change them: the host transport and the roberta
launcher were split and moved without changing one emitted gcloud/ssh line).

``python tests/data/golden_launch/generate.py`` rewrites ``tests/data/golden_launch/<file>.json``
from the current code; ``tests/unit/test_golden_launch.py`` compares a fresh run with them. Regenerate
only for a change that *means* to change a launch line, and say so in the commit message.

Cases run in-process from the repository root exactly as tests/data/golden/generate.py's do
(``hermetic``: no credentials, no colour). Each values file also runs as a copy with external IPs
(no IAP tunnel, so no alpha track on vm) and as a copy with ``MODEL=""`` (stop without a model).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).resolve().parent

_spec = importlib.util.spec_from_file_location("golden_generate", REPO / "tests/data/golden/generate.py")
assert _spec and _spec.loader
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

FILES = golden.FILES
#: The copies of each file the cases also run against (key → value replaced or appended).
VARIANTS: dict[str, dict[str, str]] = {
    "": {},
    "external": {"TPU_EXTERNAL_IPS": "true"},  # MIG_EXTERNAL_IP on node (see render_all)
    "nomodel": {"MODEL": ""},
}
RUN = ["--", "python3", "models/examples/torch_xla_launch.py", "--steps", "10", "--name", "a b$c"]


def commands() -> Iterator[tuple[str, list[str]]]:
    yield "train roberta", ["train", "roberta", "--dry-run"]
    yield "train roberta --metrics", ["train", "roberta", "--dry-run", "--metrics"]
    yield "stop", ["stop", "--dry-run"]
    yield "stop --model roberta", ["stop", "--model", "roberta", "--dry-run"]
    yield "logs", ["logs", "--dry-run"]
    yield "logs --host 1 -f -n 50", ["logs", "--dry-run", "--host", "1", "--follow", "--lines", "50"]
    yield "logs --run --host 1", ["logs", "--run", "--dry-run", "--host", "1", "-f"]
    yield "logs --metrics", ["logs", "--metrics", "--dry-run"]
    yield "run", ["run", "--dry-run", *RUN]
    yield "run --hosts 1", ["run", "--dry-run", "--hosts", "1", *RUN]


def variant(path: str, edits: dict[str, str], out: Path) -> Path:
    lines = (REPO / path).read_text().splitlines()
    seen: set[str] = set()
    text = []
    for line in lines:
        key = line.split("=", 1)[0].strip().removeprefix("export ").strip()
        if key in edits:
            seen.add(key)
            text.append(f'{key}="{edits[key]}"')
        else:
            text.append(line)
    text += [f'{k}="{v}"' for k, v in edits.items() if k not in seen]
    out.write_text("\n".join(text) + "\n")
    return out


def render_all(path: str, tmp: Path) -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    for label, edits in VARIANTS.items():
        if label == "external" and "node" in path:
            edits = {"MIG_EXTERNAL_IP": "true"}
        values = variant(path, edits, tmp / f"{Path(path).stem}.{label or 'as-is'}.env") if edits else REPO / path
        with golden.hermetic(tmp):
            for name, argv in commands():
                result = golden.run_case([argv[0], "--values", str(values), *argv[1:]])
                for key in ("stdout", "stderr"):  # the temporary folder is no part of the script
                    result[key] = str(result[key]).replace(str(tmp), "<tmp>").replace(str(REPO), "<repo>")
                results[f"{label}: {name}" if label else name] = result
    return results


def golden_path(path: str) -> Path:
    """Named as tests/data/golden's file for the same values file, in this folder."""
    return GOLDEN / golden.golden_path(path).name


def main() -> int:
    import tempfile

    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory() as tmp:
        written = {golden_path(path): render_all(path, Path(tmp)) for path in FILES}
    for out, data in written.items():
        out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"{out.relative_to(REPO)}: {len(data)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
