"""The wake-up cast is on only when a deployer set transport_url."""

from __future__ import annotations

from masakari import conf as masakari_conf
from masakari.engine import wakeup


def test_oslo_messaging_default_leaves_the_cast_off(tmp_path) -> None:
    path = tmp_path / "masakari.conf"
    path.write_text("[DEFAULT]\nhost = h\n")
    conf = masakari_conf.load(["--config-file", str(path)])
    # oslo.messaging's default names a broker on localhost: not a deployer's choice.
    assert conf.transport_url == "rabbit://"
    assert not wakeup.enabled(conf)
    assert wakeup.sender(conf) is wakeup.nothing
    assert wakeup.listener(conf, lambda: None) is None


def test_a_configured_transport_url_turns_it_on(tmp_path) -> None:
    path = tmp_path / "masakari.conf"
    path.write_text("[DEFAULT]\ntransport_url = rabbit://u:p@broker:5672/\n")
    conf = masakari_conf.load(["--config-file", str(path)])
    assert wakeup.enabled(conf)
    assert isinstance(wakeup.sender(conf), wakeup.Sender)
    assert isinstance(wakeup.listener(conf, lambda: None), wakeup.Listener)
