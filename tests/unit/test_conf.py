"""masakari.conf: the reference's options, the project's own, parsing and the generator."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from oslo_config import cfg, generator

import masakari
import masakari.conf
from masakari.conf import opts
from tests.support.options import FLOWS, option_value

REFERENCE_OPTIONS = (
    Path(__file__).resolve().parents[3] / "shared/spec/reference/config-options.json"
)
REPO = Path(__file__).resolve().parents[2]

# The options masakari adds to the reference's, with (type, default, min).
PROJECT_ONLY = {
    ("DEFAULT", "engine_poll_interval"): ("floating point value", 0.5, 0.05),
    ("DEFAULT", "engine_claim_timeout"): ("integer value", 20, 3),
    ("DEFAULT", "engine_claim_renew_interval"): ("floating point value", 5.0, 0.1),
    ("DEFAULT", "engine_claim_margin"): ("floating point value", 5.0, 0.1),
    ("DEFAULT", "nova_api_timeout"): ("floating point value", 60.0, 1),
    ("DEFAULT", "nova_service_update_timeout"): ("floating point value", 120.0, 1),
    ("DEFAULT", "nova_api_max_connections"): ("integer value", 16, 1),
    ("host_failure", "force_down_fenced_host"): ("boolean value", False, None),
    ("host_failure", "retry_only_while_host_down"): ("boolean value", False, None),
    ("DEFAULT", "api_max_microversion"): ("string value", "1.3", None),
    ("guards", "segment_max_failed_hosts"): ("integer value", 0, 0),
    ("guards", "segment_max_failed_hosts_percent"): ("integer value", 0, 0),
    ("guards", "global_max_failed_hosts"): ("integer value", 0, 0),
    ("guards", "global_max_failed_hosts_percent"): ("integer value", 0, 0),
    ("guards", "failed_hosts_window"): ("integer value", 300, 1),
    ("guards", "hold_unknown_host_reports"): ("boolean value", False, None),
    ("host_return", "unset_forced_down"): ("boolean value", False, None),
    ("host_return", "enable_compute_service"): ("boolean value", False, None),
    ("host_return", "clear_on_maintenance"): ("boolean value", False, None),
    ("host_return", "return_reserved_hosts"): ("boolean value", False, None),
    ("drill", "enabled"): ("boolean value", False, None),
    ("drill", "canary_tag"): ("string value", "masakari-canary", None),
    ("drill", "schedule_interval"): ("integer value", 0, 0),
    ("drill", "poll_interval"): ("floating point value", 2.0, 0.05),
    ("drill", "service_up_timeout"): ("floating point value", 600.0, 1),
    ("drill", "migration_timeout"): ("floating point value", 600.0, 1),
    ("host_failure", "scope_include_projects"): ("list value", [], None),
    ("host_failure", "scope_exclude_projects"): ("list value", [], None),
    ("host_failure", "scope_include_flavors"): ("list value", [], None),
    ("host_failure", "scope_exclude_flavors"): ("list value", [], None),
    ("host_failure", "scope_include_images"): ("list value", [], None),
    ("host_failure", "scope_exclude_images"): ("list value", [], None),
    ("host_failure", "scope_include_metadata"): ("list value", [], None),
    ("host_failure", "scope_exclude_metadata"): ("list value", [], None),
    ("host_failure", "scope_include_aggregates"): ("list value", [], None),
    ("host_failure", "scope_exclude_aggregates"): ("list value", [], None),
    ("host_failure", "check_server_groups"): ("boolean value", False, None),
    ("host_failure", "no_shared_storage"): ("boolean value", False, None),
    ("host_failure", "order_by_priority"): ("boolean value", False, None),
    ("host_failure", "ordering_metadata_source"): ("string value", "instance", None),
    ("host_failure", "priority_instance_metadata_key"): ("string value", "HA_Priority", None),
    ("host_failure", "capacity_aware_targets"): ("boolean value", False, None),
    ("host_failure", "order_in_groups"): ("boolean value", False, None),
    ("host_failure", "group_instance_metadata_key"): ("string value", "HA_Group", None),
    ("host_failure", "group_start_timeout"): ("integer value", 600, 1),
    ("metrics", "enabled"): ("boolean value", False, None),
    ("metrics", "listen"): ("host address value", "127.0.0.1", None),
    ("metrics", "api_port"): ("port value", None, 0),
    ("metrics", "engine_port"): ("port value", None, 0),
    ("DEFAULT", "max_evacuations_in_flight"): ("integer value", 0, 0),
    ("DEFAULT", "evacuation_batched_polling"): ("boolean value", False, None),
    ("fencing", "config_file"): ("string value", None, None),
    ("fencing", "unfenced_hosts"): ("string value", "recover", None),
    ("fencing", "confirm_timeout"): ("floating point value", 30.0, 1),
    ("fencing", "confirm_interval"): ("floating point value", 1.0, 0.05),
    ("fencing", "power_on_after_recovery"): ("boolean value", False, None),
    ("fencing", "kdump_listen"): ("string value", None, None),
    ("fencing", "kdump_max_age"): ("integer value", 600, 1),
    ("fencing", "kdump_trust"): ("string value", "proof", None),
    ("fencing", "check_interval"): ("integer value", 300, 0),
    ("detection", "enabled"): ("boolean value", False, None),
    ("detection", "mode"): ("string value", "act", None),
    ("detection", "poll_interval"): ("floating point value", 10.0, 0.1),
    ("detection", "grace_period"): ("floating point value", 30.0, 0.1),
    ("detection", "down_polls"): ("integer value", 1, 1),
    ("detection", "breaker_percent"): ("integer value", 50, 1),
    ("detection", "breaker_min_hosts"): ("integer value", 3, 1),
    ("detection", "breaker_action"): ("string value", "hold", None),
    ("detection", "storm_cooldown"): ("integer value", 600, 0),
    ("detection", "cliff_percent"): ("integer value", 20, 0),
    ("detection", "cliff_polls"): ("integer value", 3, 1),
    ("detection", "max_reports_per_poll"): ("integer value", 5, 0),
    ("verdict", "rule"): ("string value", "monitor", None),
    ("verdict", "wait"): ("floating point value", 120.0, 0),
    ("verdict", "shadow_rule"): ("string value", None, None),
    ("capacity", "failures_to_tolerate"): ("integer value", 0, 0),
    ("capacity", "segment_failures_to_tolerate"): ("dict value", {}, None),
    ("capacity", "check_interval"): ("integer value", 0, 0),
    ("capacity", "hold_room"): ("boolean value", False, None),
    ("capacity", "hold_interval"): ("integer value", 60, 5),
    ("quarantine", "enabled"): ("boolean value", False, None),
    ("quarantine", "max_hosts_per_segment"): ("integer value", 1, 1),
    ("quarantine", "max_percent"): ("integer value", 50, 1),
    ("quarantine", "max_concurrent_migrations"): ("integer value", 2, 1),
    ("quarantine", "migration_timeout"): ("integer value", 900, 10),
    ("quarantine", "block_migration"): ("string value", "auto", None),
    ("quarantine", "disable_reason"): ("string value", "masakari quarantine", None),
    ("quarantine", "poll_interval"): ("integer value", 5, 1),
    ("quarantine", "alertmanager_username"): ("string value", None, None),
    ("quarantine", "alertmanager_password"): ("string value", None, None),
    ("quarantine", "alertmanager_bearer_token"): ("string value", None, None),
    ("quarantine", "alert_host_labels"): (
        "list value",
        ["host", "hostname", "nodename", "instance"],
        None,
    ),
    ("quarantine", "redfish_health_interval"): ("integer value", 0, 0),
    ("quarantine", "redfish_health_quarantine"): ("list value", ["Critical"], None),
    ("quarantine", "storage_error_instances"): ("integer value", 0, 0),
    ("quarantine", "storage_error_window"): ("integer value", 300, 1),
    ("quarantine", "storage_loss_action"): ("string value", "conservative", None),
    ("quarantine", "storage_loss_fallback"): ("boolean value", True, None),
    ("quarantine", "segment_storage_loss_action"): ("dict value", {}, None),
}

# Defaults that depend on the machine; config-options.json holds the
# reference's machine's value or a placeholder.
MACHINE_DEFAULTS = {
    ("DEFAULT", "host"): socket.gethostname(),
    ("DEFAULT", "pybasedir"): str(Path(masakari.__file__).resolve().parents[1]),
    ("DEFAULT", "bindir"): os.path.join(sys.prefix, "local", "bin"),
}


def _reference() -> dict[str, list[dict[str, Any]]]:
    if not REFERENCE_OPTIONS.exists():
        pytest.skip(f"reference facts not available: {REFERENCE_OPTIONS}")
    return json.loads(REFERENCE_OPTIONS.read_text())


def _declared() -> dict[tuple[str, str], cfg.Opt]:
    """Every project option, by (group, name), from the two generator namespaces."""
    found: dict[tuple[str, str], cfg.Opt] = {}
    for group, group_opts in opts.list_opts() + opts.list_recovery_workflow_opts():
        name = group.name if isinstance(group, cfg.OptGroup) else group
        for opt in group_opts:
            assert (name, opt.name) not in found, f"{name}.{opt.name} declared twice"
            found[(name, opt.name)] = opt
    return found


def _reference_cases() -> list[tuple[str, dict[str, Any]]]:
    if not REFERENCE_OPTIONS.exists():
        return []
    data = json.loads(REFERENCE_OPTIONS.read_text())
    return [(group, item) for group, items in data.items() for item in items]


@pytest.fixture(scope="module")
def conf() -> cfg.ConfigOpts:
    return masakari.conf.for_tests()


# --- the reference's options -------------------------------------------------------------


def test_reference_facts_cover_all_groups() -> None:
    ref = _reference()
    assert sum(len(v) for v in ref.values()) == 80
    declared = _declared()
    reference_keys = {(group, item["name"]) for group, items in ref.items() for item in items}
    assert set(declared) - reference_keys == set(PROJECT_ONLY)
    assert reference_keys - set(declared) == set()


@pytest.mark.parametrize(
    ("group", "item"),
    _reference_cases(),
    ids=[f"{g}.{i['name']}" for g, i in _reference_cases()],
)
def test_option_matches_reference(conf: cfg.ConfigOpts, group: str, item: dict[str, Any]) -> None:
    opt = _declared()[(group, item["name"])]
    assert opt.type.type_name == item["type"]
    # The facts leave out falsy attributes: no key means False, None, 0 or [].
    assert (getattr(opt.type, "min", None) or 0) == item.get("min", 0)
    assert getattr(opt.type, "max", None) == item.get("max")
    choices = getattr(opt.type, "choices", None)
    assert (list(choices) if choices else None) == item.get("choices")
    assert opt.secret is item.get("secret", False)
    if "sample_default" in item:
        assert opt.sample_default == item["sample_default"]
    deprecated = [{"group": d.group, "name": d.name or opt.name} for d in opt.deprecated_opts]
    assert deprecated == item.get("deprecated_opts", [])

    expected = MACHINE_DEFAULTS.get((group, item["name"]), item.get("default"))
    actual = option_value(conf, group, item["name"])
    if (group, item["name"]) == ("DEFAULT", "state_path"):
        assert opt.default == expected
        assert actual == MACHINE_DEFAULTS[("DEFAULT", "pybasedir")]
    elif "default" in item:
        assert actual == expected
    else:
        falsy = {"boolean value": False, "list value": []}.get(item["type"])
        assert actual == falsy and type(actual) is type(falsy), f"{group}.{item['name']}"


def test_zero_minimums_match_reference() -> None:
    # config-options.json cannot tell min=0 from no minimum: the reference's source can.
    zero = {
        key
        for key, opt in _declared().items()
        if getattr(opt.type, "min", None) == 0 and key not in PROJECT_ONLY
    }
    assert zero == {
        ("DEFAULT", "notification_delay_max"),
        ("DEFAULT", "duplicate_notification_detection_interval"),
    }


def test_deprecation_flags_match_reference() -> None:
    declared = _declared()
    removal = {key for key, opt in declared.items() if opt.deprecated_for_removal}
    assert removal == {
        ("DEFAULT", "use_forwarded_for"),
        ("DEFAULT", "masakari_topic"),
        ("osapi_v1", "extensions_blacklist"),
        ("osapi_v1", "extensions_whitelist"),
        ("osapi_v1", "project_id_regex"),
        ("ssl", "ca_file"),
        ("ssl", "cert_file"),
        ("ssl", "key_file"),
        ("ssl", "version"),
        ("ssl", "ciphers"),
        ("wsgi", "secure_proxy_ssl_header"),
        # The project's own: ignored since kdump messages count from the report on.
        ("fencing", "kdump_max_age"),
    }
    assert declared[("DEFAULT", "masakari_topic")].deprecated_since == "3.0.0"
    assert {key for key, opt in declared.items() if opt.mutable} == {
        ("DEFAULT", "retry_notification_new_status_interval")
    }


def test_every_option_has_help() -> None:
    for key, opt in _declared().items():
        assert opt.help and opt.help.strip(), key


# --- the project's own options ------------------------------------------------------------


@pytest.mark.parametrize(("key", "expected"), sorted(PROJECT_ONLY.items()))
def test_project_only_option(
    conf: cfg.ConfigOpts, key: tuple[str, str], expected: tuple[str, Any, Any]
) -> None:
    type_name, default, minimum = expected
    opt = _declared()[key]
    assert opt.type.type_name == type_name
    assert option_value(conf, *key) == default
    assert getattr(opt.type, "min", None) == minimum
    assert "masakari rewrite only" in opt.help


def test_project_only_minimums_are_enforced() -> None:
    for key, value in [
        ("engine_poll_interval", 0.01),
        ("engine_claim_timeout", 2),
        ("engine_claim_renew_interval", 0.05),
        ("engine_claim_margin", 0.05),
        ("nova_api_timeout", 0.5),
    ]:
        with pytest.raises(ValueError):
            masakari.conf.for_tests(**{key: value})


def test_force_down_help_warns_about_live_hosts() -> None:
    text = _declared()[("host_failure", "force_down_fenced_host")].help
    assert "host_status: NORMAL" in text
    assert "corrupting" in text
    assert "wait_period_after_service_update" in text


# --- recovery flows -----------------------------------------------------------------------


def test_flow_defaults(conf: cfg.ConfigOpts) -> None:
    flows = getattr(conf, FLOWS)
    assert flows.host_auto_failure_recovery_tasks == {
        "pre": ["disable_compute_service_task"],
        "main": ["prepare_HA_enabled_instances_task"],
        "post": ["evacuate_instances_task"],
    }
    assert flows.host_rh_failure_recovery_tasks == {
        "pre": ["disable_compute_service_task"],
        "main": ["prepare_HA_enabled_instances_task", "evacuate_instances_task"],
        "post": [],
    }
    assert flows.instance_failure_recovery_tasks == {
        "pre": ["stop_instance_task"],
        "main": ["start_instance_task"],
        "post": ["confirm_instance_active_task"],
    }
    assert flows.process_failure_recovery_tasks == {
        "pre": ["disable_compute_node_task"],
        "main": ["confirm_compute_node_disabled_task"],
        "post": [],
    }


def test_flow_default_is_not_shared_between_objects() -> None:
    first = masakari.conf.for_tests()
    getattr(first, FLOWS).host_auto_failure_recovery_tasks["pre"].append("mutated")
    second = masakari.conf.for_tests()
    assert getattr(second, FLOWS).host_auto_failure_recovery_tasks["pre"] == [
        "disable_compute_service_task"
    ]


def test_flow_override_accepts_text_and_dict() -> None:
    key = f"{FLOWS}.process_failure_recovery_tasks"
    as_text = masakari.conf.for_tests(**{key: "pre:[a],main:[b, c],post:[]"})
    assert getattr(as_text, FLOWS).process_failure_recovery_tasks == {
        "pre": ["a"],
        "main": ["b", "c"],
        "post": [],
    }
    as_dict = masakari.conf.for_tests(**{key: {"main": ["x"]}})
    assert getattr(as_dict, FLOWS).process_failure_recovery_tasks == {"main": ["x"]}


# --- loading ------------------------------------------------------------------------------


def test_for_tests_overrides() -> None:
    conf = masakari.conf.for_tests(
        **{
            "wait_period_after_service_update": 0,
            "host_failure.evacuate_all_instances": False,
            "DEFAULT.verify_interval": 3,
            "database.connection": "sqlite://",
        }
    )
    assert conf.wait_period_after_service_update == 0
    assert conf.host_failure.evacuate_all_instances is False
    assert conf.verify_interval == 3
    assert conf.database.connection == "sqlite://"


def test_for_tests_rejects_unknown_options() -> None:
    with pytest.raises(cfg.NoSuchOptError):
        masakari.conf.for_tests(not_an_option=1)
    with pytest.raises(cfg.NoSuchGroupError):
        masakari.conf.for_tests(**{"nowhere.host": "x"})


def test_for_tests_ignores_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_DEFAULT__VERIFY_INTERVAL", "7")
    assert masakari.conf.for_tests().verify_interval == 1


def test_each_call_gives_a_new_object() -> None:
    first = masakari.conf.for_tests(verify_interval=5)
    assert masakari.conf.for_tests().verify_interval == 1
    assert first.verify_interval == 5


def test_register_opts_is_idempotent_even_after_parsing() -> None:
    conf = masakari.conf.for_tests()
    masakari.conf.register_opts(conf)
    masakari.conf.register_opts(conf)
    assert conf.masakari_api_listen_port == 15868


def test_database_defaults(conf: cfg.ConfigOpts) -> None:
    assert conf.state_path == conf.pybasedir
    assert conf.database.connection == f"sqlite:///{conf.pybasedir}/masakari.sqlite"
    assert conf.taskflow.connection is None


def test_library_defaults_are_per_object(conf: cfg.ConfigOpts) -> None:
    from oslo_middleware import cors

    assert conf.control_exchange == "masakari"
    assert conf.cors.allow_methods == ["GET", "PUT", "POST", "DELETE", "PATCH"]
    assert "X-Openstack-Request-Id" in conf.cors.allow_headers
    assert "X-Subject-Token" in conf.cors.expose_headers
    # The module-level options stay as the library made them.
    module_default = {opt.name: opt.default for opt in cors.CORS_OPTS}["allow_methods"]
    assert module_default != ["GET", "PUT", "POST", "DELETE", "PATCH"]
    plain = cfg.ConfigOpts()
    plain.register_opts(cors.CORS_OPTS, group="cors")
    plain([])
    assert plain.cors.allow_methods == module_default


def test_library_consumers_accept_the_registered_options(tmp_path: Path) -> None:
    """The libraries register their own option objects later: they must not clash."""
    from keystonemiddleware import auth_token
    from oslo_middleware import cors, http_proxy_to_wsgi, sizelimit
    from oslo_policy import policy

    conf = masakari.conf.for_tests(**{"oslo_concurrency.lock_path": str(tmp_path)})

    def app(environ: Any, start_response: Any) -> list[bytes]:
        return []

    cors.CORS(app, conf)
    http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
    sizelimit.RequestBodySizeLimiter(app, conf)
    auth_token.AuthProtocol(app, {"oslo_config_config": conf})
    policy.Enforcer(conf)

    import oslo_messaging

    transport = oslo_messaging.get_rpc_transport(conf, url="fake:/")
    oslo_messaging.get_notification_transport(conf, url="fake:/")
    transport.cleanup()
    assert conf.cors.allow_methods == ["GET", "PUT", "POST", "DELETE", "PATCH"]


# --- sample generation --------------------------------------------------------------------


def test_entry_points_resolve() -> None:
    points = {ep.name: ep for ep in metadata.entry_points(group="oslo.config.opts")}
    assert points["masakari.conf"].load() is opts.list_opts
    assert points["customized_recovery_flow_opts"].load() is opts.list_recovery_workflow_opts


def _generate(namespaces: list[str]) -> str:
    gen_conf = cfg.ConfigOpts()
    generator.register_cli_opts(gen_conf)
    gen_conf(["--wrap-width", "80"] + [f"--namespace={ns}" for ns in namespaces])
    out = io.StringIO()
    generator.generate(gen_conf, output_file=out)
    return out.getvalue()


def _sections(sample: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    current = ""
    for line in sample.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
        elif match := re.match(r"#(\w+) =", line):
            found.setdefault(current, set()).add(match.group(1))
    return found


def test_generator_prints_every_reference_option() -> None:
    ref = _reference()
    sections = _sections(_generate(["masakari.conf", "customized_recovery_flow_opts"]))
    for group, items in ref.items():
        assert {item["name"] for item in items} <= sections[group], group
    assert "taskflow_driver_recovery_flows" not in _sections(_generate(["masakari.conf"]))


def test_committed_sample_lists_every_option() -> None:
    sample = (REPO / "etc/masakari/masakari.conf.sample").read_text()
    sections = _sections(sample)
    for group, name in _declared():
        assert name in sections[group], f"{group}.{name} missing: regenerate the sample"
    for section in ("keystone_authtoken", "database", "oslo_policy", "cors", "oslo_middleware"):
        assert section in sections
    # Machine-specific defaults must not leak into the committed file.
    assert str(REPO) not in sample
    assert socket.gethostname() not in sample.replace("#host = <HOSTNAME>", "")
