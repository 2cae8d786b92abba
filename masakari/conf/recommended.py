"""The recommended settings: what the project does better than the reference, turned on where
it is safe in every deployment (``masakari-manage config recommended``).

Every option of the project defaults to the reference's behaviour (docs/deviations.md); this
file is the one place that gathers those worth turning on, each with why and what it needs.
``etc/masakari/masakari.conf.recommended`` is this text (tests/unit/test_recommended.py
checks it), written by ``masakari-manage config recommended > FILE``.
"""

from __future__ import annotations

import configparser
import os

TEXT = """\
# masakari.conf.recommended: the project's recommended behaviour in one step.
#
# Every setting below is off by default, so that masakari behaves as masakari 22.0.0 until
# the operator opts in; each is safe in every deployment, and says why and what it needs.
# Use it whole (masakari-manage config recommended --merge /etc/masakari/masakari.conf adds
# each setting your file does not set yet, and keeps your own values), or pick lines.
# docs/operations.md explains each guard and step; docs/configuration.md lists every option.
#
# Left out on purpose:
# - [fencing] config_file (host fencing: masakari powers a failed host off through its BMC,
#   or sees its kdump message, before it evacuates anything, and then hands off at once,
#   without the wait_period_after_service_update sleep): it names your BMCs and their
#   credentials, which no sample can. Write the file (docs/configuration.md, "The fencing
#   file"; docs/operations.md, "Host fencing") and turn it on: it is the recommended setup.
# - [host_failure] force_down_fenced_host (the same fast hand-off on a monitor's word):
#   not needed with host fencing, which forces down the hosts it proved dead. Without it,
#   only with a monitor that reports host_status NORMAL once the host is proven powered
#   off; with a monitor that does not fence, every instance runs twice on shared disks.
# - [DEFAULT] max_evacuations_in_flight: set it to what your Nova can rebuild at once
#   (docs/engine.md, "Rack scale"); no value fits every cloud.
# - [host_failure] capacity_aware_targets, order_by_priority, order_in_groups: they need
#   Placement in the catalog, or tenants' metadata the operator trusts (docs/operations.md,
#   "Planning").
# - [detection] enabled (failures found from Nova's heartbeats, without agents) and
#   [verdict] rule: how a deployment finds and confirms failures is its own choice (with
#   masakari-monitors, without, or both; with host fencing or not); docs/operations.md,
#   "Detection", gives the settings for each.

[DEFAULT]
# The newest API microversion: held notifications and their release/cancel action (1.4),
# recovery plans and segment readiness (1.5), host fencing's evidence in notification show
# (1.6), a host failure's evidence (1.7), a segment's failures tolerated in its readiness
# (1.8), fire drills and the failover room held in Placement (1.9), quarantine (1.10).
# Clients at 1.0-1.3
# (openstacksdk, python-masakariclient, masakari-monitors) see exactly the reference's API;
# only a client asking for "latest" or 1.4+ sees the new fields.
api_max_microversion = 1.10
# One Nova list per failed host and second instead of one GET per evacuating instance: the
# same answers, far fewer requests while a rack evacuates. Needs nothing.
evacuation_batched_polling = true

[guards]
# Mass-failure guard: a partition, a switch or a monitoring fault makes many hosts look dead
# at once; evacuating them all starts second copies of their instances. Past these
# thresholds, counted over failed_hosts_window seconds, new host failure reports are held
# until an operator releases (or cancels) them: masakari-manage notification release UUID.
# More than half of a segment, or of the whole cloud, failing within five minutes is a
# partition far more often than a disaster (a 2-host segment still recovers its first
# failure, not its second).
segment_max_failed_hosts_percent = 50
global_max_failed_hosts_percent = 50
failed_hosts_window = 300
# A host_status UNKNOWN report (its monitor could not confirm the power-off) is held for
# confirmation instead of dropped: a later NORMAL report of the host recovers it, or an
# operator who checked releases it. The reference drops it without telling anyone.
hold_unknown_host_reports = true

[host_failure]
# The periodic retry of a host failure recovery that ended in error first reads the host's
# nova-compute in Nova: a host back in the meantime (it heartbeated after the failed
# attempt ended) is left as that attempt left it, and its notification ends failed with the
# reason, for an operator to check and return it. The reference retries blindly: it
# disables the working host again and sends evacuations that Nova refuses ("still in
# use"), and the host stays out of service. Needs nothing but the engines' and Nova's
# clocks in sync (NTP).
retry_only_while_host_down = true

[host_return]
# When a recovered host's monitor reports it back (COMPUTE_HOST STARTED, host_status NORMAL)
# masakari undoes its own changes, so that the host takes instances again and its next
# failure is recovered (the reference leaves it disabled and on maintenance, refusing its
# next failure with a 409). Only a host on maintenance is returned, and its nova-compute is
# enabled only if masakari disabled it. A spare is given back to the reserved pool only
# once it holds no instance.
unset_forced_down = true
enable_compute_service = true
return_reserved_hosts = true
clear_on_maintenance = true

[metrics]
# Prometheus metrics: GET /metrics on the API (admin by default, policy
# os_masakari_api:metrics), and listeners without authentication on loopback only, for a
# Prometheus on the same machine. One engine per machine, or give each its own port. See
# docs/operations.md, "Monitoring", for the alert rules and the Grafana dashboard.
enabled = true
listen = 127.0.0.1
api_port = 9101
engine_port = 9102
"""


MARK = "# Added by masakari-manage config recommended --merge"


def settings() -> dict[str, dict[str, str]]:
    """The settings of TEXT: {section: {option: value}}, in order."""
    return _read(TEXT)


def _read(text: str) -> dict[str, dict[str, str]]:
    # [DEFAULT] is a section like the others here (configparser would copy it into each).
    parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="\x00none")
    parser.read_string(text)
    return {name: dict(parser[name]) for name in parser.sections()}


def merge(path: str) -> list[str]:
    """Append to the file at ``path`` each recommended setting it does not set yet (its own
    values, comments and layout stay as they are); a missing file gets TEXT whole. The
    settings added, as ``[section] option = value``."""
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(TEXT)
        return [f"[{s}] {o} = {v}" for s, opts in settings().items() for o, v in opts.items()]
    with open(path, encoding="utf-8") as fh:
        current = fh.read()
    present = _read(current)
    missing = {
        section: {o: v for o, v in opts.items() if o not in present.get(section, {})}
        for section, opts in settings().items()
    }
    missing = {section: opts for section, opts in missing.items() if opts}
    if not missing:
        return []
    # oslo.config reads a section named twice as one: the block can simply follow.
    block = [f"\n{MARK} (etc/masakari/masakari.conf.recommended explains each setting)"]
    for section, opts in missing.items():
        block += [f"[{section}]", *(f"{o} = {v}" for o, v in opts.items()), ""]
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(("" if current.endswith("\n") else "\n") + "\n".join(block))
    return [f"[{s}] {o} = {v}" for s, opts in missing.items() for o, v in opts.items()]
