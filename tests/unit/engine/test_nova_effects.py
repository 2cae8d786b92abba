"""The checked changes: after an ambiguous failure Nova is read before anything is sent again,
so that no change is made twice; and nothing is sent once the lease is over."""

from __future__ import annotations

import datetime
import threading
from typing import Any

import pytest

from masakari import exception
from masakari.compute import retry
from masakari.compute.servers import InstanceAction
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.nova_effects import LeasedReads, NovaChanges


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime.datetime:
        return datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=self.t)

    def sleep(self, seconds: float, cancel: threading.Event) -> None:
        self.t += seconds


class Nova:
    """A Nova whose change requests fail as ``outcomes`` say, one per request:
    ``"ok"``, ``"lost"`` (acted on, answer lost), ``"unsent"`` (503 before acting), or an
    HTTP status answered without acting."""

    def __init__(self, *outcomes: Any, host: str = "compute-1") -> None:
        self.outcomes = list(outcomes)
        self.server = {
            "id": "vm",
            "OS-EXT-SRV-ATTR:host": host,
            "OS-EXT-STS:vm_state": "active",
            "OS-EXT-STS:task_state": None,
        }
        self.acted: list[str] = []
        self.sent: list[str] = []
        self.policy = retry.Policy(retries=3, delay=0.5)
        self.aggregates = [{"id": 1, "hosts": []}]
        self.actions: list[InstanceAction] = []  # what Nova recorded, newest last
        self.now = datetime.datetime(2026, 1, 1)

    def get_server(self, server_id: str) -> dict[str, Any]:
        return dict(self.server)

    def list_instance_actions(self, server_id: str) -> list[InstanceAction]:
        return list(reversed(self.actions))

    def list_aggregates(self) -> list[dict[str, Any]]:
        return self.aggregates

    def _request(self, name: str, act: Any) -> None:
        self.sent.append(name)
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        if isinstance(outcome, int):
            raise exception.NovaError(f"HTTP {outcome}", status=outcome)
        if outcome == "unsent":
            raise exception.NovaError("HTTP 503", status=503)
        if self.server["OS-EXT-STS:task_state"] is not None:
            raise exception.NovaError("Conflict", status=409)
        self.actions.append(InstanceAction(name, f"req-{len(self.actions)}", self.now))
        act()
        self.acted.append(name)
        if outcome == "lost":
            raise exception.NovaTimeout(service="Nova")

    def evacuate(self, server_id: str, host: str | None = None) -> None:
        self._request(
            "evacuate", lambda: self.server.update({"OS-EXT-STS:task_state": "rebuilding"})
        )

    def stop_server(self, server_id: str) -> None:
        self._request("stop", lambda: self.server.update({"OS-EXT-STS:vm_state": "stopped"}))

    def add_host_to_aggregate(self, aggregate_id: Any, host: str) -> None:
        self._request("add_host", lambda: self.aggregates[0]["hosts"].append(host))


class Changes(NovaChanges):
    def __init__(self, nova: Nova, lease_term: float = 1e9) -> None:
        self._nova = nova  # type: ignore[assignment]
        self._clock = Clock()  # type: ignore[assignment]
        self.lease = Lease("e", 1, self._clock, lease_term, 0.0)
        self.reads = LeasedReads(nova, self.lease)  # type: ignore[arg-type]
        self.notes: list[str] = []

    def _note(self, instance_uuid: str, action: str) -> None:
        self.notes.append(action)

    def _evacuated_from(self, instance_uuid: str) -> str | None:
        return "compute-1"


@pytest.mark.parametrize(
    ("outcomes", "sent"),
    [
        (["lost"], ["evacuate"]),  # acted on: read, rebuilding, not sent again
        (["unsent"], ["evacuate", "evacuate"]),  # nothing happened: sent again
        (["unsent", "unsent", "lost"], ["evacuate"] * 3),
    ],
)
def test_evacuate_is_made_exactly_once(outcomes: list[Any], sent: list[str]) -> None:
    nova = Nova(*outcomes)
    Changes(nova).send_evacuate("vm", None)
    assert nova.acted == ["evacuate"]
    assert nova.sent == sent


def test_an_evacuation_that_already_moved_the_server_is_not_sent_again() -> None:
    nova = Nova(504)
    nova.server["OS-EXT-SRV-ATTR:host"] = "compute-2"  # a balancer's 504, Nova had moved it
    Changes(nova).send_evacuate("vm", None)
    assert nova.sent == ["evacuate"]


def test_a_resend_refused_as_a_conflict_is_judged_by_reading_nova() -> None:
    """The first request landed after the read (Nova was slow): the resend meets a 409."""
    nova = Nova("unsent")
    changes = Changes(nova)
    real = nova.get_server
    reads = []

    def get_server(server_id: str) -> dict[str, Any]:
        reads.append(1)
        if len(reads) == 1:  # the first read: before the slow first request lands
            out = real(server_id)
            nova.server["OS-EXT-STS:task_state"] = "rebuilding"
            return out
        return real(server_id)

    nova.get_server = get_server  # type: ignore[method-assign]
    changes.send_evacuate("vm", None)
    assert nova.sent == ["evacuate", "evacuate"]
    assert len(reads) == 2


def test_a_conflict_on_the_first_request_is_nova_s_answer() -> None:
    nova = Nova(409)
    with pytest.raises(exception.NovaError) as err:
        Changes(nova).send_evacuate("vm", None)
    assert err.value.status == 409
    assert nova.sent == ["evacuate"]


def test_the_policy_gives_up_after_its_resends() -> None:
    nova = Nova(*["unsent"] * 10)
    with pytest.raises(exception.NovaError):
        Changes(nova).send_evacuate("vm", None)
    assert nova.sent == ["evacuate"] * 4  # the first and the policy's three
    assert nova.acted == []


def test_no_resend_once_the_lease_is_over() -> None:
    nova = Nova("unsent")
    changes = Changes(nova, lease_term=0.2)  # over during the pause before the read
    with pytest.raises(LeaseLost):
        changes.send_evacuate("vm", None)
    assert nova.sent == ["evacuate"]


def test_stop_and_add_host_are_checked_too() -> None:
    nova = Nova("lost", "lost")
    changes = Changes(nova)
    changes.stop_server("vm")
    changes.add_host_to_aggregate(1, "compute-2")
    assert nova.sent == ["stop", "add_host"]
    assert nova.aggregates[0]["hosts"] == ["compute-2"]
    assert changes.notes == ["stop"]


def test_an_evacuation_that_failed_back_to_error_is_not_sent_again() -> None:
    """Nova accepted the evacuate and its rebuild already failed: the server is in error on
    its own host, with no task, as if nothing had been asked; Nova's instance actions show
    the evacuate, so no second one is sent."""
    nova = Nova("lost")
    nova.evacuate = lambda server_id, host=None: nova._request(  # type: ignore[method-assign]
        "evacuate", lambda: nova.server.update({"OS-EXT-STS:vm_state": "error"})
    )
    Changes(nova).send_evacuate("vm", None)
    assert nova.sent == ["evacuate"]


def test_an_older_evacuate_action_does_not_count() -> None:
    """An evacuate Nova recorded before this one was sent (an earlier attempt's) says
    nothing about this request: it is sent again."""
    nova = Nova("unsent")
    nova.actions.append(InstanceAction("evacuate", "req-old", datetime.datetime(2025, 12, 31)))
    Changes(nova).send_evacuate("vm", None)
    assert nova.sent == ["evacuate", "evacuate"]
    assert nova.acted == ["evacuate"]
