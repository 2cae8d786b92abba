"""The HTTP surface as stories: one YAML file per story in gabbits/, run in-process."""

from __future__ import annotations

import os
from typing import Any

from gabbi import driver
from gabbi.driver import test_pytest  # noqa: F401  (the test function gabbi parametrises)

from tests.functional.api import fixtures

GABBITS = os.path.join(os.path.dirname(__file__), "gabbits")


def pytest_generate_tests(metafunc: Any) -> None:
    driver.py_test_generator(
        GABBITS,
        intercept=fixtures.app,
        fixture_module=fixtures,
        metafunc=metafunc,
        test_loader_name=__name__,
    )
