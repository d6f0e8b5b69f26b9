from __future__ import annotations

from typing import Iterator, List

import pytest

from support import Coordinator, start_coordinator


@pytest.fixture(scope="session")
def coordinators() -> Iterator[List[Coordinator]]:
    """Two built coordinators on the shared Redis (each test uses its own namespace)."""
    started = [start_coordinator(), start_coordinator()]
    yield started
    for coordinator in started:
        coordinator.stop()
