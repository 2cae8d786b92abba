"""The sources an engine's fence_kdump listener keeps: the fencing file's kdump addresses for
the hosts of the database (exact entries, patterns with {host}, segment defaults), resolved,
refreshed by a periodic task of every engine that listens."""

from __future__ import annotations

import json
from pathlib import Path

from masakari.db.database import Database
from masakari.engine.fencing import HostFencing
from masakari.engine.kdump_sources import KdumpSources
from masakari.fencing import drivers
from masakari.fencing.config import FencingFile
from tests.support.engine import add_host, add_segment


def sources(db: Database, tmp_path: Path, resolve=None) -> KdumpSources:  # type: ignore[no-untyped-def]
    path = tmp_path / "fencing.yaml"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "hosts": {
                    "compute-1": [{"driver": "kdump", "address": "192.0.2.1"}],
                    "rack2-*": [{"driver": "kdump", "address": "{host}.kdump"}],
                    "compute-9": [],  # no driver, whatever its segment says
                },
                "segments": {"edge": [{"driver": "kdump", "address": "198.51.100.7"}]},
            }
        )
    )
    path.chmod(0o600)
    fencing = HostFencing(plan=FencingFile.load(str(path)), power_driver=drivers.power_driver)
    names = {"rack2-1.kdump": {"192.0.2.21"}, "rack2-2.kdump": {"192.0.2.22", "2001:db8::22"}}

    def fake_resolve(address: str) -> set[str]:
        if address in names:
            return names[address]
        if address[0].isdigit():
            return {address}
        raise OSError("Name or service not known")

    return KdumpSources(db, fencing, resolve=resolve or fake_resolve)


def test_every_known_hosts_kdump_addresses_are_kept(db: Database, tmp_path: Path) -> None:
    segment = add_segment(db)
    edge = add_segment(db, name="edge")
    for name in ("compute-1", "rack2-1", "rack2-2", "rack2-3"):
        add_host(db, segment, name)
    add_host(db, edge, "edge-1")
    add_host(db, edge, "compute-9")
    kept = sources(db, tmp_path)
    assert not kept.allows("192.0.2.1")  # nothing before the first refresh
    kept.refresh()
    # rack2-3.kdump does not resolve: its messages are dropped (the check says so too)
    assert kept.addresses == {
        "192.0.2.1",
        "192.0.2.21",
        "192.0.2.22",
        "2001:db8::22",
        "198.51.100.7",
    }
    assert not kept.allows("192.0.2.99")


def test_a_host_added_later_is_kept_from_the_next_refresh(db: Database, tmp_path: Path) -> None:
    segment = add_segment(db)
    kept = sources(db, tmp_path)
    kept.refresh()
    assert kept.addresses == frozenset()  # a pattern's entry names no host by itself
    add_host(db, segment, "rack2-1")
    kept.refresh()
    assert kept.allows("192.0.2.21")
