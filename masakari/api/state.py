"""What the API's handlers are given: configuration, database, policy, the Nova host check."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from oslo_config import cfg

from masakari import policy
from masakari.compute import nova
from masakari.db.database import Database
from masakari.engine import wakeup
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
    # Called with a notification's uuid once its row is committed (transport_url set).
    wake_engine: wakeup.Wake = wakeup.nothing
    # The duplicate window, maintenance rule and [guards], built once from ``conf``.
    intake_rules: intake.Rules = intake.Rules()


def nova_compute_check(conf: cfg.ConfigOpts) -> Callable[[str], None]:
    """The host check: Nova must list a nova-compute service on a host of that name."""

    def check(host_name: str) -> None:
        nova.get_client(conf).get_compute_service(host_name)

    return check


def make_state(
    conf: cfg.ConfigOpts,
    db: Database | None = None,
    check_compute: Callable[[str], None] | None = None,
) -> AppState:
    return AppState(
        conf=conf,
        db=db or Database.from_conf(conf),
        enforcer=policy.make_enforcer(conf),
        check_compute=check_compute or nova_compute_check(conf),
        wake_engine=wakeup.sender(conf),
        notifier=Notifier(conf, "masakari-api"),
        intake_rules=intake.Rules.from_conf(conf),
    )
