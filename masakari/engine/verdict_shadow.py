"""[verdict] shadow_rule: what a second rule would have decided of a host failure, as its
evidence (kind ``shadow``) and in metrics, without effect.

The decision is :func:`masakari.engine.verdict.decide`'s, on the same signals as the acting
rule's (:func:`masakari.engine.verdict.judge`), or on one look at them for a report the
engine does not judge (a monitor's, under rule ``monitor``:
:func:`masakari.engine.verdict.judge_shadow_only`). The shadow neither waits nor holds: a
rule that would wait for more signals is recorded as ``wait`` (it would hold after
``[verdict] wait`` seconds if nothing came).
"""

from __future__ import annotations

import datetime
import logging

from masakari.db import evidence as ev
from masakari.metrics import detection as detection_metrics

LOG = logging.getLogger(__name__)

CONFIRM = "confirm"
WAIT = "wait"
HOLD = "hold"
_WOULD = {True: CONFIRM, False: HOLD, None: WAIT}


def evidence(
    host: str,
    rule: str,
    acted: bool,
    shadow_rule: str,
    would: bool | None,
    reason: str,
    now: datetime.datetime,
) -> ev.Evidence:
    """The shadow rule's judgement (``would``: confirmed, held, None: waits for more) beside
    the acting rule's (``acted``: confirmed), counted; the caller records it."""
    decision = _WOULD[would]
    agree = (would is True) == acted
    detail = (
        f"would {decision}: {reason} (rule {rule} "
        f"{'confirmed' if acted else 'did not confirm'}: {'agrees' if agree else 'disagrees'})"
    )
    detection_metrics.shadow_verdict(rule, shadow_rule, decision, agree)
    LOG.info("Host %s failure under shadow rule %s: %s", host, shadow_rule, detail)
    return ev.Evidence(ev.SHADOW, f"shadow rule {shadow_rule}", would, detail, now, decision)
