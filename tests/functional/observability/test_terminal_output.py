"""masakari-manage prints what tenants named (a VM's name) inert: a terminal escape in it
neither clears the screen, retitles the window, writes the clipboard nor forges a line."""

from __future__ import annotations

from masakari.cmd import manage
from tests.support.deployment import Deployment, host_down, report, segment_with_host, settle

FAST = {
    "wait_period_after_service_update": "0",
    "wait_period_after_evacuation": "1",
    "verify_interval": "1",
    "engine_poll_interval": "0.1",
    "notification_delay_max": "0",
}
# Clear screen, window title, OSC 52 clipboard write, BEL, one-byte CSI, a carriage return
# that rewrites the line, a newline that forges a row, a bidirectional override.
HOSTILE = "vm\x1b[2J\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIC8=\x07\x9b31m\rfake\nrow\u202e"
RAW = ("\x1b", "\x07", "\x9b", "\r", "\u202e")


def _recovered_with_hostile_name(dep: Deployment) -> str:
    host_down(dep)
    dep.sim.add_server(host="compute-1", name=HOSTILE, metadata={"HA_Enabled": "True"})
    segment_with_host(dep)
    nid = report(dep)
    settle(dep, nid, timeout=60)
    return nid


def test_notification_show_neutralises_control_characters(capsys, tmp_path) -> None:
    page = tmp_path / "t.html"
    with Deployment({"DEFAULT": FAST}) as dep:
        nid = _recovered_with_hostile_name(dep)
        capsys.readouterr()
        argv = ["--config-file", dep.conf_path, "notification", "show", nid, "--html", str(page)]
        assert manage.main(argv) == 0
    out, err = capsys.readouterr()
    for raw in RAW:
        assert raw not in out + err
        assert raw not in page.read_text()
    lines = out.splitlines()
    instances = lines[lines.index("instances:") + 1 : lines.index("", lines.index("instances:"))]
    # The header and the one instance: the newline in the name forged no row.
    assert len(instances) == 2
    assert "vm\\x1b[2J\\x1b]0;owned\\x07" in instances[1]
    assert "\\x0dfake\\x0arow\\u202e" in instances[1]


def test_error_messages_are_neutralised_too(tmp_path, capsys) -> None:
    conf = tmp_path / "masakari.conf"
    conf.write_text(f"[database]\nconnection = sqlite:///{tmp_path}/m.db\n")
    assert manage.main(["--config-file", str(conf), "db", "sync"]) == 0
    capsys.readouterr()
    assert manage.main(["--config-file", str(conf), "notification", "release", HOSTILE]) == 1
    out, err = capsys.readouterr()
    for raw in RAW:
        assert raw not in out + err
    assert "\\x1b]52;c;" in err
