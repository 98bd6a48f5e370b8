"""The golden renderings: what ``tpubuild render`` and ``tpubuild plan`` print, byte for byte,
for every shipped values file × action × scope (a refactor must not change them).

``python tests/data/golden/generate.py --diff`` shows what the current code would change;
``python tests/data/golden/generate.py`` rewrites ``tests/data/golden/<file>.json`` from the
current code; ``tests/test_golden.py`` compares a fresh run with them. Regenerate only for a
change that *means* to change a rendering, and say so in the commit message.

Every case runs ``builder.cli.main`` in-process from the repository root with a relative
``--values`` path, no credentials (``--applied none`` or a file) and ``NO_COLOR``, so the output
depends on nothing but the code and the files.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
#: The day the goldens are rendered on (builder/config/calendar.py's clock, TPUBUILD_NOW).
TODAY = "2026-11-28T00:00:00Z"
GOLDEN = Path(__file__).resolve().parent

#: The values files: the shipped one, every example, the legacy node file.
FILES: tuple[str, ...] = ("values.env", *sorted(f"examples/{p.name}" for p in (REPO / "examples").glob("*.env")),
                          "tests/data/node-values.env")
ACTIONS = ("initialize", "create", "update", "destroy")
SCOPES: tuple[tuple[str, ...], ...] = ((), ("--tpu",), ("--mig",), ("--tpu", "--mig"))
#: Cases beyond action × scope: GitOps selections and the allow flags.
EXTRA: tuple[tuple[str, ...], ...] = (
    ("--action", "update", "--only", "tpu"),
    ("--action", "update", "--only", "shared_pd,filestore"),
    ("--action", "update", "--only", "dashboard"),
    ("--action", "destroy", "--allow-data-loss"),
    ("--action", "create", "--allow-wipe"),
    ("--action", "update", "--tpu", "--allow-wipe"),
)
#: A changed copy of each file that ``auto`` and the before → after comparison run against.
CHANGED = {"TPU_PYTORCH_VERSION": None, "SHARED_FS_CAPACITY": None, "SHARED_PD_DISK_SIZE": None}


#: The files an update moves to another zone: the zone its slice was in, first of the applied list
#: (a copy of the file whose ZONE puts that zone before the file's), so the update acts in the file's.
MOVED_FROM = {"examples/vm-v5p-32.env": "us-east5-b"}


def cases(path: str) -> Iterator[tuple[str, list[str]]]:
    for action in ACTIONS:
        for scope in SCOPES:
            args = ["--action", action, *scope]
            yield from _both(path, args)
    for extra in EXTRA:
        yield from _both(path, list(extra))
    yield f"render --format json --action create", ["render", "--values", path, "--format", "json",
                                                     "--action", "create", "--applied", "none"]
    yield f"plan --format json --action create", ["plan", "--values", path, "--format", "json",
                                                   "--action", "create", "--applied", "none"]
    for fmt in ("text", "json"):
        for action in ("auto", "update", "destroy"):
            yield (f"plan --format {fmt} --action {action} --applied <changed>",
                   ["plan", "--values", path, "--format", fmt, "--action", action, "--applied", "<changed>"])
    yield ("render --action auto --applied <changed>",
           ["render", "--values", path, "--action", "auto", "--applied", "<changed>"])
    if path in MOVED_FROM:  # an update that moves the environment to another zone (docs/capacity.md)
        for cmd in ("render", "plan"):
            yield (f"{cmd} --action update --applied <moved-from>",
                   [cmd, "--values", path, "--action", "update", "--applied", "<moved-from>"])
    yield ("render --action auto --applied <same>",
           ["render", "--values", path, "--action", "auto", "--applied", path])


def _both(path: str, args: list[str]) -> Iterator[tuple[str, list[str]]]:
    for cmd in ("render", "plan"):
        yield f"{cmd} {' '.join(args)}", [cmd, "--values", path, *args, "--applied", "none"]


def changed_copy(path: str, out: Path) -> Path:
    """``path`` as it was before a change: a smaller share and disk and another PyTorch pin, so
    the comparison has something to say for every architecture."""
    lines = (REPO / path).read_text().splitlines()
    edits = {"SHARED_FS_CAPACITY": "1024", "SHARED_PD_DISK_SIZE": "500", "TPU_PYTORCH_VERSION": "2.8.0"}
    text = []
    for line in lines:
        key = line.split("=", 1)[0].strip().removeprefix("export ").strip()
        text.append(f'{key}="{edits[key]}"' if key in edits else line)
    out.write_text("\n".join(text) + "\n")
    return out


def moved_from_copy(path: str, out: Path) -> Path:
    """``path`` as it was applied before the move: its ZONE list with :data:`MOVED_FROM` first."""
    lines = (REPO / path).read_text().splitlines()
    text = []
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip().removeprefix("export ").strip() == "ZONE":
            line = f'ZONE="{MOVED_FROM[path]},{value.strip().strip(chr(34))}"'
        text.append(line)
    out.write_text("\n".join(text) + "\n")
    return out


def run_case(argv: list[str]) -> dict[str, object]:
    from builder.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


@contextlib.contextmanager
def hermetic(tmp: Path) -> Iterator[None]:
    """No credentials, no emulators, no colour, the day pinned; cwd is the repository root."""
    saved = dict(os.environ)
    cwd = os.getcwd()
    for key in list(os.environ):
        if key.startswith(("GOOGLE_", "CLOUDSDK_", "STORAGE_EMULATOR", "TPUBUILD_")) or key == "NO_COLOR":
            del os.environ[key]
    os.environ["CLOUDSDK_CONFIG"] = str(tmp / "gcloud")
    os.environ["NO_COLOR"] = "1"
    os.environ["TPUBUILD_NOW"] = TODAY  # the calendar examples' "+14d" start is read against this day
    os.chdir(REPO)
    try:
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)


def render_all(path: str, tmp: Path) -> dict[str, dict[str, object]]:
    changed = changed_copy(path, tmp / (Path(path).stem + ".changed.env"))
    moved = moved_from_copy(path, tmp / (Path(path).stem + ".moved.env")) if path in MOVED_FROM else None
    swap = {"<changed>": str(changed), "<moved-from>": str(moved)}
    results: dict[str, dict[str, object]] = {}
    with hermetic(tmp):
        for name, argv in cases(path):
            argv = [swap.get(a, a) for a in argv]
            result = run_case(argv)
            for key in ("stdout", "stderr"):  # the temporary folder is no part of the rendering
                result[key] = str(result[key]).replace(str(changed), "<changed>")
                if moved is not None:
                    result[key] = str(result[key]).replace(str(moved), "<moved-from>")
            results[name] = result
    return results


def golden_path(path: str) -> Path:
    return GOLDEN / (Path(path).name.removesuffix(".env") + ".json")


def diff(tmp: Path) -> int:
    """``--diff``: print, per differing case, the changed lines (nothing is written)."""
    import difflib

    count = 0
    for path in FILES:
        expected = json.loads(golden_path(path).read_text())
        actual = render_all(path, tmp)
        for name in sorted(set(expected) | set(actual)):
            old, new = expected.get(name, {}), actual.get(name, {})
            for key in ("rc", "stdout", "stderr"):
                if old.get(key) != new.get(key):
                    count += 1
                    lines = difflib.unified_diff(str(old.get(key, "")).splitlines(), str(new.get(key, "")).splitlines(),
                                                 lineterm="", n=0)
                    print(f"{path} | {name} | {key}")
                    print("\n".join(f"    {line}" for line in list(lines)[2:]))
    print(f"{count} difference(s)")
    return 1 if count else 0


def main() -> int:
    import tempfile

    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[1:] == ["--diff"]:
            return diff(Path(tmp))
        for path in FILES:
            data = render_all(path, Path(tmp))
            golden_path(path).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            print(f"{golden_path(path).relative_to(REPO)}: {len(data)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
