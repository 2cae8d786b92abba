"""gabbi fixtures: each story runs against a fresh deployment (tokens in $ENVIRON)."""

from __future__ import annotations

import os
from typing import Any

from gabbi import fixture

from tests.fakes import nova as fake_nova
from tests.support.deployment import Deployment

_current: dict[str, Deployment] = {}


def app() -> Any:
    """The intercept. gabbi 4 asks for it when it builds the tests, before any fixture has
    started: hand it a WSGI callable that finds the story's deployment per request."""

    def lazy(environ: dict[str, Any], start_response: Any) -> Any:
        return _current["deployment"].app(environ, start_response)

    return lazy


class APIFixture(fixture.GabbiFixture):  # type: ignore[misc]
    def start_fixture(self) -> None:
        _current["deployment"] = Deployment()
        os.environ["ADMIN_TOKEN"] = fake_nova.ADMIN_TOKEN
        os.environ["MEMBER_TOKEN"] = fake_nova.MEMBER_TOKEN
        os.environ["ADMIN_PROJECT_ID"] = fake_nova.ADMIN_PROJECT_ID

    def stop_fixture(self) -> None:
        _current.pop("deployment").close()


class LatestAPIFixture(APIFixture):
    """The API past 1.3: every microversion served (1.8), and UNKNOWN host reports held."""

    def start_fixture(self) -> None:
        _current["deployment"] = Deployment(
            {
                "DEFAULT": {"api_max_microversion": "1.10"},
                "guards": {"hold_unknown_host_reports": "true"},
            }
        )
        os.environ["ADMIN_TOKEN"] = fake_nova.ADMIN_TOKEN
        os.environ["MEMBER_TOKEN"] = fake_nova.MEMBER_TOKEN
        os.environ["ADMIN_PROJECT_ID"] = fake_nova.ADMIN_PROJECT_ID
