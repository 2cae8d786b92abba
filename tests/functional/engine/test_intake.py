"""Intake: the loop picks candidates, the workers claim them, several claims at once."""

from __future__ import annotations

import threading
from typing import Any

from masakari.db import claims
from tests.support.engine import (
    add_host,
    add_segment,
    make_conf,
    notify,
    wait_for,
    wait_status,
)

LIFECYCLE = {"event": "LIFECYCLE", "vir_domain_event": "STOPPED_FAILED"}


def _notifications(db: Any, sim: Any, hosts: int) -> list[str]:
    """One VM notification on each of ``hosts`` idle hosts: every one may be claimed now."""
    seg = add_segment(db)
    nids = []
    for i in range(hosts):
        name = f"compute-{i}"
        sim.add_service(name)
        host = add_host(db, seg, name)
        vm = sim.add_server(host=name, metadata={"HA_Enabled": "True"})
        nids.append(notify(db, host, "VM", {**LIFECYCLE, "instance_uuid": vm}))
    return nids


class _Gate:
    """Wraps claims.claim: counts the claims inside it, and holds them until opened."""

    def __init__(self, real: Any, before: Any) -> None:
        self.real = real
        self.before = before
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.calls = 0

    def __call__(self, session: Any, *args: Any, **kwargs: Any) -> str:
        with self.lock:
            self.inside += 1
            self.calls += 1
            self.most = max(self.most, self.inside)
        try:
            # Before the claim's first statement: no database lock is held yet (SQLite's
            # BEGIN IMMEDIATE comes with the first statement).
            self.before()
            return self.real(session, *args, **kwargs)  # type: ignore[no-any-return]
        finally:
            with self.lock:
                self.inside -= 1


def test_workers_claim_several_notifications_at_once(db, sim, engine_factory, monkeypatch):
    # Four claims meet at a barrier inside the claim: a loop that claimed one notification
    # after the other would wait there alone until the barrier broke.
    parties = 4
    barrier = threading.Barrier(parties, timeout=20)
    broken: list[BaseException] = []

    def meet() -> None:
        try:
            barrier.wait()
        except threading.BrokenBarrierError as exc:
            broken.append(exc)
            raise

    gate = _Gate(claims.claim, meet)
    monkeypatch.setattr(claims, "claim", gate)
    nids = _notifications(db, sim, parties)
    engine_factory(make_conf(sim), sweep_interval=0.2)
    assert {wait_status(db, nid, timeout=60) for nid in nids} == {"finished"}
    assert not broken
    assert gate.most == parties
    # Exactly once: one claim per notification (a takeover after a renewal that came too
    # late on a loaded machine is not a claim of a new row), one stop per server in Nova.
    assert gate.calls == parties
    stops = [c for c in sim.nova_calls() if c["body"] == {"os-stop": None}]
    assert len(stops) == len({c["path"] for c in stops}) == parties


def test_claims_in_flight_stay_within_the_free_workers_and_are_not_renewed(
    db, sim, engine_factory, monkeypatch
):
    # Two workers, five idle hosts: at most two candidates are handed out at a time, while
    # their claims are held past a renewal round (engine_claim_renew_interval is 1 s).
    workers = 2
    opened = threading.Event()
    renewed: list[set[str]] = []
    real_renew = claims.renew

    def renew(session: Any, owner: str, tokens: dict[str, int], *args: Any) -> set[str]:
        renewed.append(set(tokens))
        return real_renew(session, owner, tokens, *args)  # type: ignore[no-any-return]

    gate = _Gate(claims.claim, lambda: opened.wait(30))
    monkeypatch.setattr(claims, "claim", gate)
    monkeypatch.setattr(claims, "renew", renew)
    nids = _notifications(db, sim, 5)
    # A long claim: the lease, counted from before the claim was sent, outlasts the wait.
    conf = make_conf(sim, engine_claim_timeout=20, engine_claim_margin=5)
    engine_factory(conf, sweep_interval=0.2, workers=workers)
    try:
        wait_for(lambda: gate.inside == workers, 20, "two claims in flight")
        # Sweeps, polls and renewal rounds go on meanwhile: none hands out a third candidate
        # or the same one twice, and the heartbeat has no claim to renew yet.
        threading.Event().wait(2.5)
        assert gate.inside == gate.calls == workers
        assert renewed == []
    finally:
        opened.set()
    assert {wait_status(db, nid, timeout=60) for nid in nids} == {"finished"}
    assert gate.most == workers
    assert gate.calls == len(nids)
