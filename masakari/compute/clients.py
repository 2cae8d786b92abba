"""The Nova and Placement clients of one process, built by its entry point and passed down.

masakari-engine (masakari/cmd/engine.py), each API process (masakari/api/state.py) and
masakari-manage build one ``Clients`` from masakari.conf. Nothing below them builds a client
of its own: a part that talks to Nova is given one.

A client is built at first use, so that a process starts before its Nova credentials work
(as the reference's does) and each call fails with the build's NovaError until they do. Each
retry policy has its session and token (the engine's recoveries and its detector's polls
retry differently); Placement rides on the session of the Nova client of the same policy.
A forked API worker builds its own instead of sharing its parent's sockets.
"""

from __future__ import annotations

import os
import threading

from oslo_config import cfg

from masakari.compute import retry
from masakari.compute.nova import NovaClient
from masakari.compute.placement import PlacementClient


class Clients:
    """One process's clients of ``conf``, one Nova client per retry policy."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._conf = conf
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._nova: dict[retry.Policy, NovaClient] = {}
        self._placement: dict[retry.Policy, PlacementClient] = {}

    def nova(self, policy: retry.Policy = retry.INTERACTIVE) -> NovaClient:
        """The Nova client of ``policy``; raises the NovaError of a build that cannot work
        (credentials missing, Keystone refusing them) until it can."""
        with self._lock:
            self._forget_after_fork()
            client = self._nova.get(policy)
            if client is None:
                client = self._nova[policy] = NovaClient.from_conf(self._conf, policy)
            return client

    def placement(self, policy: retry.Policy = retry.INTERACTIVE) -> PlacementClient:
        """Placement on the session (and token) of the Nova client of ``policy``."""
        nova = self.nova(policy)
        with self._lock:
            client = self._placement.get(policy)
            if client is None:
                client = self._placement[policy] = PlacementClient.beside(nova, self._conf)
            return client

    def _forget_after_fork(self) -> None:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._nova.clear()
            self._placement.clear()
