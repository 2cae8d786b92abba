"""masakari-engine: recover the failures the monitors report, until SIGTERM or SIGINT."""

from __future__ import annotations

import functools
import logging
import signal
import sys
import threading
from types import FrameType

from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari import coordination, detection, exception, reload, signals
from masakari.compute import nova, retry
from masakari.compute.clients import Clients
from masakari.db.database import Database
from masakari.engine import logtag, tasks
from masakari.engine.capacity import Capacities
from masakari.engine.clients import LazyNova, LazyPlacement
from masakari.engine.fencing import HostFencing
from masakari.engine.ports import Nova
from masakari.engine.service import EngineService, engine_owner
from masakari.fencing.config import FencingFileError
from masakari.metrics import serve

LOG = logging.getLogger(__name__)

# Seconds a statement of the engine waits for a row lock before it fails and is retried.
LOCK_WAIT = 5.0


def main(argv: list[str] | None = None) -> int:
    conf = masakari_conf.load(sys.argv[1:] if argv is None else argv, prog="masakari-engine")
    masakari_conf.setup_logging(conf)
    logtag.install()
    if conf.taskflow.connection:
        LOG.debug("[taskflow]/connection is ignored: progress lives in the main database")
    db = Database.from_conf(conf)
    db.limit_sessions(idle_in_transaction=conf.engine_claim_margin, lock_wait=LOCK_WAIT)
    try:
        # An unknown task name or claim timings that cannot work stop the engine here
        # rather than at the first failure.
        flows = tasks.load_flows(conf)
        # The fencing file too: a host fencing that does not load must not leave hosts
        # evacuated unfenced.
        fencing = HostFencing.from_conf(conf)
        clients = Clients(conf)
        nova_client, placement = _clients(clients)
        owner = engine_owner(conf)
        leadership = coordination.leadership(conf, owner)
        detector = _detector(conf, db, clients, owner, leadership)
        signals_ = signals.build(conf, db, fencing)
        service = EngineService(
            conf,
            db,
            nova_client,
            placement=placement,
            flows=flows,
            owner=owner,
            leadership=leadership,
            addons=[signals_] + ([detector] if detector is not None else []),
            fencing=fencing,
            judge_instance=signals_.judge_instance,
            record_host_failure=signals_.record_host_failure,
        )
    except (exception.InvalidConfiguration, FencingFileError) as exc:
        LOG.error("%s", exc)
        print(f"masakari-engine: {exc}", file=sys.stderr)
        db.dispose()
        return 1

    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        LOG.info("Received %s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    hangup = reload.OnHangup(conf)
    hangup.install()
    if conf.metrics.engine_port:
        serve.start_listener(conf, conf.metrics.engine_port, lambda: db)
    try:
        service.start()
    except OSError as exc:  # the kdump listener's address cannot be bound
        LOG.error("Cannot start: %s", exc)
        print(f"masakari-engine: cannot start: {exc}", file=sys.stderr)
        db.dispose()
        return 1
    try:
        while not stop.wait(1.0):
            hangup.apply()
    finally:
        service.stop()
        db.dispose()
    return 0


def _clients(clients: Clients) -> tuple[Nova, Capacities]:
    """Nova and Placement (on Nova's session). Without usable credentials the engine still
    starts, as the reference's does, and says so: each recovery that needs Nova fails and is
    retried, and the first call after the options work builds the clients."""
    try:
        client = clients.nova(retry.ENGINE)
    except nova.NovaNotConfigured as exc:
        LOG.error("%s Every recovery fails (and is retried) until they are set.", exc)
    except exception.NovaError as exc:
        LOG.error(
            "Nova cannot be reached with the [DEFAULT] os_privileged_user_* options "
            "(%s): recoveries fail until they are set",
            exc,
        )
    else:
        return client, clients.placement(retry.ENGINE)
    return (
        LazyNova(functools.partial(clients.nova, retry.ENGINE)),
        LazyPlacement(functools.partial(clients.placement, retry.ENGINE)),
    )


def _detector(
    conf: cfg.ConfigOpts,
    db: Database,
    clients: Clients,
    owner: str,
    leadership: coordination.Leadership,
) -> detection.Detector | None:
    """The failure detector ([detection] enabled), on a Nova client of its own: a poll that
    fails is a blind poll, tried again at the next one rather than retried for long."""
    if not conf.detection.enabled:
        return None
    try:
        client = clients.nova(retry.DETECTION)
    except exception.NovaError as exc:
        raise exception.InvalidConfiguration(
            message=f"[detection] enabled needs Nova's credentials: {exc}"
        ) from exc
    probe = detection.keystone_probe(
        client.session, conf.os_privileged_user_auth_url, conf.nova_api_timeout
    )
    return detection.build(conf, db, client, probe, owner, leadership)


if __name__ == "__main__":
    sys.exit(main())
