"""Shared test helpers.

* ``REPO``: the repository root.
* ``cli`` fixture: runs ``tpubuild`` in-process and returns ``(code, stdout, stderr)``.
* ``make_env`` fixture: writes a values.env in tmp_path from the shipped one (or an example)
  with keys replaced, added (``KEY="v"``) or removed (``KEY=None``).
* ``run_tpubuild``: runs the real console script in a subprocess.
* ``no_cloud`` fixture: no emulator endpoints and no credentials anywhere google.auth looks
  (``HOME`` and ``CLOUDSDK_CONFIG`` are empty folders, no metadata server); ``NO_CLOUD`` lists the
  variables it removes. Any client construction then fails with "no Google Cloud credentials".
* Files with a ``slow`` test run first (``pytest_collection_modifyitems``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "values.env"
#: A TPU Node values.env (the seed-era shipped file): tests of node behaviour
#: (legacy: destroy/status only) and of `tpubuild migrate` use it.
NODE = REPO / "tests" / "data" / "node-values.env"
EXAMPLES = REPO / "examples"
#: Every test runs on one day (builder/config/calendar.py's clock), in-process and in the console
#: scripts it starts, so the calendar examples' "+14d" and the goldens read the same dates on any day.
TODAY = "2026-11-28T00:00:00Z"
os.environ["TPUBUILD_NOW"] = TODAY
#: Every test prices from the bundled snapshot (builder/data/prices.json) unless it writes a catalogue cache
#: of its own: a `tpubuild prices update` on this machine never changes what the suite sees.
os.environ["TPUBUILD_PRICES_CACHE"] = str(REPO / "tests" / "data" / "billing" / "no-cache")


def rewrite_env(base_text: str, **overrides: str | None) -> str:
    lines = base_text.splitlines()
    for key, value in overrides.items():
        pat = re.compile(rf"^\s*(export\s+)?{re.escape(key)}\s*=")
        idx = [i for i, line in enumerate(lines) if pat.match(line)]
        for i in reversed(idx):
            del lines[i]
        if value is not None:
            new = f'{key}="{value}"'
            lines.insert(idx[0] if idx else len(lines), new)
    return "\n".join(lines) + "\n"


@pytest.fixture
def make_env(tmp_path: Path) -> Callable[..., Path]:
    counter = iter(range(10_000))

    def make(base: str | Path = SHIPPED, **overrides: str | None) -> Path:
        text = Path(base).read_text() if Path(base).exists() else str(base)
        out = tmp_path / f"values{next(counter)}.env"
        out.write_text(rewrite_env(text, **overrides))
        return out

    return make


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    from builder.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


#: Environment variables that point tpubuild's clients at emulators or at credentials.
NO_CLOUD = ("STORAGE_EMULATOR_HOST", "TPUBUILD_CLOUDBUILD_ENDPOINT", "TPUBUILD_TPU_ENDPOINT",
            "TPUBUILD_TPU_V1_ENDPOINT", "TPUBUILD_FILESTORE_ENDPOINT", "TPUBUILD_COMPUTE_ENDPOINT",
            "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT",
            "TPUBUILD_IAM_ENDPOINT", "TPUBUILD_RESOURCEMANAGER_ENDPOINT", "TPUBUILD_QUOTAS_ENDPOINT",
            "TPUBUILD_BILLING_ENDPOINT", "TPUBUILD_BILLING_API_KEY")


@pytest.fixture
def no_cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A process (and its children) that can reach no cloud and has no credentials: the emulator
    variables are removed, google.auth finds no ADC file (empty HOME and CLOUDSDK_CONFIG) and no
    metadata server (NO_GCE_CHECK, and a closed local port in case the check already ran).
    Returns the variables it set."""
    from builder.cloud import clients

    home = tmp_path / "empty-home"
    home.mkdir(exist_ok=True)
    for var in NO_CLOUD:
        monkeypatch.delenv(var, raising=False)
    env = {"HOME": str(home), "CLOUDSDK_CONFIG": str(home / "gcloud"), "NO_GCE_CHECK": "true",
           "GCE_METADATA_HOST": "127.0.0.1:9", "GCE_METADATA_IP": "127.0.0.1:9"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    clients.credentials.cache_clear()
    yield env
    clients.credentials.cache_clear()


def tpubuild_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("tpubuild")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "builder"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding a ``slow`` test first, each file's tests kept together and in order.

    setup.cfg runs the suite on every core (pytest-xdist, ``-n auto --dist loadfile``): a file is
    one unit of work, so the few long files (real Terraform, real torch_xla, pip's resolver) must
    start early, not be left to run alone at the end while the other workers idle. xdist hands
    out files in this order because of ``--no-loadscope-reorder`` (its own order, most tests
    first, put the two-test torch_xla file last).
    """
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # stable: files stay contiguous, in order

def run_tpubuild(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([*tpubuild_cmd(), *map(str, args)], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def require(what: str, available: bool, how: str) -> None:
    """Skip a test whose tool is not installed, except in CI (TPUBUILD_REQUIRE_ALL=1), where a
    missing tool is a failure: what an issue asks to verify must really run there."""
    if available:
        return
    message = f"{what} is not installed ({how})"
    if os.environ.get("TPUBUILD_REQUIRE_ALL") == "1":
        pytest.fail(message + "; CI must install it", pytrace=False)
    pytest.skip(message, allow_module_level=True)  # also at a test module's top, before an import needs it


@pytest.fixture(scope="session")
def gcloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The real gcloud, offline (``tests.support.gcloud.Gcloud``): ``gcloud.parse(argv)`` tells
    whether a command line we emit parses. One throwaway config and fake per test session."""
    import shutil

    from tests.support.gcloud import Gcloud

    require("gcloud", shutil.which("gcloud") is not None, "apt-get install google-cloud-cli")
    g = Gcloud(tmp_path_factory.mktemp("gcloud"))
    yield g
    g.close()


#: The counts the convergence tests' last tests write (pipelines, stop points, converged):
#: tests/shell/test_converge.py's and test_converge_recovery.py's, read back at the end of the
#: session so CI's log shows them under -n auto too (a worker's output is not shown). These hooks
#: live here, not in tests/shell/conftest.py: under xdist the controller, which prints the summary,
#: loads only this conftest.
CONVERGE_KEYS = ("tpubuild/converge-summary", "tpubuild/converge-recovery-summary")


def pytest_sessionstart(session: pytest.Session) -> None:
    cache = getattr(session.config, "cache", None)  # None without the cache plugin (-p no:cacheprovider)
    if not hasattr(session.config, "workerinput") and cache is not None:
        for key in CONVERGE_KEYS:
            cache.set(key, "")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for key in CONVERGE_KEYS:
        cache = getattr(config, "cache", None)
        line = cache.get(key, "") if cache is not None else ""
        if line:
            terminalreporter.write_line(line)
