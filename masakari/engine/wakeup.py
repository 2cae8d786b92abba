"""The wake-up cast: masakari-api tells an engine at once that a notification was committed.

Only when ``transport_url`` is set. The message carries nothing an engine relies on: the
notification row is the source of truth and the engine's poll finds it anyway, so a lost, late
or doubled cast changes when a recovery starts, never what it does. The API side never waits
for the broker (a daemon thread sends, the request is answered at once) and reports a broker
failure in its log; the engine side listens in a thread of its own, so that an unreachable
broker never delays the engine's start or its poll.

The topic and method are the reference's (``masakari_topic``, ``process_notification``): a
cast of the reference's masakari-api during an upgrade also wakes an engine of this project.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import warnings
from collections.abc import Callable
from typing import Any

from oslo_config import cfg

LOG = logging.getLogger(__name__)

METHOD = "process_notification"
# The reference's engine RPC API version: its API prepares casts at 1.0.
VERSION = "1.1"
# Casts waiting for the sender thread; more are dropped (the poll finds their rows anyway).
BACKLOG = 1000
# Broker connection attempts of one cast before it is given up on and reported.
CAST_RETRIES = 1
# Seconds a stopping engine waits for its listener to end.
STOP_TIMEOUT = 5.0

Wake = Callable[[str], None]


def enabled(conf: cfg.ConfigOpts) -> bool:
    """Only when a deployer set transport_url: oslo.messaging's default (``rabbit://``, a
    broker on localhost) must not turn the cast on."""
    if not conf.transport_url:
        return False
    located = conf.get_location("transport_url")
    return located is None or located.location not in (
        cfg.Locations.opt_default,
        cfg.Locations.set_default,
    )


def nothing(notification_uuid: str) -> None:
    """The API's wake-up when no transport_url is set."""


def _messaging() -> Any:
    # oslo.messaging imports oslo.service, whose eventlet import warns of its deprecation;
    # masakari never uses eventlet, so the warning would only be noise.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*eventlet(utils module)? is deprecated")
        import oslo_messaging

    return oslo_messaging


def _transport(conf: cfg.ConfigOpts) -> Any:
    messaging = _messaging()
    # The RPC client and server read option groups (oslo_messaging_metrics, and
    # oslo_messaging_tracing from 18.3) that oslo.messaging registers on its global
    # configuration only. ConfFixture is its public way to register every option the
    # installed release reads on another ConfigOpts; only its constructor runs (it does not
    # set anything up as a fixture).
    from oslo_messaging import conffixture

    conffixture.ConfFixture(conf)
    return messaging.get_rpc_transport(conf)


class Sender:
    """The API side: ``send(uuid)`` queues a cast and returns at once."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._queue: queue.Queue[str] = queue.Queue(maxsize=BACKLOG)
        self._lock = threading.Lock()
        # The API's workers are forked: a thread (and a broker connection) belongs to the
        # process that started it, so each process starts its own on first use.
        self._pid: int | None = None
        self._client: Any = None
        self._failing = False

    def __call__(self, notification_uuid: str) -> None:
        self._ensure_thread()
        try:
            self._queue.put_nowait(notification_uuid)
        except queue.Full:
            LOG.warning(
                "Wake-up cast for notification %s dropped: %d casts are waiting for the "
                "message bus; an engine's poll will find the notification",
                notification_uuid,
                BACKLOG,
            )

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._client = None
            self._queue = queue.Queue(maxsize=BACKLOG)
            threading.Thread(target=self._run, name="wakeup-sender", daemon=True).start()

    def _run(self) -> None:
        while True:
            self.cast(self._queue.get())

    def cast(self, notification_uuid: str) -> bool:
        """One cast now; a failure is logged (once per outage), never raised."""
        try:
            if self._client is None:
                self._client = self._make_client()
            self._client.cast({}, METHOD, notification_uuid=notification_uuid)
        except Exception as exc:
            self._client = None
            if not self._failing:
                self._failing = True
                LOG.error(
                    "Wake-up cast for notification %s failed (%s); engines find new "
                    "notifications by their poll until the message bus is back",
                    notification_uuid,
                    exc,
                )
            return False
        if self._failing:
            self._failing = False
            LOG.warning("Wake-up casts reach the message bus again")
        return True

    def _make_client(self) -> Any:
        messaging = _messaging()
        transport = _transport(self.conf)
        target = messaging.Target(topic=self.conf.masakari_topic, version="1.0")
        return messaging.get_rpc_client(transport, target, retry=CAST_RETRIES)


def sender(conf: cfg.ConfigOpts) -> Wake:
    """What the API calls after committing a notification."""
    return Sender(conf) if enabled(conf) else nothing


class _Endpoint:
    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self.target = _messaging().Target(version=VERSION)

    def process_notification(self, ctxt: Any, **kwargs: Any) -> None:
        # Whatever the message says (this project's uuid, the reference's object), the engine
        # only looks in the database sooner.
        LOG.debug("Woken by a cast: %s", kwargs.get("notification_uuid", "notification"))
        self._wake()


class Listener:
    """The engine side: an RPC server on ``masakari_topic`` whose casts call ``wake()``."""

    def __init__(self, conf: cfg.ConfigOpts, wake: Callable[[], None]) -> None:
        self.conf = conf
        self.wake = wake
        self._server: Any = None
        self._lock = threading.Lock()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.listening = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="wakeup-listener", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        messaging = _messaging()
        try:
            transport = _transport(self.conf)
            target = messaging.Target(topic=self.conf.masakari_topic, server=self.conf.host)
            # No executor argument (deprecated): without eventlet's monkey patching,
            # oslo.messaging picks its threading executor itself.
            server = messaging.get_rpc_server(transport, target, [_Endpoint(self.wake)])
            with self._lock:
                if self._stopped:
                    return
                self._server = server
            # Connects, retrying while the broker is away: the poll works meanwhile.
            server.start()
            self.listening = True
            LOG.info("Listening for wake-up casts on topic %s", self.conf.masakari_topic)
        except Exception:
            LOG.exception("Wake-up listener failed; this engine relies on its poll alone")

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            server = self._server
        if server is None:
            return
        # stop() and wait() block while the driver reconnects to a broker that is away.
        done = threading.Thread(target=_stop_server, args=(server,), daemon=True)
        done.start()
        done.join(STOP_TIMEOUT)


def _stop_server(server: Any) -> None:
    try:
        server.stop()
        server.wait()
    except Exception:
        LOG.exception("Wake-up listener did not stop cleanly")


def listener(conf: cfg.ConfigOpts, wake: Callable[[], None]) -> Listener | None:
    return Listener(conf, wake) if enabled(conf) else None
