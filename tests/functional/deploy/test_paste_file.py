"""etc/masakari/api-paste.ini, where the reference's source tree has it, and what loading a
paste file logs."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support.deployment import ADMIN, Deployment

ROOT = Path(__file__).resolve().parents[3]
ETC_PASTE = ROOT / "etc" / "masakari" / "api-paste.ini"


def test_the_source_trees_api_paste_ini_serves() -> None:
    # devstack's plugin and the deployment tools copy it from there.
    with Deployment({"wsgi": {"api_paste_config": str(ETC_PASTE)}}) as d:
        assert d.request("GET", "/v1/segments", headers=ADMIN).json == {"segments": []}
        assert d.request("GET", "/v1/segments", headers={}).status_int == 401


def _authtoken_warnings(caplog: Any) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("keystonemiddleware") and r.levelno >= logging.WARNING
    ]


def test_a_paste_file_with_www_authenticate_uri_set_warns_of_nothing(caplog: Any) -> None:
    caplog.set_level(logging.INFO)
    with Deployment(
        {
            "wsgi": {"api_paste_config": str(ETC_PASTE)},
            "keystone_authtoken": {
                "www_authenticate_uri": "http://keystone.example.org/identity",
                "service_token_roles_required": "true",
            },
        }
    ):
        pass
    assert _authtoken_warnings(caplog) == []


@pytest.mark.parametrize("paste", [True, False], ids=["paste file", "built in"])
def test_a_missing_www_authenticate_uri_is_still_reported(caplog: Any, paste: bool) -> None:
    caplog.set_level(logging.INFO)
    extra: dict[str, dict[str, Any]] = {
        "keystone_authtoken": {"www_authenticate_uri": "", "service_token_roles_required": "true"}
    }
    if paste:
        extra["wsgi"] = {"api_paste_config": str(ETC_PASTE)}
    with Deployment(extra):
        pass
    warnings = _authtoken_warnings(caplog)
    assert len(warnings) == 1 and "www_authenticate_uri" in warnings[0], warnings
