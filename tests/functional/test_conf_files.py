"""masakari.conf as a deployer writes it, read from disk: flows, a conf directory, the default
locations, bad values, the log file (the options themselves: tests/unit/test_conf.py)."""

from __future__ import annotations

import logging
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
from oslo_config import cfg

import masakari
import masakari.conf
from masakari.conf import libraries, opts
from masakari.engine import wakeup
from tests.support.options import FLOWS, option_value

# Outputs checked against the reference's parser (oslo.config 10.7).
FLOW_CASES = [
    (
        "pre:['disable_compute_service_task'],main:['prepare_HA_enabled_instances_task'],"
        "post:['evacuate_instances_task']",
        {
            "pre": ["disable_compute_service_task"],
            "main": ["prepare_HA_enabled_instances_task"],
            "post": ["evacuate_instances_task"],
        },
    ),
    (
        "pre:[disable_compute_service_task],"
        "main:[prepare_HA_enabled_instances_task, evacuate_instances_task],post:[]",
        {
            "pre": ["disable_compute_service_task"],
            "main": ["prepare_HA_enabled_instances_task", "evacuate_instances_task"],
            "post": [],
        },
    ),
    ('pre:["a", "b"],main:[],post:[]', {"pre": ["a", "b"], "main": [], "post": []}),
    ("pre:[a,b],main:[c]", {"pre": ["a", "b"], "main": ["c"]}),
    ("pre:['a,b']", {"pre": ["a,b"]}),
    ("pre:[a] , main : [ b , c ] ", {"pre": ["a"], "main": ["b", "c"]}),
    ('pre:["a b"]', {"pre": ["a b"]}),
    ("x:[a]", {"x": ["a"]}),
    ("", {}),
]


BAD_FLOWS = [
    "pre:disable_compute_service_task,main:prepare_HA_enabled_instances_task",
    "{pre:[a],main:[b],post:[c]}",
    "pre:a,b",
    "pre:'a'",
    "pre:[a",
]


def _conf_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "masakari.conf"
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.mark.parametrize(("text", "expected"), FLOW_CASES)
def test_flow_parsing_from_file(tmp_path: Path, text: str, expected: dict[str, list[str]]) -> None:
    path = _conf_file(tmp_path, f"[{FLOWS}]\nhost_auto_failure_recovery_tasks = {text}\n")
    loaded = masakari.conf.load(["--config-file", path], default_config_files=[])
    assert getattr(loaded, FLOWS).host_auto_failure_recovery_tasks == expected


@pytest.mark.parametrize("text", BAD_FLOWS)
def test_flow_parsing_rejects(tmp_path: Path, text: str) -> None:
    path = _conf_file(tmp_path, f"[{FLOWS}]\ninstance_failure_recovery_tasks = {text}\n")
    loaded = masakari.conf.load(["--config-file", path], default_config_files=[])
    with pytest.raises(cfg.ConfigFileValueError):
        getattr(loaded, FLOWS).instance_failure_recovery_tasks  # noqa: B018


def test_load_reads_cli_dir_and_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    confd = tmp_path / "masakari.conf.d"
    confd.mkdir()
    (confd / "10-port.conf").write_text("[DEFAULT]\nmasakari_api_listen_port = 9999\n")
    path = _conf_file(tmp_path, "[DEFAULT]\nverify_interval = 4\n")
    loaded = masakari.conf.load(
        ["--config-file", path, "--config-dir", str(confd)], default_config_files=[]
    )
    assert loaded.verify_interval == 4
    assert loaded.masakari_api_listen_port == 9999
    assert loaded.config_file == [path]
    assert loaded.project == "masakari"
    assert masakari.conf.version() == metadata.version("masakari") == "22.0.0"

    with pytest.raises(SystemExit):
        masakari.conf.load(["--version"], default_config_files=[], prog="masakari-engine")
    assert "22.0.0" in capsys.readouterr().out


def test_load_finds_default_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    home_dir = tmp_path / ".masakari"
    home_dir.mkdir()
    (home_dir / "masakari.conf").write_text("[DEFAULT]\nverify_interval = 6\n")
    loaded = masakari.conf.load([], prog="masakari-engine")
    assert loaded.verify_interval == 6


def test_load_rejects_bad_values(tmp_path: Path) -> None:
    path = _conf_file(tmp_path, "[DEFAULT]\nauth_strategy = ldap\nmasakari_api_listen_port = 0\n")
    loaded = masakari.conf.load(["--config-file", path], default_config_files=[])
    with pytest.raises(cfg.ConfigFileValueError):
        loaded.auth_strategy  # noqa: B018
    with pytest.raises(cfg.ConfigFileValueError):
        loaded.masakari_api_listen_port  # noqa: B018


DEPLOYER_CONF = """
[DEFAULT]
debug = True
log_dir = {tmp}/log
transport_url = rabbit://masakari:secret@rabbit:5672/
control_exchange = masakari
auth_strategy = keystone
masakari_api_listen = 192.0.2.10
masakari_api_workers = 4
os_privileged_user_name = nova
os_privileged_user_password = pw
os_privileged_user_tenant = service
os_privileged_user_auth_url = http://keystone:5000/v3
duplicate_notification_detection_interval = 60
wait_period_after_service_update = 30
notification_delay_max = 0
graceful_shutdown_timeout = 60
host = compute-ha-1
monkey_patch = false
nova_api_timeout = 30
engine_poll_interval = 1.5

[database]
connection = mysql+pymysql://masakari:pw@db/masakari?charset=utf8
max_retries = -1

[taskflow]
connection = mysql+pymysql://masakari:pw@db/masakari_taskflow

[keystone_authtoken]
www_authenticate_uri = http://keystone:5000
auth_url = http://keystone:5000
memcached_servers = memcache:11211
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = masakari
password = pw
service_token_roles_required = true

[oslo_messaging_notifications]
driver = messagingv2

[oslo_messaging_rabbit]
rabbit_ha_queues = true
heartbeat_timeout_threshold = 30

[oslo_policy]
policy_file = /etc/masakari/policy.yaml

[oslo_middleware]
enable_proxy_headers_parsing = true
max_request_body_size = 65536

[cors]
allowed_origin = https://dashboard.example.com

[oslo_concurrency]
lock_path = {tmp}/lock

[coordination]
backend_url = etcd3+http://etcd:2379

[wsgi]
api_paste_config = /etc/masakari/api-paste.ini

[host_failure]
evacuate_all_instances = false
ignore_instances_in_error_state = true
force_down_fenced_host = true

[instance_failure]
process_all_instances = true

[taskflow_driver_recovery_flows]
host_auto_failure_recovery_tasks = {flows}

[osapi_v1]
project_id_regex = [0-9a-z]+

[ssl]
ca_file = /etc/ssl/ca.pem

[oslo_versionedobjects]
fatal_exception_format_errors = false
"""


def _every_option(conf: cfg.ConfigOpts) -> list[tuple[str, str]]:
    groups = opts.list_opts() + opts.list_recovery_workflow_opts() + list(libraries.library_opts())
    names = []
    for group, group_opts in groups:
        name = group.name if isinstance(group, cfg.OptGroup) else (group or "DEFAULT")
        names.extend((name, opt.dest) for opt in group_opts)
    return names


def test_deployer_conf_parses(tmp_path: Path) -> None:
    flows = (
        "pre:[disable_compute_service_task],main:[prepare_HA_enabled_instances_task],"
        "post:[evacuate_instances_task]"
    )
    path = _conf_file(tmp_path, DEPLOYER_CONF.format(tmp=tmp_path, flows=flows))
    loaded = masakari.conf.load(["--config-file", path], default_config_files=[])
    # Reading every option makes oslo.config convert and check every value.
    for group, name in _every_option(loaded):
        option_value(loaded, group, name)
    assert loaded.debug is True
    assert loaded.transport_url.startswith("rabbit://")
    assert loaded.database.connection.startswith("mysql+pymysql://")
    assert loaded.database.max_retries == -1
    assert loaded.keystone_authtoken.auth_type == "password"
    assert loaded.keystone_authtoken.www_authenticate_uri == "http://keystone:5000"
    assert loaded.oslo_messaging_notifications.driver == ["messagingv2"]
    assert loaded.oslo_policy.policy_file == "/etc/masakari/policy.yaml"
    assert loaded.oslo_middleware.enable_proxy_headers_parsing is True
    assert loaded.oslo_middleware.max_request_body_size == 65536
    assert loaded.cors.allowed_origin == ["https://dashboard.example.com"]
    assert loaded.oslo_concurrency.lock_path == f"{tmp_path}/lock"
    assert loaded.coordination.backend_url == "etcd3+http://etcd:2379"
    assert loaded.host_failure.force_down_fenced_host is True
    assert loaded.host == "compute-ha-1"
    assert loaded.nova_api_timeout == 30.0
    assert loaded.engine_poll_interval == 1.5
    assert loaded.osapi_v1.project_id_regex == "[0-9a-z]+"
    assert getattr(loaded, FLOWS).host_auto_failure_recovery_tasks["post"] == [
        "evacuate_instances_task"
    ]


def test_setup_logging_writes_to_configured_file(tmp_path: Path) -> None:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    log_file = tmp_path / "masakari.log"
    conf = masakari.conf.for_tests(log_file=str(log_file), use_stderr=False)
    try:
        masakari.conf.setup_logging(conf)
        logging.getLogger("masakari.test").warning("hello from the test")
    finally:
        for handler in root.handlers:
            if handler not in saved[0]:
                handler.close()
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    assert "hello from the test" in log_file.read_text()


# --- the wake-up cast: on only when a deployer set transport_url -------------------------


def test_oslo_messaging_default_leaves_the_cast_off(tmp_path) -> None:
    path = tmp_path / "masakari.conf"
    path.write_text("[DEFAULT]\nhost = h\n")
    conf = masakari.conf.load(["--config-file", str(path)])
    # oslo.messaging's default names a broker on localhost: not a deployer's choice.
    assert conf.transport_url == "rabbit://"
    assert not wakeup.enabled(conf)
    assert wakeup.sender(conf) is wakeup.nothing
    assert wakeup.listener(conf, lambda: None) is None


def test_a_configured_transport_url_turns_it_on(tmp_path) -> None:
    path = tmp_path / "masakari.conf"
    path.write_text("[DEFAULT]\ntransport_url = rabbit://u:p@broker:5672/\n")
    conf = masakari.conf.load(["--config-file", str(path)])
    assert wakeup.enabled(conf)
    assert isinstance(wakeup.sender(conf), wakeup.Sender)
    assert isinstance(wakeup.listener(conf, lambda: None), wakeup.Listener)
