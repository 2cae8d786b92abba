"""The ``ipmi`` driver: IPMI 2.0 over LAN (RMCP+) with pyghmi.

Power off is the chassis control "power down" (a hard off, not a graceful shutdown), status
the chassis status, power on the chassis control "power up": the standard commands every BMC
has, sent raw so that no vendor extension gets a say.

pyghmi runs in one long-lived child process per masakari process (``python -m
masakari.fencing.ipmi``, :data:`SESSIONS`; masakari-engine starts it when its fencing file
has an ``ipmi`` entry, anything else at its first call). The child logs in to a BMC at the
first call for it and keeps the session, one per (address, port, user name), alive with a
Get Device ID every 15 s it is idle (a BMC closes an idle session after about a minute): a
call is then one command and its answer. Credentials travel on the child's stdin only, with
each request.

pyghmi keeps its sessions in process-wide tables, where a second session to one BMC can hang
and a silent BMC is given up only after 20-30 s; so no session is ever made twice in one
child, and anything that needs a new one replaces the child (:mod:`masakari.fencing._worker`):
a call that gets no answer within the entry's timeout (it raises
:class:`~masakari.fencing.base.Unreachable`), a session that went stale (no answer within a
third of the timeout on a session made earlier: the BMC restarted or dropped it; the call is
asked once more of the new child), a password changed in the fencing file, a login that
failed, a keep-alive that failed. Calls to one BMC wait for each other, calls to different
BMCs do not.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading
import traceback
from typing import Any

from masakari.fencing import _process, _worker, base

DEFAULT_PORT = 623
_ACTIONS = ("off", "status", "on", "alive")
# IPMI netfn chassis (0): get chassis status (1), chassis control (2) with "power down" (0)
# or "power up" (1).
_NETFN_CHASSIS = 0
_GET_STATUS = 1
_CONTROL = 2
_CONTROL_DATA = {"off": 0, "on": 1}
# netfn application (6): get device ID (1), what keeps a session alive.
_NETFN_APP = 6
_GET_DEVICE_ID = 1


class IPMIDriver:
    """:class:`~masakari.fencing.base.PowerDriver` for one BMC (``spec.address``, ``spec.port``
    or 623, ``spec.username``, ``spec.password``)."""

    def __init__(self, spec: base.DriverSpec) -> None:
        if not spec.address:
            raise base.FenceError("no address", spec.describe())
        self.spec = spec

    def power_off(self) -> None:
        self._call("off")

    def power_status(self) -> base.PowerState:
        return base.PowerState(self._call("status"))

    def power_on(self) -> None:
        self._call("on")

    def _call(self, action: str) -> str:
        spec = self.spec
        port = spec.port or DEFAULT_PORT
        username = spec.username or ""
        request = {
            "action": action,
            "address": spec.address,
            "port": port,
            "username": username,
            "password": spec.password or "",
        }
        try:
            answer = SESSIONS.call((spec.address, port, username), request, spec.timeout)
        except _worker.Expired:
            raise base.Unreachable(
                f"no answer to IPMI {action} within {spec.timeout:g} s", spec.describe()
            ) from None
        if "power" in answer:
            return str(answer["power"])
        if answer.get("ok"):
            return ""
        message = _process.redact(f"IPMI {action}: {answer.get('error', 'failed')}", spec.password)
        kind = answer.get("kind")
        if kind == "unreachable":
            raise base.Unreachable(message, spec.describe())
        if kind == "refused":
            raise base.Refused(message, spec.describe())
        raise base.FenceError(message, spec.describe())


# The child that keeps this process's BMC sessions, each kept alive with a Get Device ID
# when idle (pyghmi would send its own after 25-29 s idle, but only while some thread turns
# its event loop, which races with the calls).
SESSIONS = _worker.Worker(
    lambda: [python(), "-m", "masakari.fencing.ipmi"],
    "IPMI session worker",
    keep_alive=lambda request: {**request, "action": "alive"},
)


def python() -> str:
    """This installation's Python interpreter. ``sys.executable`` is not always one: under
    uWSGI or mod_wsgi (the API's readiness view checks BMCs too) it is the server's binary."""
    if os.path.basename(sys.executable).startswith("python"):
        return sys.executable
    for name in ("python3", "python"):
        candidate = os.path.join(sys.prefix, "bin", name)
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("python3") or sys.executable


# -- the child process -------------------------------------------------------------------------

# pyghmi's messages that mean "the BMC answered no" rather than "no answer".
_REFUSALS = ("password", "unauthorized", "privilege", "rakp", "invalid role", "user")
_SILENCES = ("timeout", "timed out", "no longer connected", "unable to transmit", "failed to init")


def _classify(message: str | None) -> str:
    text = (message or "").lower()
    if not text or any(word in text for word in _SILENCES):
        return "unreachable"
    if any(word in text for word in _REFUSALS):
        return "refused"
    return "error"


class _Sessions:
    """The child's sessions: one pyghmi ``Command`` per (address, port, user name), made at
    the first request for it and kept."""

    def __init__(self) -> None:
        from pyghmi import exceptions as pyghmi_exceptions
        from pyghmi.ipmi import command
        from pyghmi.ipmi.private import session

        _slice_waits(session)

        self._command = command.Command
        self._error: type[Exception] = pyghmi_exceptions.IpmiException
        self._made: dict[tuple[str, int, str], tuple[Any, str]] = {}
        self._failed: set[tuple[str, int, str]] = set()

    def serve(self, request: dict[str, Any]) -> dict[str, Any]:
        action = request["action"]
        if action not in _ACTIONS:
            return {"error": f"unknown action {action!r}"}
        key = (request["address"], int(request["port"]), request["username"])
        password = request["password"]
        if key in self._failed:
            # A login that failed leaves pyghmi's tables in a state where the next one to the
            # same BMC can hang: the parent replaces this process.
            return {"error": "a login failed here", "kind": _worker.STALE}
        made = self._made.get(key)
        if made is not None:
            bmc, logged_in_with = made
            session = bmc.ipmi_session
            # A session pyghmi gave up on, or one of other credentials, is not made again
            # here (pyghmi's tables can hang a second session to a BMC): the parent replaces
            # this process.
            if logged_in_with != password or session.broken or not session.logged:
                return {"error": "the session is gone", "kind": _worker.STALE}
        else:
            try:
                bmc = self._command(bmc=key[0], userid=key[2], password=password, port=key[1])
            except self._error as exc:
                self._failed.add(key)
                # pyghmi raises IpmiException(None) when its retries ran out without an answer.
                reason = exc.args[0] if exc.args and exc.args[0] else None
                return {
                    "error": f"login failed: {reason or 'no answer'}",
                    "kind": _classify(reason),
                }
            except (socket.gaierror, OSError) as exc:
                return {
                    "error": f"cannot reach the BMC: {exc.strerror or exc}",
                    "kind": "unreachable",
                }
            self._made[key] = (bmc, password)
            return _command(bmc, action, self._error)
        answer = _command(bmc, action, self._error)
        if answer.get("kind") == "unreachable":
            # pyghmi gave up on a session made earlier: the BMC may have forgotten it.
            return {**answer, "kind": _worker.STALE}
        return answer


# The longest pyghmi waits for a packet before it looks again.
_WAIT_SLICE = 0.02


def _slice_waits(session: Any) -> None:
    """pyghmi queues its wait for an answer after sending the request: an answer that comes
    back first (on loopback, or with the thread descheduled) is read only when the wait
    times out, the retransmission timer's 0.5-1 s later. Its waits are cut into slices,
    after each of which it reads what came."""
    wait = session._io_wait

    def sliced(timeout: float, myaddr: Any = None, evq: Any = None) -> None:
        wait(min(timeout, _WAIT_SLICE), myaddr, evq)

    session._io_wait = sliced


def _command(bmc: Any, action: str, ipmi_error: type[Exception]) -> dict[str, Any]:
    try:
        if action == "alive":
            response = bmc.raw_command(netfn=_NETFN_APP, command=_GET_DEVICE_ID)
        elif action == "status":
            response = bmc.raw_command(netfn=_NETFN_CHASSIS, command=_GET_STATUS)
        else:
            response = bmc.raw_command(
                netfn=_NETFN_CHASSIS, command=_CONTROL, data=[_CONTROL_DATA[action]]
            )
    except ipmi_error as exc:
        return {"error": str(exc) or "no answer", "kind": _classify(str(exc))}
    if "error" in response and not response.get("code"):
        return {"error": str(response["error"]), "kind": _classify(str(response["error"]))}
    if action == "alive":
        return {"ok": True}  # any answer, a refusal included, says the session lives
    code = response.get("code", 0)
    if action == "status":
        if code:
            return {
                "error": f"chassis status refused (completion code {code:#04x})",
                "kind": "refused",
            }
        data = response.get("data") or b""
        if not data:
            return {"power": base.PowerState.UNKNOWN.value}
        return {"power": "on" if data[0] & 1 else "off"}
    if code:
        # Some BMCs refuse a power down when the chassis is already off: that is no failure
        # (base.PowerDriver.power_off) when the state reads off.
        if action == "off" and _command(bmc, "status", ipmi_error).get("power") == "off":
            return {"ok": True}
        return {
            "error": f"chassis control refused (completion code {code:#04x})",
            "kind": "refused",
        }
    return {"ok": True}


def main() -> int:
    # pyghmi prints now and then: keep its output off the answers' channel.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    lock = threading.Lock()

    def say(answer: dict[str, Any]) -> None:
        with lock:
            answers.write(json.dumps(answer) + "\n")
            answers.flush()

    try:
        sessions: _Sessions | None = _Sessions()
    except ImportError:
        sessions = None
    say({"ready": True})

    def serve(request: dict[str, Any]) -> None:
        if sessions is None:
            answer = {"error": "pyghmi is not installed (pip install 'masakari[fencing]')"}
        else:
            try:
                answer = sessions.serve(request)
            except Exception as exc:  # noqa: BLE001 - answered, so the call need not wait
                traceback.print_exc()
                answer = {"error": f"pyghmi failed: {type(exc).__name__}: {exc}"}
        say({**answer, "id": request["id"]})

    # One thread per request: the parent sends one request per BMC at a time.
    for line in sys.stdin:
        request = json.loads(line)
        threading.Thread(target=serve, args=(request,), daemon=True).start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
