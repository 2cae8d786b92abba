"""A fake IPMI BMC on loopback: pyghmi's BMC server with a power state and failure knobs.

It speaks IPMI 2.0 over LAN (RMCP+, cipher suite 3) on 127.0.0.1 and a free UDP port, so
that pyghmi, ``ipmitool -I lanplus`` and ``fence_ipmilan`` all drive it as a real BMC::

    with FakeBMC(username="admin", password="secret") as bmc:   # power "on"
        spec = DriverSpec("ipmi", address=bmc.address, port=bmc.port,
                          username="admin", password="secret", timeout=3)
        ...                               # power the host off through a driver
        assert bmc.power == "off"
        assert "off" in bmc.commands      # what the BMC received, in order
        bmc.power = "on"                  # the test sets the state too

Knobs, each an attribute a test may set at any time:

- ``power``: ``"on"`` or ``"off"``, the chassis power state (what a status read answers).
- ``stuck``: power-off commands are accepted (completion code 0) and do nothing: the host
  still reads on (a BMC whose relay failed, a host on a second power feed).
- ``dead``: every packet is dropped, as if the BMC lost power or the network: a client sees
  no answer at all.
- ``delay``: seconds before each command (status, power) is answered; the session set-up
  stays fast, as on a busy BMC.
- ``password``: the account's password (a change leaves open sessions open).
- ``session_timeout``: seconds after which a session without a packet is forgotten (as
  every BMC does, after about a minute); None (the default): never.
- ``refuse_off``: power-off commands are refused with completion code 0xD5 ("not supported
  in present state"), as some BMCs answer when the chassis is already off.

Wrong credentials are refused at once, as real BMCs do: an unknown user name gets an RMCP+
"unauthorized name" error; a wrong password makes the BMC's RAKP 2 code fail the client's
check (IPMI's own design: the client detects it). pyghmi's server alone would leave an
unknown user unanswered, and would claim to accept cipher suite 17 (SHA-256), which it cannot
speak: this one refuses it, so that clients fall back to suite 3 at once.

``reboot()`` forgets every session, as a BMC restart (or its session idle timeout) does: a
client's next command on its old session goes unanswered until it logs in again. ``logins``
counts the RMCP+ sessions the BMC opened (one per client login, a wrong password's included).

``on_power_change(callback)`` registers ``callback(state)``, called (in the BMC's I/O
thread) whenever the power state changes, by a command or by a test: the Nova simulator's
``tie_power`` uses it. ``commands`` lists what the BMC received: ``"status"``, ``"off"``,
``"on"``, ``"cycle"``, ``"reset"``, ``"shutdown"``.

Many BMCs may run in one process (each has its own UDP socket; pyghmi serves them all from
one I/O thread and one loop thread). ``close()`` (or leaving the ``with`` block) frees the
port. pyghmi's client may run in the same process: its loop serves the BMCs too.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pyghmi.ipmi.bmc as pyghmi_bmc
import pyghmi.ipmi.private.serversession as serversession
import pyghmi.ipmi.private.session as ipmisession

__all__ = ["FakeBMC"]

# RMCP+ status codes (IPMI 2.0, table 13-15).
_UNAUTHORIZED_NAME = 0x0D
_NO_CIPHER_SUITE_MATCH = 0x11
# Table 13-17/13-18: RAKP-HMAC-SHA1 and HMAC-SHA1-96, the only algorithms pyghmi's server has.
_SHA1 = 1
_NOT_IN_PRESENT_STATE = 0xD5
_CHASSIS_CONTROL = {0: "off", 1: "on", 2: "cycle", 3: "reset", 5: "shutdown"}

_loop_lock = threading.Lock()
_loop_started = False
_anchor: Any = None


def _serve_forever() -> None:
    while True:
        try:
            # pyghmi's loop can miss the wake-up of a packet that arrives just before it
            # waits: a short wait bounds the answer's delay.
            ipmisession.Session.wait_for_rsp(timeout=0.05)
        except Exception:  # noqa: BLE001 - one bad packet must not stop every fake BMC
            continue


def _ensure_loop() -> None:
    """pyghmi's servers answer from its event loop, which some thread must turn: one daemon
    thread per process serves every FakeBMC (and a pyghmi client in the process turns it
    too while it waits).

    pyghmi's I/O thread is woken by a datagram to its first socket; with no socket left (every
    FakeBMC closed) it sleeps up to 300 s in select() and the next FakeBMC is not served. A
    socket of our own, first and never closed, keeps it wakeable.
    """
    global _loop_started, _anchor
    with _loop_lock:
        if _anchor is None:
            where = socket.getaddrinfo("127.0.0.1", 0, socket.AF_INET, socket.SOCK_DGRAM)[0]
            _anchor = ipmisession.Session._assignsocket(where)
        if not _loop_started:
            threading.Thread(target=_serve_forever, name="fake-bmc-loop", daemon=True).start()
            _loop_started = True


class _Session(serversession.ServerSession):
    """A BMC-side session that refuses what pyghmi's server would silently ignore."""

    bmc: FakeBMC

    def create_open_session_response(self, request: bytearray) -> bytearray:
        # Request: tag, role, 2 reserved, client session id (4), then the authentication,
        # integrity and confidentiality payloads, 8 bytes each, the algorithm at offset 4.
        if len(request) >= 32 and (request[12] != _SHA1 or request[20] != _SHA1):
            return bytearray([request[0], _NO_CIPHER_SUITE_MATCH, 0, 0]) + request[4:8]
        self.bmc.logins += 1
        response: bytearray = super().create_open_session_response(request)
        return response

    def _got_rakp1(self, data: Any) -> None:
        name = bytes(data[28:]).decode("utf-8", "replace")
        if data[27] and self.authdata.get(name) is None:
            self.send_payload(
                bytearray([data[0], _UNAUTHORIZED_NAME, 0, 0]) + self.clientsessionid,
                ipmisession.constants.payload_types["rakp2"],
                retry=False,
            )
            return
        super()._got_rakp1(data)

    def _handle_ipmi_packet(self, data: Any, sockaddr: Any = None, qent: Any = None) -> Any:
        if self.bmc.dead:
            return None
        now = time.monotonic()
        idle = now - getattr(self, "last_packet", now)
        if self.bmc.session_timeout is not None and idle > self.bmc.session_timeout:
            self.bmc.forget(self)
            return None
        self.last_packet = now
        return super()._handle_ipmi_packet(data, sockaddr=sockaddr, qent=qent)


class FakeBMC(pyghmi_bmc.Bmc):  # type: ignore[misc]
    def __init__(
        self,
        username: str = "admin",
        password: str = "password",
        *,
        power: str = "on",
        address: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        _ensure_loop()
        super().__init__({username: password}, port=port, address=address)
        # pyghmi routes a session's packets by the port its socket really has.
        self.port = self.serversocket.getsockname()[1]
        self.address = address
        self.username = username
        self._lock = threading.Lock()
        self._power = _check_state(power)
        self._listeners: list[Callable[[str], None]] = []
        self.stuck = False
        self.dead = False
        self.delay = 0.0
        self.refuse_off = False
        self.session_timeout: float | None = None
        self.commands: list[str] = []
        self.logins = 0
        self._closed = False

    # -- what a test reads and sets -------------------------------------------------------

    @property
    def power(self) -> str:
        with self._lock:
            return self._power

    @power.setter
    def power(self, state: str) -> None:
        self._set_power(_check_state(state))

    @property
    def password(self) -> str:
        return str(self.authdata[self.username])

    @password.setter
    def password(self, password: str) -> None:
        """The account's new password: sessions already open stay open, as on a real BMC."""
        self.authdata[self.username] = password

    def on_power_change(self, callback: Callable[[str], None]) -> None:
        self._listeners.append(callback)

    def reboot(self) -> None:
        """Forget every session (the power state stays): as a restarted BMC does."""
        for peers in list(ipmisession.Session.bmc_handlers.values()):
            if getattr(peers.get(self.port), "bmc", None) is self:
                del peers[self.port]

    def forget(self, session: Any) -> None:
        """Forget one session: its client's packets go unanswered from now on."""
        peers = ipmisession.Session.bmc_handlers.get(session.sockaddr, {})
        if peers.get(self.port) is session:
            del peers[self.port]

    def close(self) -> None:
        """Stop answering for good and free the UDP port."""
        if self._closed:
            return
        self._closed = True
        self.dead = True
        ipmisession.Session.bmc_handlers.pop(self.serversocket, None)
        self.reboot()
        try:
            ipmisession.iosockets.remove(self.serversocket)
        except ValueError:
            pass
        # pyghmi's I/O thread may be entering select() with the socket still in its list: a
        # closed socket there would kill that thread, and every fake BMC with it.
        closer = threading.Timer(1.0, self.serversocket.close)
        closer.daemon = True
        closer.start()

    def __enter__(self) -> FakeBMC:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FakeBMC({self.address}:{self.port}, power={self.power})"

    # -- pyghmi's BMC interface -----------------------------------------------------------

    def get_power_state(self) -> str:
        self.commands.append("status")
        return self.power

    def power_off(self) -> int | None:
        if self.refuse_off:
            return _NOT_IN_PRESENT_STATE
        if not self.stuck:
            self._set_power("off")
        return None

    def power_on(self) -> None:
        self._set_power("on")

    def power_cycle(self) -> None:
        if not self.stuck:
            self._set_power("on")

    def power_reset(self) -> None:
        pass

    def power_shutdown(self) -> None:
        if not self.stuck:
            self._set_power("off")

    def control_chassis(self, request: Any, session: Any) -> None:
        self.commands.append(_CHASSIS_CONTROL.get(request["data"][0], str(request["data"][0])))
        super().control_chassis(request, session)

    def sessionless_data(self, data: Any, sockaddr: Any) -> None:
        if self.dead:
            return
        data = bytearray(data)
        # An RMCP+ open session request starts a session of our own kind (the base class
        # would make one of pyghmi's).
        if len(data) >= 22 and data[0] == 6 and data[2:4] == b"\xff\x07" and data[4] == 6:
            if data[5] == 0x10:
                _Session(
                    self.authdata,
                    self.kg,
                    sockaddr,
                    self.serversocket,
                    data[16:],
                    self.uuid,
                    bmc=self,
                )
                return
        super().sessionless_data(data, sockaddr)

    def handle_raw_request(self, request: Any, session: Any) -> None:
        delay = self.delay
        if delay <= 0:
            super().handle_raw_request(request, session)
            return
        # Answer later from a timer, without holding pyghmi's loop (which serves every BMC of
        # the process): the session's request context is put back before answering.
        context = {
            name: getattr(session, name)
            for name in ("seqlun", "clientaddr", "clientnetfn", "rqlun", "clientcommand")
        }

        def answer() -> None:
            if self.dead:
                return
            for name, value in context.items():
                setattr(session, name, value)
            super(FakeBMC, self).handle_raw_request(request, session)

        timer = threading.Timer(delay, answer)
        timer.daemon = True
        timer.start()

    # -- internals ------------------------------------------------------------------------

    def _set_power(self, state: str) -> None:
        with self._lock:
            changed, self._power = self._power != state, state
        if changed:
            for callback in list(self._listeners):
                callback(state)


def _check_state(state: str) -> str:
    if state not in ("on", "off"):
        raise ValueError(f"power state must be 'on' or 'off', not {state!r}")
    return state
