"""Options shared by every test directory, and how pytest-xdist shares the tests out."""

from typing import Any

import pytest

# Tests that must run on one pytest-xdist worker, by path: tests/galera's cluster is a session
# fixture (three mariadbd), which each worker running one of them would start again; so is
# tests/ceph's (a mon, a mgr and an OSD).
ONE_WORKER = ("tests/galera/", "tests/ceph/")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--require-servers",
        action="store_true",
        default=False,
        help="fail, instead of skipping, tests whose PostgreSQL or MariaDB server is unreachable",
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadgroup, with the ONE_WORKER directories as groups.

    pytest-xdist 3.8 marks an xdist_group by renaming the test (item._nodeid), which pytest 9
    no longer reads: the marker alone would leave the group spread over the workers.
    """
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class DirectoryGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for prefix in ONE_WORKER:
                if nodeid.startswith(prefix):
                    return prefix
            return str(super()._split_scope(nodeid))

    return DirectoryGroups(config, log)
