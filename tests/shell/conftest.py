"""Fixtures shared by the shell tests that run startup.sh and the seeder in the sandbox of
test_startup_sandbox.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_startup_sandbox import MetadataServer, metadata_server


@pytest.fixture
def md() -> Iterator[MetadataServer]:
    """A fake GCE metadata server on 127.0.0.1 for one test (``md.attrs(...)`` sets what it serves)."""
    with metadata_server() as server:
        yield server


#: The counts the convergence tests' last tests write (pipelines, stop points, converged):
#: test_converge.py's and test_converge_recovery.py's, read back at the end of the session so CI's
#: log shows them under -n auto too (a worker's output is not shown).
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
