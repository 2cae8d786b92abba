"""Alertmanager's webhook, read as quarantine requests ([quarantine], docs/operations.md
"Degradation signals").

Each alert of the body is one host's signal: its host is named by the first of
``alert_host_labels`` present (without a ``:port``), matched to masakari's hosts exactly,
then by the first DNS label. A firing alert asks for the host's quarantine (source
``alertmanager``, or ``storage`` when its label ``masakari_signal`` is ``storage``: a
storage path lost, docs/operations.md); its fingerprint is the quarantine's signal, so that
the same alert repeated changes nothing and its resolution ends what it asked for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from oslo_config import cfg

from masakari import exception
from masakari.db.database import Database
from masakari.db.models import Host
from masakari.ha import quarantines

SIGNAL_LABEL = "masakari_signal"
MAX_REASON = 1000


class BadAlerts(exception.Invalid):
    msg_fmt = "Not an Alertmanager webhook body: %(why)s"


def handle(conf: cfg.ConfigOpts, db: Database, body: Any) -> list[dict[str, Any]]:
    """What became of each alert of the webhook ``body``: ``{"fingerprint", "host",
    "outcome", ...}``, outcome ``requested``, ``held``, ``already`` (the host's open
    quarantine), ``refused`` (with ``reason``), ``resolved`` or ``ignored``."""
    alerts = _alerts(body)
    names = _host_names(db)
    said = []
    for alert in alerts:
        labels = alert.get("labels") or {}
        signal = "alertmanager:" + _fingerprint(alert)
        host = match(_named(conf.quarantine.alert_host_labels, labels), names)
        entry: dict[str, Any] = {"fingerprint": signal.split(":", 1)[1], "host": host}
        if alert.get("status") == "resolved":
            ended = quarantines.signal_ended(db, signal)
            entry["outcome"] = "resolved"
            entry["quarantines"] = [row.uuid for row in ended]
        elif host is None:
            entry["outcome"] = "ignored"
            entry["reason"] = "no label names a host masakari knows"
        else:
            source = (
                quarantines.STORAGE
                if labels.get(SIGNAL_LABEL) == "storage"
                else quarantines.ALERTMANAGER
            )
            try:
                row, new = quarantines.request(conf, db, host, source, reason(alert), signal=signal)
            except exception.MasakariError as exc:
                entry["outcome"], entry["reason"] = "refused", exc.message
            else:
                entry["quarantine"] = row.uuid
                entry["outcome"] = (
                    "already" if not new else "held" if row.status == "held" else "requested"
                )
        said.append(entry)
    return said


def reason(alert: Mapping[str, Any]) -> str:
    labels = alert.get("labels") or {}
    notes = alert.get("annotations") or {}
    name = str(labels.get("alertname") or "alert")
    text = str(notes.get("summary") or notes.get("description") or "").strip()
    return (f"{name}: {text}" if text else name)[:MAX_REASON]


def match(named: str | None, hosts: Sequence[str]) -> str | None:
    """The masakari host an alert names: exactly, else by the first DNS label."""
    if not named:
        return None
    if named in hosts:
        return named
    short = named.split(".", 1)[0]
    found = [h for h in hosts if h == short or h.split(".", 1)[0] == short]
    return found[0] if len(found) == 1 else None


def _named(keys: Sequence[str], labels: Mapping[str, Any]) -> str | None:
    for key in keys:
        value = labels.get(key)
        if value:
            text = str(value)
            # An exporter's instance label is host:port ([v6]:port too).
            if text.startswith("["):
                return text[1:].split("]", 1)[0]
            return text.rsplit(":", 1)[0] if text.count(":") == 1 else text
    return None


def _fingerprint(alert: Mapping[str, Any]) -> str:
    given = alert.get("fingerprint")
    if isinstance(given, str) and given:
        return given[:200]
    labels = json.dumps(alert.get("labels") or {}, sort_keys=True)
    return hashlib.sha256(labels.encode()).hexdigest()[:16]


def _alerts(body: Any) -> list[Mapping[str, Any]]:
    if not isinstance(body, Mapping):
        raise BadAlerts(why="the body is not a JSON object")
    alerts = body.get("alerts")
    if not isinstance(alerts, list) or not all(isinstance(a, Mapping) for a in alerts):
        raise BadAlerts(why="'alerts' is not a list of objects")
    for alert in alerts:
        if not isinstance(alert.get("labels", {}), Mapping):
            raise BadAlerts(why="an alert's 'labels' is not an object")
    return alerts


def _host_names(db: Database) -> list[str]:
    with db.reader() as session:
        return list(session.scalars(sa.select(Host.name).where(Host.deleted == 0)))
