"""masakari.server.application: what a worker does once its application is built."""

from __future__ import annotations

import gc
import sys

import pytest

import masakari.conf
from masakari.server import application, settings


def test_startup_objects_are_left_out_of_full_collections() -> None:
    gc.unfreeze()
    built_at_startup = [{"rule": i} for i in range(1000)]
    application.freeze_startup_objects()
    try:
        assert gc.get_freeze_count() >= len(built_at_startup)
        # A full collection walks the objects of generation 2; frozen ones are not there.
        walked = {id(o) for o in gc.get_objects(generation=2)}
        assert id(built_at_startup) not in walked
        assert not any(id(d) in walked for d in built_at_startup)
        made_later = [{"request": 1}]
        gc.collect()
        assert id(made_later) in {id(o) for o in gc.get_objects(generation=2)}
    finally:
        gc.unfreeze()


def test_a_worker_hands_the_gil_on_sooner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(application.api_app, "build", lambda conf: lambda environ, start: [])
    monkeypatch.setattr(application, "freeze_startup_objects", lambda: None)
    before = sys.getswitchinterval()
    server = application.APIServer.__new__(application.APIServer)
    server.conf = masakari.conf.for_tests()
    try:
        server.load()
        assert sys.getswitchinterval() == settings.GIL_SWITCH_INTERVAL < before
    finally:
        sys.setswitchinterval(before)
