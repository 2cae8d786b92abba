"""The route table: what matches, in which order, and what is left to the plain 404."""

from __future__ import annotations

import pytest

from masakari.api import router
from masakari.api.handlers import extensions, hosts, notifications, segments, versions, vmoves

MAPPER_ACTIONS = {"index", "create", "new", "show", "update", "delete", "edit", "action"}
UUID = "00000000-0000-4000-8000-000000000001"


@pytest.fixture(scope="module")
def table() -> router.Router:
    return router.Router(state=None)


def test_unimplemented_targets_are_mapper_action_names() -> None:
    for methods in router.ROUTES.values():
        for target in methods.values():
            if isinstance(target, router.Since):
                # Served from a microversion on; below it, the mapper's action as before.
                assert callable(target.handler) and target.action in MAPPER_ACTIONS
            else:
                assert callable(target) or target in MAPPER_ACTIONS


@pytest.mark.parametrize(
    ("method", "path", "target", "args"),
    [
        ("GET", "", versions.show, {}),
        ("GET", "/", versions.show, {}),
        ("GET", "/segments", segments.index, {}),
        ("GET", "/segments.json", segments.index, {}),
        ("POST", "/segments.xml", segments.create, {}),
        ("GET", f"/segments/{UUID}", segments.show, {"id": UUID}),
        ("GET", f"/segments/{UUID}.json", segments.show, {"id": UUID}),
        ("GET", f"/segments/{UUID}.yaml", segments.show, {"id": UUID + ".yaml"}),
        ("PUT", "/segments/new", segments.update, {"id": "new"}),
        ("GET", "/segments/new", "new", {}),
        ("GET", "/segments/x/edit", "edit", {"id": "x"}),
        ("POST", "/segments/x/action", "action", {"id": "x"}),
        ("GET", "/segments/s/hosts", hosts.index, {"segment_id": "s"}),
        ("DELETE", "/segments/s/hosts/h.json", hosts.delete, {"segment_id": "s", "id": "h"}),
        ("PUT", "/notifications/n", "update", {"id": "n"}),
        ("GET", "/notifications/n/vmoves/v", vmoves.show, {"notification_id": "n", "id": "v"}),
        ("POST", "/notifications/n/vmoves", "create", {"notification_id": "n"}),
        ("POST", "/notifications", notifications.create, {}),
        ("GET", "/extensions/segments.json", extensions.show, {"id": "segments"}),
        ("GET", "/versions", "index", {}),
        ("GET", "/versions/v1.0", versions.show, {"id": "v1.0"}),
        ("GET", "/abc-123/segments", segments.index, {"project_id": "abc-123"}),
        (
            "GET",
            "/abc/segments/s/hosts.json",
            hosts.index,
            {"project_id": "abc", "segment_id": "s"},
        ),
    ],
)
def test_matches(table: router.Router, method: str, path: str, target: object, args: dict) -> None:
    assert table.match(method, path) == (target, args)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", ""),
        ("GET", "/segments/"),
        ("GET", "/segments.txt"),
        ("PATCH", "/segments/x"),
        ("POST", "/segments/x"),
        ("GET", "/segments/x/action"),
        ("PUT", "/segments"),
        ("DELETE", "/segments"),
        ("POST", "/segments/s/hosts/h/action"),
        ("POST", "/notifications/n/vmoves/v/action"),
        ("HEAD", "/notifications"),
        ("GET", "/hosts"),
        ("GET", "/os-hosts"),
        ("GET", "/project-admin/segments"),
        ("GET", "/ABCDEF/segments"),
        ("GET", "/abcdef"),
        ("GET", "/abcdef/"),
    ],
)
def test_outside_the_table(table: router.Router, method: str, path: str) -> None:
    assert table.match(method, path) is None


def test_project_id_regex_is_configurable() -> None:
    table = router.Router(state=None, project_id_regex="project-[a-z]+")
    assert table.match("GET", "/project-admin/segments") == (
        segments.index,
        {"project_id": "project-admin"},
    )
    assert table.match("GET", "/abcdef/segments") is None
