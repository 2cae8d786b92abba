"""The API's queries and rules on SQLite, PostgreSQL and MariaDB: paging, filters, rules."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from masakari import exception
from masakari.db.database import Database
from masakari.ha import hosts, notifications, segments


def no_check(name: str) -> None:
    return None


def make_segment(db: Database, name: str, **fields: Any) -> str:
    data = {"name": name, "recovery_method": "auto", "service_type": "compute", **fields}
    return segments.create(db, data).uuid


def make_host(db: Database, segment: str, name: str, **fields: Any) -> str:
    data = {"name": name, "type": "COMPUTE", "control_attributes": "ssh", **fields}
    return hosts.create(db, no_check, segment, data).uuid


def notify(db: Database, host: str, when: str, **payload: str) -> Any:
    data = {
        "type": "PROCESS",
        "hostname": host,
        "generated_time": when,
        "payload": payload or {"event": "STOPPED", "process_name": "nova-compute"},
    }
    return notifications.create(db, data)


def names(rows: list[Any]) -> list[str]:
    return [row.name for row in rows]


def test_default_order_is_newest_first_and_markers_are_ids(db: Database) -> None:
    for name in ("a", "b", "c", "d"):
        make_segment(db, name)
    default = segments.list_(db, {}, ["created_at"], ["desc"], 1000, None)
    assert names(default) == ["d", "c", "b", "a"]
    page = segments.list_(db, {}, ["created_at"], ["desc"], 2, str(default[1].id))
    assert names(page) == ["b", "a"]
    asc = segments.list_(db, {}, ["name"], ["asc"], 2, str(default[3].id))
    assert names(asc) == ["b", "c"]
    assert segments.list_(db, {}, ["created_at"], ["desc"], 0, "garbage") == []


@pytest.mark.parametrize("direction", ["asc", "desc"])
def test_pages_after_markers_with_ties_in_the_first_key(db: Database, direction: str) -> None:
    seg = make_segment(db, "s")
    make_host(db, seg, "compute-1")
    # Three notifications share each generated_time: the next page starts among equals.
    for i in range(9):
        notify(db, "compute-1", f"2026-03-0{1 + i // 3}T00:00:00", process_name=f"p{i}")
    whole = notifications.list_(db, {}, ["generated_time"], [direction], 100, None)
    paged: list[Any] = []
    marker = None
    while True:
        page = notifications.list_(db, {}, ["generated_time"], [direction], 2, marker)
        if not page:
            break
        paged += page
        marker = str(page[-1].id)
    assert [row.id for row in paged] == [row.id for row in whole]
    assert len(whole) == 9


@pytest.mark.parametrize(
    "marker", ["999", "abc", "1.0", "9" * 30, "00000000-0000-4000-8000-000000000000"]
)
def test_unknown_markers_are_refused(db: Database, marker: str) -> None:
    make_segment(db, "a")
    with pytest.raises(exception.MarkerNotFound):
        segments.list_(db, {}, ["created_at"], ["desc"], 10, marker)


def test_sort_keys_and_directions(db: Database) -> None:
    make_segment(db, "m", description="bravo")
    make_segment(db, "z", recovery_method="reserved_host")
    make_segment(db, "k", service_type="storage", enabled=False)
    two = segments.list_(db, {}, ["service_type", "name"], ["desc", "asc"], 10, None)
    assert names(two) == ["k", "m", "z"]
    assert names(segments.list_(db, {}, ["enabled"], ["asc"], 10, None))[0] == "k"
    with pytest.raises(exception.InvalidSortKey) as raised:
        segments.list_(db, {}, ["hosts"], ["asc"], 10, None)
    assert raised.value.format_message() == "InvalidSortKey('Sort key supplied is invalid: hosts')"
    with pytest.raises(exception.InvalidInput, match="Unknown sort direction"):
        segments.list_(db, {}, ["name"], ["up"], 10, None)
    with pytest.raises(exception.InvalidInput, match="exceeds sort key size"):
        segments.list_(db, {}, ["name"], ["asc", "desc"], 10, None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", ["on"]), ("0", ["off"]), ("1.0", ["on"]), ("true", []), ("perhaps", [])],
)
def test_enabled_filter_compares_the_raw_string(
    db: Database, value: str, expected: list[str]
) -> None:
    make_segment(db, "on")
    make_segment(db, "off", enabled=False)
    assert names(segments.list_(db, {"enabled": value}, ["name"], ["asc"], 10, None)) == expected


def test_segment_delete_frees_its_name_and_its_hosts(db: Database) -> None:
    seg = make_segment(db, "s")
    make_host(db, seg, "compute-1")
    segments.delete(db, seg)
    with pytest.raises(exception.SegmentNotFound):
        segments.get(db, seg)
    again = make_segment(db, "s")
    make_host(db, again, "compute-1")
    with pytest.raises(exception.SegmentExists):
        make_segment(db, "s")
    with pytest.raises(exception.HostExists):
        make_host(db, again, "compute-1")


def test_host_lists_filter_flags_and_read_their_segment_once(db: Database) -> None:
    seg = make_segment(db, "s")
    other = make_segment(db, "t")
    make_host(db, seg, "h1", reserved=True)
    make_host(db, seg, "h2", on_maintenance="yes")
    make_host(db, other, "h3", reserved=True)
    reserved = hosts.list_(db, seg, {"reserved": True}, ["name"], ["asc"], 10, None)
    assert names(reserved) == ["h1"]
    # The list's rows carry the segment's uuid; its body is read once per list.
    assert reserved[0].failover_segment_id == seg
    assert hosts.get_segment(db, seg).name == "s"
    assert names(hosts.list_(db, seg, {"on_maintenance": False}, ["name"], ["asc"], 10, None)) == [
        "h1"
    ]


def test_a_reused_list_statement_takes_each_requests_values(db: Database) -> None:
    """A list's statement is built once per form: its filter values and limit are bound per
    request, never those of the request that built it."""
    first = make_segment(db, "first")
    second = make_segment(db, "second")
    for i in range(3):
        make_host(db, first, f"a{i}", reserved=i == 0)
        make_host(db, second, f"b{i}", reserved=i != 0)
    for seg, reserved, limit, expected in (
        (first, True, 10, ["a0"]),
        (second, True, 10, ["b1", "b2"]),
        (second, True, 1, ["b1"]),
        (first, False, 10, ["a1", "a2"]),
    ):
        rows = hosts.list_(db, seg, {"reserved": reserved}, ["name"], ["asc"], limit, None)
        assert names(rows) == expected
    assert names(segments.list_(db, {"enabled": "1"}, ["name"], ["asc"], 10, None)) == [
        "first",
        "second",
    ]
    assert segments.list_(db, {"enabled": "0"}, ["name"], ["asc"], 10, None) == []


def test_notifications_duplicates_maintenance_and_in_use(db: Database) -> None:
    seg = make_segment(db, "s")
    host = make_host(db, seg, "compute-1")
    first = notify(db, "compute-1", "2026-04-01T10:00:00")
    assert first.status == "new" and first.failover_segment_uuid == seg
    for when in ("2026-04-01T10:03:00", "2026-04-01T09:00:00", "2026-04-01T12:01:00+02:00"):
        with pytest.raises(exception.DuplicateNotification):
            notify(db, "compute-1", when)
    notify(db, "compute-1", "2026-04-01T10:03:01")
    notify(db, "compute-1", "2026-04-01T10:00:00", event="STARTED", process_name="nova-compute")
    with pytest.raises(exception.SegmentInUse):
        segments.update(db, seg, {"description": "x"})
    with pytest.raises(exception.HostInUse):
        hosts.delete(db, seg, host)
    with pytest.raises(exception.HostNotFoundByName):
        notify(db, "compute-9", "2026-04-01T10:00:00")


def test_host_on_maintenance_refuses_notifications(db: Database) -> None:
    seg = make_segment(db, "s")
    make_host(db, seg, "compute-1", on_maintenance=True)
    with pytest.raises(exception.HostOnMaintenance) as raised:
        notify(db, "compute-1", "2026-04-01T10:00:00")
    assert raised.value.format_message() == (
        "Notification received from host compute-1 of type 'PROCESS' is ignored as the host "
        "is already under maintenance."
    )


def test_generated_since_and_microseconds(db: Database) -> None:
    seg = make_segment(db, "s")
    make_host(db, seg, "compute-1")
    row = notify(db, "compute-1", "2026-03-01T05:00:00+02:00")
    assert row.generated_time == datetime.datetime(2026, 3, 1, 3, 0)
    since = {"generated-since": datetime.datetime(2026, 3, 1, 3, 0)}
    assert len(notifications.list_(db, since, ["created_at"], ["desc"], 10, None)) == 1
    later = {"generated-since": datetime.datetime(2026, 3, 1, 3, 0, 1)}
    assert notifications.list_(db, later, ["created_at"], ["desc"], 10, None) == []


def test_the_first_instant_has_a_window_too(db: Database) -> None:
    seg = make_segment(db, "s")
    make_host(db, seg, "compute-1")
    assert notify(db, "compute-1", "0001-01-01T00:00:00").status == "new"
    with pytest.raises(exception.DuplicateNotification):
        notify(db, "compute-1", "0001-01-01T00:01:00")
