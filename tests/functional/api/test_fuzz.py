"""Fuzzing every operation with hypothesis: whatever the input, never a 500."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from masakari.api import router
from tests.support.deployment import ADMIN, Deployment, Objects

EXAMPLES = int(os.environ.get("MASAKARI_FUZZ_EXAMPLES", "120"))


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[Deployment, dict[str, str]]]:
    """A deployment with one of everything, and the ids to put in paths."""
    with Deployment() as d:
        o = Objects(d)
        segment = o.segment(enabled=False)
        host = o.host(segment, "compute-1")
        notification = o.notification("compute-1", "COMPUTE_HOST", event="STOPPED")
        vmove = o.vmove(notification)
        yield (
            d,
            {
                "segment_id": segment,
                "id": host,
                "notification_id": notification,
                "vmove": vmove,
            },
        )


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
url_parts = st.one_of(
    texts.map(lambda t: t or "x"),
    st.integers(-(2**70), 2**70).map(str),
    st.uuids().map(str),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
FIELDS = [
    "segment", "host", "notification", "name", "description", "recovery_method", "service_type",
    "enabled", "type", "control_attributes", "reserved", "on_maintenance", "hostname",
    "generated_time", "payload", "event", "process_name", "instance_uuid", "vir_domain_event",
    "host_status", "cluster_status",
]  # fmt: skip
DATES = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01", "2026-02-30"]
bodies = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | texts
    | st.sampled_from(["auto", "COMPUTE_HOST", "PROCESS", "True", "2026-01-01T00:00:00"])
    | st.sampled_from(DATES),
    lambda inner: st.dictionaries(st.sampled_from(FIELDS) | texts, inner, max_size=6),
    max_leaves=16,
)  # fmt: skip
QUERY_KEYS = [
    "limit", "marker", "sort_key", "sort_dir", "page_size", "status", "type", "enabled",
    "recovery_method", "service_type", "reserved", "on_maintenance", "generated-since",
    "source_host_uuid",
]  # fmt: skip
queries = st.lists(
    st.tuples(
        st.sampled_from(QUERY_KEYS),
        st.one_of(texts, st.integers().map(str), st.sampled_from(DATES)),
    ),
    max_size=4,
)
versions = st.one_of(
    st.none(),
    st.sampled_from(["1.0", "1.1", "1.2", "1.3", "latest", "1.4", "0.9", "x"]),
    texts,
)
media_types = st.sampled_from(
    [None, "application/json", "text/plain", "application/vnd.openstack.masakari+json",
     "application/xml", "multipart/form-data; boundary=x"]
)  # fmt: skip
OPERATIONS = [(method, path) for path, methods in router.ROUTES.items() for method in methods] + [
    ("PATCH", "/segments/{id}"),
    ("HEAD", "/segments"),
    ("OPTIONS", "/notifications"),
]


def fill(path: str, ids: dict[str, str], data: st.DataObject) -> str:
    for name in ("segment_id", "notification_id", "id"):
        if f"{{{name}}}" in path:
            value = data.draw(st.one_of(st.just(ids[name]), st.just(ids["vmove"]), url_parts))
            path = path.replace(f"{{{name}}}", quote(value, safe=""))
    return path


@pytest.mark.parametrize(
    ("method", "template"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS]
)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_never_a_server_error(
    world: tuple[Deployment, dict[str, str]], method: str, template: str, data: st.DataObject
) -> None:
    deployment, ids = world
    path = "/v1" + fill(template, ids, data)
    query = data.draw(queries)
    headers = dict(ADMIN)
    version = data.draw(versions)
    if version is not None:
        headers["OpenStack-API-Version"] = f"instance-ha {version}"
    media_type = data.draw(media_types)
    if media_type is not None:
        headers["Content-Type"] = media_type
    raw: bytes | None = None
    if method in ("POST", "PUT"):
        if data.draw(st.booleans()):
            raw = json.dumps(data.draw(bodies)).encode()
        else:
            raw = data.draw(st.binary(max_size=64))
    target = path + ("?" + urlencode(query) if query else "")
    response: Any = deployment.request(method, target, headers=headers, raw=raw)
    assert response.status_int < 500, (method, target, raw, response.text)


@pytest.mark.parametrize(
    "target",
    [
        "/%ff",
        "/v1/%ff",
        "/v1/segments/%ff",
        "/v1/notifications/%ff",
        "/v1/segments?sort_key=%ff",
        "/v1/notifications?status=%ff",
        "/v1/segments?marker=%ff",
    ],
)
def test_url_that_is_not_utf8_is_a_bad_request(
    world: tuple[Deployment, dict[str, str]], target: str
) -> None:
    deployment, _ = world
    response: Any = deployment.request("GET", target, headers=dict(ADMIN))
    assert response.status_int == 400, response.text
    assert response.json["badRequest"]["message"] == "The request URL is not valid UTF-8."
