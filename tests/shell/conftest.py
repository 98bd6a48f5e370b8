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
