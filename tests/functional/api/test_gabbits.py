"""The HTTP surface as stories: one YAML file per story in gabbits/, run in-process.

Each story is one pytest test. gabbi's own pytest plugin is not used: it takes every
parametrised test id with a ":" for one of its own, which breaks other test modules.
"""

from __future__ import annotations

import os
import unittest

import pytest
from gabbi import driver

from tests.functional.api import fixtures

GABBITS = os.path.join(os.path.dirname(__file__), "gabbits")
STORIES = sorted(name[: -len(".yaml")] for name in os.listdir(GABBITS) if name.endswith(".yaml"))
PREFIX = "gabbits"


def _report(result: unittest.TestResult) -> str:
    return "\n\n".join(f"{test}:\n{trace}" for test, trace in result.failures + result.errors)


@pytest.mark.parametrize("story", STORIES)
def test_story(story: str) -> None:
    suites = driver.build_tests(
        GABBITS,
        unittest.TestLoader(),
        intercept=fixtures.app,
        fixture_module=fixtures,
        test_loader_name=PREFIX,
    )
    for file_suite in suites:
        tests = list(file_suite)
        if tests and type(tests[0]).__name__.startswith(f"{story}_"):
            result = unittest.TestResult()
            file_suite.run(result)
            assert result.testsRun == len(tests)
            assert result.wasSuccessful(), _report(result)
            return
    pytest.fail(f"no tests built for {story}.yaml")
