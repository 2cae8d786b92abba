"""masakari.server.application: what a worker does once its application is built."""

from __future__ import annotations

import gc

from masakari.server import application


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
