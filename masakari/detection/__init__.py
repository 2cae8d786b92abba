"""Failure detection without agents on the computes ([detection]; docs/operations.md,
Detection): the detector, its lease and its gates.

Wired into masakari-engine by masakari/cmd/engine.py (the engine package never imports
this one: the detector reports through masakari.ha's intake, which the engine must not
reach).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oslo_config import cfg

from masakari import coordination
from masakari.db.database import Database
from masakari.detection.detector import ComputeServices, Detector
from masakari.detection.lease import DetectorLease
from masakari.engine.ports import Clock

__all__ = ["Detector", "DetectorLease", "build", "keystone_probe"]


def keystone_probe(session: Any, auth_url: str, timeout: float) -> Callable[[], None]:
    """Keystone answers its version document (no token is issued): the self-check's first
    step. ``session``: a keystoneauth session."""

    def probe() -> None:
        session.get(auth_url, authenticated=False, timeout=timeout)

    return probe


def build(
    conf: cfg.ConfigOpts,
    db: Database,
    nova: ComputeServices,
    probe: Callable[[], Any],
    owner: str,
    leadership: coordination.Leadership,
    clock: Clock | None = None,
) -> Detector | None:
    """The engine's detector, or None when [detection] is off."""
    if not conf.detection.enabled:
        return None
    clock = clock or Clock()
    lease = DetectorLease(conf, db, clock, owner, leadership)
    return Detector(conf, db, nova, lease, probe, clock)
