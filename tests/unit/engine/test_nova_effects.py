"""The checked changes: after an ambiguous failure Nova is read before anything is sent again,
so that no change is made twice; and nothing is sent once the lease is over. Against the
simulator, in process."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from masakari import exception
from masakari.compute import retry
from masakari.compute.nova import NovaClient
from masakari.db import statuses as st
from masakari.db import vmoves
from masakari.db.models import InstancePlan
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.nova_effects import NovaChanges
from masakari.engine.seam import Seam
from tests.fakes.nova import NovaSimulator
from tests.support import rows
from tests.support.clock import FakeClock
from tests.support.sqlite import migrated_sqlite

# What Nova does with one change request: "ok"; "lost" (acted on, the answer lost: a
# timeout); "unsent" (a balancer's 503 before Nova acts); or an HTTP status answered
# without acting.
ACTIONS = {"evacuate": "evacuate", "stop_server": "os-stop", "add_host_to_aggregate": "add_host"}


@pytest.fixture
def sim() -> Iterator[NovaSimulator]:
    sim = NovaSimulator(clock=FakeClock())  # not started: answers in process
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    sim.add_server("vm", host="compute-1")
    sim.add_aggregate(1, "agg", [])
    yield sim


def scripted(sim: NovaSimulator, *outcomes: Any) -> NovaClient:
    """The engine's client, whose change requests meet ``outcomes``, one per request."""
    nova = sim.client(timeout=5, policy=retry.Policy(retries=3, delay=0.5))
    pending = list(outcomes)
    for name, action in ACTIONS.items():
        real = getattr(nova, name)

        def send(*args: Any, _real: Any = real, _action: str = action, **kwargs: Any) -> Any:
            outcome = pending.pop(0) if pending else "ok"
            if outcome == "lost":
                sim.slow(60, action=_action, times=1)
            elif outcome == "unsent":
                sim.fail(503, action=_action, times=1)
            elif isinstance(outcome, int):
                sim.fail(outcome, action=_action, times=1)
            return _real(*args, **kwargs)

        setattr(nova, name, send)
    return nova


def sent(sim: NovaSimulator) -> list[str]:
    """The change requests Nova received (answered or not)."""
    return [next(iter(c["body"])) for c in sim.nova_calls() if c["method"] == "POST"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make(tmp_path: Any, clock: FakeClock) -> Iterator[Callable[..., NovaChanges]]:
    """The Nova facet on a real seam: a claimed running notification on SQLite, whose run
    evacuates ``vm`` from compute-1 (an ongoing vmove)."""
    db = migrated_sqlite(tmp_path)

    def build(nova: NovaClient, lease_term: float = 1e9) -> NovaChanges:
        nid = rows.notification(db, str(uuid.uuid4()), "COMPUTE_HOST", {}, "running")
        rows.claim(db, nid, owner="e")
        with db.writer() as session:
            vmove = vmoves.create(session, nid, "vm", "vm", "compute-1")
            vmoves.update(session, vmove.id, {"status": st.VMOVE_ONGOING})
        lease = Lease("e", 1, clock, lease_term, clock.monotonic())
        return NovaChanges(Seam(db, nova, clock, lease, nid))

    build.db = db  # type: ignore[attr-defined]
    yield build
    db.dispose()


def noted(make: Any) -> list[str | None]:
    """The changes recorded before they were asked of Nova (instance plans' last action)."""
    with make.db.reader() as session:
        return list(session.scalars(sa.select(InstancePlan.last_action)))


@pytest.mark.parametrize(
    ("outcomes", "requests"),
    [
        (["lost"], ["evacuate"]),  # acted on: read, rebuilding, not sent again
        (["unsent"], ["evacuate", "evacuate"]),  # nothing happened: sent again
        (["unsent", "unsent", "lost"], ["evacuate"] * 3),
    ],
)
def test_evacuate_is_made_exactly_once(
    sim: NovaSimulator, make: Any, outcomes: list[Any], requests: list[str]
) -> None:
    make(scripted(sim, *outcomes)).send_evacuate("vm", None)
    assert sim.evacuations_accepted == {"vm": 1}
    assert sent(sim) == requests


def test_an_evacuation_that_already_moved_the_server_is_not_sent_again(
    sim: NovaSimulator, make: Any
) -> None:
    sim.fail(504, action="evacuate", apply=True, times=1)  # a balancer's 504, Nova moved it
    make(scripted(sim)).send_evacuate("vm", None)
    assert sim.server("vm")["OS-EXT-SRV-ATTR:host"] == "compute-2"
    assert sent(sim) == ["evacuate"]


def test_a_resend_refused_as_a_conflict_is_judged_by_reading_nova(
    sim: NovaSimulator, make: Any
) -> None:
    """The first request landed after the read (Nova was slow): the resend meets a 409."""
    nova = scripted(sim, "unsent")
    changes = make(nova)
    real = nova.get_server
    reads = []

    def get_server(server_id: str) -> Any:
        reads.append(1)
        out = real(server_id)
        if len(reads) == 1:  # the first read: before the slow first request lands
            sim.update_server(server_id, task_state="rebuilding")
        return out

    nova.get_server = get_server  # type: ignore[method-assign]
    changes.send_evacuate("vm", None)
    assert sent(sim) == ["evacuate", "evacuate"]
    assert [c["status"] for c in sim.nova_calls() if c["method"] == "POST"] == [503, 409]
    assert len(reads) == 2


def test_a_conflict_on_the_first_request_is_nova_s_answer(sim: NovaSimulator, make: Any) -> None:
    with pytest.raises(exception.NovaError) as err:
        make(scripted(sim, 409)).send_evacuate("vm", None)
    assert err.value.status == 409
    assert sent(sim) == ["evacuate"]


def test_the_policy_gives_up_after_its_resends(sim: NovaSimulator, make: Any) -> None:
    with pytest.raises(exception.NovaError):
        make(scripted(sim, *["unsent"] * 10)).send_evacuate("vm", None)
    assert sent(sim) == ["evacuate"] * 4  # the first and the policy's three
    assert sim.evacuations_accepted == {}


def test_no_resend_once_the_lease_is_over(sim: NovaSimulator, make: Any) -> None:
    changes = make(scripted(sim, "unsent"), lease_term=0.2)  # over during the pause
    with pytest.raises(LeaseLost):
        changes.send_evacuate("vm", None)
    assert sent(sim) == ["evacuate"]


def test_stop_and_add_host_are_checked_too(sim: NovaSimulator, make: Any) -> None:
    changes = make(scripted(sim, "lost", "lost"))
    changes.stop_server("vm")
    changes.add_host_to_aggregate(1, "compute-2")
    assert sent(sim) == ["os-stop", "add_host"]  # each once, although no answer came
    assert sim.server("vm")["OS-EXT-STS:vm_state"] == "stopped"
    assert sim.aggregate(1)["hosts"] == ["compute-2"]
    assert noted(make) == ["stop"]


def test_an_evacuation_that_failed_back_to_error_is_not_sent_again(
    sim: NovaSimulator, make: Any
) -> None:
    """Nova accepted the evacuate, its answer was lost, and the rebuild already failed: the
    server is in error on its own host with no task, as if nothing had been asked; Nova's
    instance actions show the evacuate, so no second one is sent."""
    sim.state_fault("evacuate_error", "vm", times=1)
    make(scripted(sim, "lost")).send_evacuate("vm", None)
    assert sim.server("vm")["OS-EXT-STS:vm_state"] == "error"
    assert sim.server("vm")["OS-EXT-SRV-ATTR:host"] == "compute-1"
    assert sent(sim) == ["evacuate"]


def test_an_older_evacuate_action_does_not_count(
    sim: NovaSimulator, make: Any, clock: FakeClock
) -> None:
    """An evacuate Nova recorded well before this one was sent (an earlier attempt's) says
    nothing about this request: after a 503 it is sent again."""
    sim.update_server("vm", vm_state="error")
    sim.state_fault("evacuate_error", "vm", times=1)
    make(scripted(sim)).send_evacuate("vm", None)  # an earlier attempt's evacuate
    sim.clock.advance(3600)
    changes = make(scripted(sim, "unsent"))
    clock.advance(3600)  # the engine's clock agrees with Nova's
    changes.send_evacuate("vm", None)
    assert sent(sim) == ["evacuate", "evacuate", "evacuate"]
    # The earlier attempt's, this one's refused by the balancer, and this one's resend.
    assert [c["status"] for c in sim.nova_calls() if c["method"] == "POST"] == [200, 503, 200]
