"""What the API's handlers are given: configuration, database, policy, Nova and Placement."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from typing import Any, cast

from oslo_config import cfg

from masakari import policy
from masakari.compute import nova as nova_client
from masakari.db.database import Database
from masakari.engine import wakeup
from masakari.engine.capacity import Capacities
from masakari.engine.clients import LazyPlacement
from masakari.ha import intake
from masakari.notifier import Notifier


@dataclasses.dataclass
class AppState:
    """What the handlers need, passed in rather than read from globals."""

    conf: cfg.ConfigOpts
    db: Database
    enforcer: policy.Enforcer
    check_compute: Callable[[str], None]
    notifier: Notifier
    # The Nova and Placement clients of the 1.5 routes (recovery plans, readiness).
    nova: nova_client.NovaClient
    placement: Capacities
    # Called with a notification's uuid once its row is committed (transport_url set).
    wake_engine: wakeup.Wake = wakeup.nothing
    # The duplicate window, maintenance rule and [guards], built once from ``conf``.
    intake_rules: intake.Rules = intake.Rules()


class ProcessClient:
    """``NovaClient.from_conf(conf)``, built at its first call in each process: a forked
    worker builds its own connection pool, and an API without Nova credentials starts (each
    call that needs Nova then raises the build's NovaError)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._conf = conf
        self._lock = threading.Lock()
        self._built: tuple[int, nova_client.NovaClient] | None = None

    def __getattr__(self, name: str) -> Any:
        with self._lock:
            if self._built is None or self._built[0] != os.getpid():
                self._built = (os.getpid(), nova_client.NovaClient.from_conf(self._conf))
            client = self._built[1]
        return getattr(client, name)


def nova_compute_check(nova: nova_client.NovaClient) -> Callable[[str], None]:
    """The host check: Nova must list a nova-compute service on a host of that name."""

    def check(host_name: str) -> None:
        nova.get_compute_service(host_name)

    return check


def make_state(
    conf: cfg.ConfigOpts,
    db: Database | None = None,
    check_compute: Callable[[str], None] | None = None,
    nova: nova_client.NovaClient | None = None,
    placement: Capacities | None = None,
) -> AppState:
    """The state of an API process. Without ``nova``, the process's client, built at the
    first request that needs it (each forked worker builds its own)."""
    nova = nova or cast(nova_client.NovaClient, ProcessClient(conf))
    return AppState(
        conf=conf,
        db=db or Database.from_conf(conf),
        enforcer=policy.make_enforcer(conf),
        check_compute=check_compute or nova_compute_check(nova),
        wake_engine=wakeup.sender(conf),
        notifier=Notifier(conf, "masakari-api"),
        intake_rules=intake.Rules.from_conf(conf),
        nova=nova,
        placement=placement or LazyPlacement.from_conf(conf),
    )
