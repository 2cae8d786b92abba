"""Options shared by every test directory."""

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--require-servers",
        action="store_true",
        default=False,
        help="fail, instead of skipping, tests whose PostgreSQL or MariaDB server is unreachable",
    )
