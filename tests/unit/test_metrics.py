"""masakari.metrics: the instruments of a process, created once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from masakari import metrics
from tests.support.clock import FakeClock


def test_threads_counting_at_once_in_a_fresh_process_all_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(metrics, "OWN", CollectorRegistry(auto_describe=True))
    monkeypatch.delenv(metrics.MULTIPROC_ENV, raising=False)
    real_counter = metrics.Counter

    def slow_counter(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.01)  # widens the window in which a second creation could start
        return real_counter(*args, **kwargs)

    monkeypatch.setattr(metrics, "Counter", slow_counter)
    # A fresh process: no instruments yet (the test process's own come back afterwards).
    monkeypatch.setattr(metrics, "instruments", metrics.Once(metrics._create))
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def count() -> None:
        start.wait()
        try:
            metrics.notification_received("COMPUTE_HOST", 409)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=count) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    value = metrics.OWN.get_sample_value(
        "masakari_notifications_received_total", {"type": "COMPUTE_HOST", "code": "409"}
    )
    assert value == 8


def test_database_gauges_are_read_once_per_cache_interval() -> None:
    from masakari.metrics import collect

    clock = FakeClock()
    clock.advance(100.0)
    collector = collect.DatabaseCollector(
        lambda: None,  # type: ignore[arg-type,return-value]
        cache_seconds=5.0,
        clock=clock.monotonic,
    )
    reads: list[float] = []

    def read() -> list[Any]:
        reads.append(clock.monotonic())
        return []

    collector._read = read  # type: ignore[method-assign]
    for _ in range(3):
        assert [f.name for f in collector.collect()] == ["masakari_database_up"]
    clock.advance(4.9)
    list(collector.collect())
    assert reads == [100.0]
    clock.advance(0.2)
    list(collector.collect())
    assert len(reads) == 2
