"""[detection] and [verdict]: host failures found without agents, and judged before recovery."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "detection",
    title="Failure detection",
    help=(
        "(masakari rewrite only) One masakari-engine at a time polls Nova's nova-compute "
        "services and reports the hosts whose service is down, or whose heartbeat is too "
        "old, as COMPUTE_HOST failures through the same intake as a monitor's report, "
        "behind safety gates. Off by default (masakari 22.0.0 has no detector)."
    ),
)

VERDICT_GROUP = cfg.OptGroup(
    "verdict",
    title="Failure verdict",
    help=(
        "(masakari rewrite only) Which signals must agree before a host failure is "
        "recovered; a failure the rule does not confirm is held for an operator."
    ),
)

# What the breaker (and the storm cooldown after it) does with the hosts it finds down.
BREAKER_HOLD = "hold"
BREAKER_SKIP = "skip"

# What the detector does with what its gates let through.
MODE_ACT = "act"
MODE_SHADOW = "shadow"

# The verdict rules.
RULE_MONITOR = "monitor"
RULE_ANY_TWO = "any_two"
RULE_FENCE = "fence"
RULES = (RULE_MONITOR, RULE_ANY_TWO, RULE_FENCE)

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "enabled",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Run the failure detector in masakari-engine (one engine
at a time). Its reports carry host_status UNKNOWN and are judged by [verdict]
rule before anything is recovered: with the default rule they wait for a
monitor's report, or for an operator's release. See docs/operations.md,
Detection.
"""
        ),
    ),
    cfg.StrOpt(
        "mode",
        default=MODE_ACT,
        choices=[
            (MODE_ACT, "report the failures found through the intake, to be recovered"),
            (
                MODE_SHADOW,
                "report nothing: record what would have been reported, and what the gates "
                "decided, in masakari_detector_shadow_reports and metrics",
            ),
        ],
        help=paragraphs(
            """
(masakari rewrite only) What the detector does with the hosts its gates let
through. ``shadow`` polls and runs every gate as ``act`` does but creates no
notification: an operator reads what it would have reported (``masakari-manage
detection shadow``) before letting it act. See docs/operations.md, Shadow mode.
"""
        ),
    ),
    cfg.FloatOpt(
        "poll_interval",
        default=10.0,
        min=0.1,
        help=paragraphs(
            """
(masakari rewrite only) Seconds between two reads of Nova's nova-compute
services (GET /os-services?binary=nova-compute, one request per poll).
"""
        ),
    ),
    cfg.FloatOpt(
        "grace_period",
        default=30.0,
        min=0.1,
        help=paragraphs(
            """
(masakari rewrite only) A host whose nova-compute heartbeat (the service's
updated_at) is older than this many seconds looks down, as does one Nova says is
down. Keep it well above Nova's [DEFAULT] report_interval (10 s): a heartbeat is
up to that old on a healthy host. The engines' and Nova's clocks must agree
(NTP).
"""
        ),
    ),
    cfg.IntOpt(
        "down_polls",
        default=1,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Consecutive polls a host must look down before it is
reported. A dead host is reported at most grace_period + down_polls x
poll_interval seconds after its last heartbeat.
"""
        ),
    ),
    cfg.IntOpt(
        "breaker_percent",
        default=50,
        min=1,
        max=100,
        help=paragraphs(
            """
(masakari rewrite only) The all-stale breaker: when more than this percentage
of a segment's watched hosts, or of all of them, look down in one poll, the
detector trusts nothing it sees (the controller, or Nova's heartbeats, may be
the broken part) and does what breaker_action says; so it does until
storm_cooldown seconds after the last poll past the threshold. 100 turns it off.
"""
        ),
    ),
    cfg.IntOpt(
        "breaker_min_hosts",
        default=3,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Smallest number of watched hosts a segment (or the
cloud) must have for the breaker's percentage to apply to it: in a segment of
two, one failure is half of it.
"""
        ),
    ),
    cfg.StrOpt(
        "breaker_action",
        default=BREAKER_HOLD,
        choices=[
            (BREAKER_HOLD, "report the hosts, each held for an operator's release"),
            (BREAKER_SKIP, "report nothing; the metrics and the alert say why"),
        ],
        help=paragraphs(
            """
(masakari rewrite only) What the breaker, and the storm cooldown after it, do
with the hosts found down.
"""
        ),
    ),
    cfg.IntOpt(
        "storm_cooldown",
        default=600,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) Seconds after the last poll past the breaker's
threshold during which every host found down is still treated as the breaker
treats it. Kept with the detector's lease: a new detector honours it.
"""
        ),
    ),
    cfg.IntOpt(
        "cliff_percent",
        default=20,
        min=0,
        max=100,
        help=paragraphs(
            """
(masakari rewrite only) The heartbeat cliff: when the hosts with a fresh
heartbeat drop by more than this percentage (and by two hosts or more) from one
poll to the next, nothing new is reported for cliff_polls polls: a message bus
or database hiccup of Nova makes many heartbeats late at once, and they come
back. 0 turns it off.
"""
        ),
    ),
    cfg.IntOpt(
        "cliff_polls",
        default=3,
        min=1,
        help="(masakari rewrite only) Polls the detector waits after a heartbeat cliff.",
    ),
    cfg.IntOpt(
        "max_reports_per_poll",
        default=5,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) Most hosts one poll reports for recovery; the others
wait for the next polls, oldest failure first. Held reports (breaker, storm)
are not counted. 0: no cap.
"""
        ),
    ),
]

VERDICT_OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "rule",
        default=RULE_MONITOR,
        choices=[
            (
                RULE_MONITOR,
                "the monitor alone, as masakari 22.0.0: a report with host_status NORMAL is "
                "recovered; the detector's reports wait for a monitor's",
            ),
            (
                RULE_ANY_TWO,
                "two signals among the monitor's report with host_status NORMAL, Nova's "
                "service state or heartbeat, and host fencing (a proof, or fencing "
                "configured for the host) agree that the host failed",
            ),
            (
                RULE_FENCE,
                "a confirmed fence: host fencing proves the host off before anything is "
                "evacuated; a host without fencing is held",
            ),
        ],
        help=paragraphs(
            """
(masakari rewrite only) What confirms a host failure before it is recovered. A
failure the rule does not confirm within ``wait`` seconds is held, with the
reason; an operator's release confirms it.
"""
        ),
    ),
    cfg.FloatOpt(
        "wait",
        default=120.0,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) Seconds the engine waits for the signals the rule needs
(a monitor's report, Nova's heartbeat growing old) before it holds the failure.
"""
        ),
    ),
    cfg.StrOpt(
        "shadow_rule",
        choices=[(rule, f"judge under rule {rule} too") for rule in RULES],
        help=paragraphs(
            """
(masakari rewrite only) A second rule each COMPUTE_HOST failure (event STOPPED)
is judged under, without effect: the engine acts on ``rule``, and records what
``shadow_rule`` would have decided (confirm, wait or hold, and why) as the
failure's evidence (kind ``shadow``) and in metrics. Unset: none. See
docs/operations.md, Shadow mode.
"""
        ),
    ),
]


def list_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS), (VERDICT_GROUP, VERDICT_OPTS)]


def verdict_active(conf: cfg.ConfigOpts) -> bool:
    """Whether host failures are judged (and their evidence kept): never at the defaults."""
    return (
        bool(conf.detection.enabled)
        or conf.verdict.rule != RULE_MONITOR
        or conf.verdict.shadow_rule is not None
    )


def shadow(conf: cfg.ConfigOpts) -> bool:
    """Whether the detector records what it would report instead of reporting it."""
    return bool(conf.detection.mode == MODE_SHADOW)
