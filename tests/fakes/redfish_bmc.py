"""A Redfish BMC on loopback: sushy-tools' emulator (its fake systems driver, no libvirt) in a
process of its own, with a power state a test reads and sets and failure knobs.

    with RedfishBMC(username="admin", password="secret") as bmc:      # http, one system "On"
        spec = DriverSpec("redfish", address=bmc.url, username="admin",
                          password="secret", timeout=5)
        ...                                    # power the host off through a driver
        assert bmc.power() == "off"
        assert bmc.resets() == ["ForceOff"]     # the reset types the BMC received
        bmc.set_power("on")

    RedfishBMC(https=True)      # a self-signed certificate for 127.0.0.1 (bmc.ca_file):
                                # fence_redfish speaks https only
    RedfishBMC(systems=["node-a", "node-b"])    # several systems; bmc.system_id(name) is the
                                                # id in /redfish/v1/Systems/<id>

It is sushy-tools' own Flask application (``sushy_tools.emulator.main.app``), configured with
the fake driver, basic authentication (an htpasswd file, bcrypt) and a state directory of its
own (the fake driver's SQLite file is otherwise shared by every emulator on the machine),
served by werkzeug on 127.0.0.1 and a free port. Two changes to the fake driver: a power
change applies after ``power_delay`` seconds (default 0) instead of a random 1-11 s, and the
knobs below.

Knobs (``bmc.set_knobs(...)``, or ``RedfishBMC(..., stuck=True)``):

- ``stuck``: ForceOff and GracefulShutdown are accepted (204) and change nothing.
- ``refuse_off_when_off``: a ForceOff of a system already off answers 409 Conflict, as many
  BMCs do (the emulator's own answer is 204).
- ``delay``: seconds before every Redfish answer (a slow BMC).
- ``power_delay``: seconds before a power change applies (the system reads its old state
  until then).
- ``health``, ``health_rollup``: what every system's ``Status.Health`` and
  ``Status.HealthRollup`` say (``"Critical"``, ``"Warning"``, ``"OK"``); unset, the emulator's
  own (no ``Status`` in the feature set served here).
- ``bmc.dead = True``: the emulator is stopped (SIGSTOP): connections are accepted by the
  kernel and never answered, as with a hung BMC; ``False`` continues it.

``on_power_change(callback)`` calls ``callback(state)`` ("on"/"off") on each change of the
first system's power state (a thread polls it every 0.1 s): the Nova simulator's
``tie_power`` uses it. ``reset()`` puts the BMC back as started (power, knobs, log) between
the tests of a module sharing it.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import pathlib
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import requests

__all__ = ["RedfishBMC"]

REPO = pathlib.Path(__file__).resolve().parents[2]
_PEER = "/_peer"
_KNOBS = ("stuck", "refuse_off_when_off", "delay", "power_delay", "health", "health_rollup")


class RedfishBMC:
    def __init__(
        self,
        username: str = "admin",
        password: str = "password",
        *,
        power: str = "on",
        systems: Sequence[str] = ("system-1",),
        https: bool = False,
        **knobs: Any,
    ) -> None:
        self.username = username
        self.password = password
        self.https = https
        self._initial_power = power
        self._names = list(systems)
        self._ids = {
            name: str(uuid.uuid5(uuid.NAMESPACE_URL, f"redfish-bmc:{name}")) for name in systems
        }
        self._dir = pathlib.Path(tempfile.mkdtemp(prefix="redfish-bmc-"))
        self.ca_file: str | None = None
        self._stopped = False
        self._listeners: list[Callable[[str], None]] = []
        self._watcher: threading.Thread | None = None
        self._closed = threading.Event()
        config = {
            "SUSHY_EMULATOR_FAKE_DRIVER": True,
            "SUSHY_EMULATOR_STATE_DIR": str(self._dir / "state"),
            "SUSHY_EMULATOR_AUTH_FILE": str(self._dir / "htpasswd"),
            "SUSHY_EMULATOR_FEATURE_SET": "minimum",
            "SUSHY_EMULATOR_FAKE_SYSTEMS": [
                {
                    "uuid": self._ids[name],
                    "name": name,
                    "power_state": _redfish_state(power),
                    "external_notifier": False,
                    "nics": [],
                }
                for name in systems
            ],
        }
        _write_htpasswd(self._dir / "htpasswd", username, password)
        serve: dict[str, Any] = {"config": config, "knobs": knobs}
        if https:
            cert, key = _self_signed(self._dir)
            self.ca_file = str(cert)
            serve.update(cert=str(cert), key=str(key))
        (self._dir / "serve.json").write_text(json.dumps(serve))
        # The child has its own copy of the log's descriptor: ours is closed once it started.
        with open(self._dir / "emulator.log", "wb") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(self._dir / "serve.json")],
                cwd=REPO,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self.port = self._read_port()
        self.url = f"{'https' if https else 'http'}://127.0.0.1:{self.port}"
        self._session = requests.Session()
        self._session.auth = (username, password)

    # -- what a test reads and sets -------------------------------------------------------

    def system_id(self, name: str | None = None) -> str:
        """The id of the system ``name`` (the first by default) in /redfish/v1/Systems/."""
        return self._ids[name or self._names[0]]

    def system_path(self, name: str | None = None) -> str:
        return f"/redfish/v1/Systems/{self.system_id(name)}"

    def power(self, name: str | None = None) -> str:
        """ "on" or "off" (a pending change not applied yet does not count)."""
        return str(self._peer("GET", f"/power/{self.system_id(name)}")["power"])

    def set_power(self, state: str, name: str | None = None) -> None:
        self._peer("PUT", f"/power/{self.system_id(name)}", {"power": _redfish_state(state)})

    def resets(self) -> list[str]:
        """The ResetType of every reset action received, in order."""
        return list(self._peer("GET", "/log")["resets"])

    def set_knobs(self, **knobs: Any) -> None:
        unknown = set(knobs) - set(_KNOBS)
        if unknown:
            raise ValueError(f"unknown knobs: {sorted(unknown)}")
        self._peer("PUT", "/knobs", knobs)

    @property
    def dead(self) -> bool:
        return self._stopped

    @dead.setter
    def dead(self, value: bool) -> None:
        os.kill(self._proc.pid, signal.SIGSTOP if value else signal.SIGCONT)
        self._stopped = value

    def reset(self) -> None:
        """Back to the state it started in: every system at its first power state, no knob,
        an empty log."""
        self.dead = False
        self._peer("POST", "/reset", {"power": _redfish_state(self._initial_power)})

    def on_power_change(self, callback: Callable[[str], None]) -> None:
        self._listeners.append(callback)
        if self._watcher is None:
            # The state now is the baseline: a change right after this call is seen.
            self._watcher = threading.Thread(
                target=self._watch, args=(self.power(),), name="redfish-bmc-watch", daemon=True
            )
            self._watcher.start()

    def log(self) -> str:
        """The emulator's own log (requests, errors), for a failing test's message."""
        return (self._dir / "emulator.log").read_text(errors="replace")

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        if self._stopped:
            os.kill(self._proc.pid, signal.SIGCONT)
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdin:
            self._proc.stdin.close()
        if self._proc.stdout:
            self._proc.stdout.close()
        self._session.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> RedfishBMC:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RedfishBMC({self.url})"

    # -- internals ------------------------------------------------------------------------

    def _read_port(self) -> int:
        assert self._proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._proc.stdout], [], [], 0.5)
            if ready:
                line = self._proc.stdout.readline()
                if line.startswith("PORT "):
                    return int(line.split()[1])
            if self._proc.poll() is not None:
                break
        self.close()
        raise RuntimeError(f"the Redfish emulator did not start:\n{self.log()}")

    def _peer(self, method: str, path: str, body: Any = None) -> Any:
        # verify= on the request: a session's is overridden by REQUESTS_CA_BUNDLE.
        response = self._session.request(
            method, self.url + _PEER + path, json=body, timeout=10, verify=self.ca_file or True
        )
        response.raise_for_status()
        return response.json() if response.content else None

    def _watch(self, last: str) -> None:
        while not self._closed.wait(0.1):
            if self._stopped:
                continue
            try:
                state = self.power()
            except requests.RequestException:
                continue
            if state != last:
                for callback in list(self._listeners):
                    callback(state)
            last = state


def _redfish_state(state: str) -> str:
    words = {"on": "On", "off": "Off"}
    if state.lower() not in words:
        raise ValueError(f"power state must be 'on' or 'off', not {state!r}")
    return words[state.lower()]


def _write_htpasswd(path: pathlib.Path, username: str, password: str) -> None:
    import bcrypt

    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    path.write_text(f"{username}:{digest}\n")


def _self_signed(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A certificate for 127.0.0.1 and localhost, its own CA (valid for a day)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "redfish-bmc.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


# -- the emulator's process ----------------------------------------------------------------


def _serve(settings_path: str) -> None:
    import flask
    from sushy_tools import error
    from sushy_tools.emulator import main as emulator
    from sushy_tools.emulator.resources.systems import fakedriver
    from werkzeug.serving import make_server

    settings = json.loads(pathlib.Path(settings_path).read_text())
    knobs: dict[str, Any] = {
        "stuck": False,
        "refuse_off_when_off": False,
        "delay": 0.0,
        "power_delay": 0.0,
        "health": None,
        "health_rollup": None,
    }
    knobs.update(settings["knobs"])
    resets: list[str] = []

    class PeerDriver(fakedriver.FakeDriver):  # type: ignore[misc]
        def set_power_state(self, identity: str, state: str) -> None:
            resets.append(state)
            system = self._get(identity)
            off = state in ("ForceOff", "GracefulShutdown")
            if off and knobs["stuck"]:
                return
            if off and system["power_state"] == "Off" and knobs["refuse_off_when_off"]:
                raise error.Conflict("The system is already powered off")
            target = "Off" if off else "On"
            if "Restart" in state or state in ("PowerCycle", "Nmi"):
                target = "On"
            if knobs["power_delay"] > 0:
                self._update(
                    system,
                    pending_power={
                        "power_state": target,
                        "apply_time": time.time() + float(knobs["power_delay"]),
                    },
                )
            else:
                self._update(system, power_state=target, pending_power=None)

    fakedriver.FakeDriver = PeerDriver
    app = emulator.app
    app.configure(extra_config=settings["config"])

    @app.before_request
    def slow_down() -> None:
        if knobs["delay"] and not flask.request.path.startswith(_PEER):
            time.sleep(float(knobs["delay"]))

    @app.after_request
    def health(response: Any) -> Any:
        # The emulator's template has no Status here (OK in its full feature set): the knobs
        # say what the system's health is.
        path = flask.request.path.rstrip("/")
        is_system = path.startswith("/redfish/v1/Systems/") and path.count("/") == 4
        changed = {"Health": knobs["health"], "HealthRollup": knobs["health_rollup"]}
        if not is_system or flask.request.method != "GET" or response.status_code != 200:
            return response
        if all(value is None for value in changed.values()):
            return response
        body = json.loads(response.get_data())
        status = body.setdefault("Status", {})
        if knobs["health_rollup"] is not None:
            status.pop("HealthRollUp", None)
        status.update({k: v for k, v in changed.items() if v is not None})
        response.set_data(json.dumps(body))
        return response

    @app.route(f"{_PEER}/power/<identity>", methods=["GET", "PUT"])
    def peer_power(identity: str) -> Any:
        systems = app.systems
        if flask.request.method == "PUT":
            systems._update(identity, power_state=flask.request.json["power"], pending_power=None)
        return {"power": systems.get_power_state(identity).lower()}

    @app.route(f"{_PEER}/knobs", methods=["PUT"])
    def peer_knobs() -> Any:
        knobs.update(flask.request.json)
        return dict(knobs)

    @app.route(f"{_PEER}/log", methods=["GET"])
    def peer_log() -> Any:
        return {"resets": resets}

    @app.route(f"{_PEER}/reset", methods=["POST"])
    def peer_reset() -> Any:
        knobs.update(
            stuck=False,
            refuse_off_when_off=False,
            delay=0.0,
            power_delay=0.0,
            health=None,
            health_rollup=None,
        )
        knobs.update(settings["knobs"])
        resets.clear()
        for identity in app.systems.systems:
            app.systems._update(
                identity, power_state=flask.request.json["power"], pending_power=None
            )
        return {}

    ssl_context = (settings["cert"], settings["key"]) if "cert" in settings else None
    server = make_server("127.0.0.1", 0, app, threaded=True, ssl_context=ssl_context)
    print(f"PORT {server.server_port}", flush=True)

    def exit_with_parent() -> None:
        # The test process holds our stdin: when it is gone, so are we.
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=exit_with_parent, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    _serve(sys.argv[1])
