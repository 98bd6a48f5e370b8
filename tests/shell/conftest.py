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


#: The count test_converge.py's last test writes (pipelines, stop points, converged), read back at
#: the end of the session so CI's log shows it under -n auto too (a worker's output is not shown).
CONVERGE_KEY = "tpubuild/converge-summary"


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput") and session.config.cache is not None:
        session.config.cache.set(CONVERGE_KEY, "")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    line = config.cache.get(CONVERGE_KEY, "") if config.cache is not None else ""
    if line:
        terminalreporter.write_line(line)
