"""What the API's handlers are given: configuration, database, policy, Nova and Placement."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from oslo_config import cfg

from masakari import policy
from masakari.compute import nova as nova_client
from masakari.compute import retry
from masakari.compute.clients import Clients
from masakari.db.database import Database
from masakari.engine import wakeup
from masakari.engine.capacity import Capacities
from masakari.engine.clients import LazyNova, LazyPlacement
from masakari.ha import intake
from masakari.notifier import Notifier

# A NovaClient, or the process's one looked up at each call.
Nova = nova_client.NovaClient | LazyNova


@dataclasses.dataclass
class AppState:
    """What the handlers need, passed in rather than read from globals."""

    conf: cfg.ConfigOpts
    db: Database
    enforcer: policy.Enforcer
    check_compute: Callable[[str], None]
    notifier: Notifier
    # The Nova and Placement clients of the host check and the 1.5 routes (recovery plans,
    # readiness).
    nova: Nova
    placement: Capacities
    # Called with a notification's uuid once its row is committed (transport_url set).
    wake_engine: wakeup.Wake = wakeup.nothing
    # The duplicate window, maintenance rule and [guards], built once from ``conf``.
    intake_rules: intake.Rules = intake.Rules()


def nova_compute_check(nova: Nova) -> Callable[[str], None]:
    """The host check: Nova must list a nova-compute service on a host of that name."""

    def check(host_name: str) -> None:
        nova.get_compute_service(host_name)

    return check


def make_state(
    conf: cfg.ConfigOpts,
    db: Database | None = None,
    check_compute: Callable[[str], None] | None = None,
    nova: Nova | None = None,
    placement: Capacities | None = None,
) -> AppState:
    """The state of an API process, its clients among it. Without ``nova``, the process's
    client, built at the first request that needs it (each forked worker builds its own): an
    API without Nova credentials starts, and each call that needs Nova raises the build's
    NovaError."""
    clients = Clients(conf)
    nova = nova or LazyNova(functools.partial(clients.nova, retry.INTERACTIVE))
    return AppState(
        conf=conf,
        db=db or Database.from_conf(conf),
        enforcer=policy.make_enforcer(conf),
        check_compute=check_compute or nova_compute_check(nova),
        wake_engine=wakeup.sender(conf),
        notifier=Notifier(conf, "masakari-api"),
        intake_rules=intake.Rules.from_conf(conf),
        nova=nova,
        placement=placement or LazyPlacement(clients.placement),
    )
