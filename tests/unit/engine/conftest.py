"""Fixtures: the fake clock (an idle run and options: tests/support/runs.py).

The engine's parts that need Nova or a database are tested in tests/functional/engine/runs
(the simulator and SQLite, on the same fake clock).
"""

from __future__ import annotations

import pytest

from tests.support.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
