"""[DEFAULT] options of masakari-engine: timings of recovery, retry and expiry loops."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = "DEFAULT"

RPC_OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "masakari_topic",
        default="ha_engine",
        deprecated_for_removal=True,
        deprecated_since="3.0.0",
        deprecated_reason=(
            "Changing the RPC topic brings nothing and breaks masakari if it collides "
            "with the topic of another service."
        ),
        help="Message-queue topic masakari-engine listens on and masakari-api sends to.",
    ),
]

NOTIFICATION_OPTS: list[cfg.Opt] = [
    cfg.IntOpt(
        "duplicate_notification_detection_interval",
        default=180,
        min=0,
        help=paragraphs(
            """
Window, in seconds, for duplicate notifications. A notification whose type,
host and payload equal those of a stored notification generated at most this
many seconds earlier is refused with 409.
"""
        ),
    ),
    cfg.IntOpt(
        "wait_period_after_service_update",
        default=180,
        help=paragraphs(
            """
Seconds to wait after disabling a nova-compute service before evacuating, and
the longest wait for Nova to report the service disabled.
"""
        ),
    ),
    cfg.IntOpt(
        "wait_period_after_evacuation",
        default=90,
        help="Seconds to wait for an evacuated instance to reach its expected state.",
    ),
    cfg.IntOpt(
        "verify_interval",
        default=1,
        help="Seconds between two polls of Nova while waiting for a state change.",
    ),
    cfg.IntOpt(
        "wait_period_after_power_off",
        default=180,
        help="Seconds to wait for an instance to stop.",
    ),
    cfg.IntOpt(
        "wait_period_after_power_on",
        default=60,
        help="Seconds to wait for an instance to become active after a start.",
    ),
    cfg.IntOpt(
        "process_unfinished_notifications_interval",
        default=120,
        help="Seconds between two runs of the loop that retries new and failed notifications.",
    ),
    cfg.IntOpt(
        "retry_notification_new_status_interval",
        default=60,
        mutable=True,
        help=paragraphs(
            """
Seconds after its generated_time from which a notification still in ``new``
is considered lost by the message bus and picked up by the retry loop.
"""
        ),
    ),
    cfg.IntOpt(
        "check_expired_notifications_interval",
        default=600,
        help="Seconds between two runs of the loop that expires stuck notifications.",
    ),
    cfg.IntOpt(
        "notifications_expired_interval",
        default=86400,
        help=paragraphs(
            """
Age in seconds, counted from its generated_time, after which a notification
still ``new``, ``running`` or ``error`` is marked ``failed`` by the expiry loop.
"""
        ),
    ),
    cfg.IntOpt(
        "host_failure_recovery_threads",
        default=3,
        min=1,
        help="Number of instances evacuated in parallel during one host recovery.",
    ),
]

DRIVER_OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "notification_driver",
        default="taskflow_driver",
        help=paragraphs(
            """
Driver that runs the recovery workflows. The reference only ships
``taskflow_driver``; this project runs its own flows whatever the value.
"""
        ),
    ),
]

# Options of this project only: the reference has no equivalent.
PROJECT_OPTS: list[cfg.Opt] = [
    cfg.FloatOpt(
        "engine_poll_interval",
        default=0.5,
        min=0.05,
        help=paragraphs(
            """
(masakari rewrite only) Seconds an idle engine waits between two looks in the
database for notifications to process. A message on the bus, when one is
configured, wakes the engine earlier.
"""
        ),
    ),
    cfg.IntOpt(
        "engine_claim_timeout",
        default=20,
        min=3,
        help=paragraphs(
            """
(masakari rewrite only) Lifetime, in seconds, of an engine's claim on a
notification. An engine that stopped renewing its claim (crashed, frozen or
cut off from the database) loses it this long after its last renewal, and
another engine takes the notification over within a few seconds more. Shorter
means a faster takeover; longer tolerates longer database outages and pauses
before a recovery is abandoned and redone elsewhere.
"""
        ),
    ),
    cfg.FloatOpt(
        "engine_claim_renew_interval",
        default=5.0,
        min=0.1,
        help=paragraphs(
            """
(masakari rewrite only) Seconds between two renewals of an engine's claims.
Must be shorter than engine_claim_timeout less engine_claim_margin, so that a
failed renewal can be tried again before the engine must stop acting.
"""
        ),
    ),
    cfg.FloatOpt(
        "engine_claim_margin",
        default=5.0,
        min=0.1,
        help=paragraphs(
            """
(masakari rewrite only) Seconds before its claim expires at which an engine
that could not renew it stops acting on the notification (no more Nova
calls, no more writes). It covers clock differences between engine hosts and
the time a request takes to reach Nova.
"""
        ),
    ),
]

EVACUATION_OPTS: list[cfg.Opt] = [
    cfg.IntOpt(
        "max_evacuations_in_flight",
        default=0,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) Most evacuations in flight against Nova at once, across
every engine sharing the database: from the evacuate request until the engine
sees the instance moved. Evacuations of all running notifications wait for a
slot in priority order (HA-enabled instances first, then older notifications
first), and host_failure_recovery_threads no longer limits a notification. A
slot is held under the notification's claim: the slots of an engine that died
are free again when its claims expire. 0 (the default) sets no cap: each
notification evacuates host_failure_recovery_threads instances at once, as the
reference does.
"""
        ),
    ),
    cfg.BoolOpt(
        "evacuation_batched_polling",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) While instances are evacuating, ask Nova every
verify_interval for the servers of each failed host with one
``GET /servers/detail?all_tenants=True&host=...`` per host, instead of one
``GET /servers/{id}`` per evacuating instance. An instance that left its host is
read once to confirm its state. Off by default: the reference polls each
instance.
"""
        ),
    ),
]

OPTS: list[cfg.Opt] = RPC_OPTS + NOTIFICATION_OPTS + DRIVER_OPTS + PROJECT_OPTS + EVACUATION_OPTS


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]
