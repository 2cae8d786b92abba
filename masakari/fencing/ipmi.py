"""The ``ipmi`` driver: IPMI 2.0 over LAN (RMCP+) with pyghmi.

Power off is the chassis control "power down" (a hard off, not a graceful shutdown), status
the chassis status, power on the chassis control "power up": the standard commands every BMC
has, sent raw so that no vendor extension gets a say.

Each call runs pyghmi in a child process (``python -m masakari.fencing.ipmi``, the
credentials on its stdin) that logs in, sends one command and logs out. pyghmi keeps its
sessions in process-wide tables: a second client to the same BMC in one process can hang or
fail, and against a BMC that does not answer it gives up only after 20-30 s. The child is
killed at the entry's timeout instead (the call raises :class:`~masakari.fencing.base.Unreachable`),
and its state dies with it. The price is the child's start-up, a few tenths of a second.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from typing import Any

from masakari.fencing import _process, base

DEFAULT_PORT = 623
_ACTIONS = ("off", "status", "on")
# IPMI netfn chassis (0): get chassis status (1), chassis control (2) with "power down" (0)
# or "power up" (1).
_NETFN_CHASSIS = 0
_GET_STATUS = 1
_CONTROL = 2
_CONTROL_DATA = {"off": 0, "on": 1}


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
        request = {
            "action": action,
            "address": spec.address,
            "port": spec.port or DEFAULT_PORT,
            "username": spec.username or "",
            "password": spec.password or "",
        }
        try:
            done = _process.run(
                [python(), "-m", __name__], json.dumps(request), timeout=spec.timeout
            )
        except _process.Expired:
            raise base.Unreachable(
                f"no answer to IPMI {action} within {spec.timeout:g} s", spec.describe()
            ) from None
        answer = _answer(done.stdout)
        if answer is None:
            last = _process.redact(done.stderr, spec.password).strip().splitlines()[-1:]
            raise base.FenceError(
                f"IPMI {action}: the pyghmi helper failed "
                f"(exit {done.returncode}){': ' + last[0] if last else ''}",
                spec.describe(),
            )
        if "power" in answer:
            return str(answer["power"])
        if answer.get("ok"):
            return ""
        message = f"IPMI {action}: {answer.get('error', 'failed')}"
        kind = answer.get("kind")
        if kind == "unreachable":
            raise base.Unreachable(message, spec.describe())
        if kind == "refused":
            raise base.Refused(message, spec.describe())
        raise base.FenceError(message, spec.describe())


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


def _answer(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict):
            return answer
    return None


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


def _serve(request: dict[str, Any]) -> dict[str, Any]:
    try:
        from pyghmi import exceptions as pyghmi_exceptions
        from pyghmi.ipmi import command
    except ImportError:
        return {"error": "pyghmi is not installed (pip install 'masakari[fencing]')"}
    action = request["action"]
    if action not in _ACTIONS:
        return {"error": f"unknown action {action!r}"}
    try:
        bmc = command.Command(
            bmc=request["address"],
            userid=request["username"],
            password=request["password"],
            port=int(request["port"]),
        )
    except pyghmi_exceptions.IpmiException as exc:
        # pyghmi raises IpmiException(None) when its retries ran out without an answer.
        reason = exc.args[0] if exc.args and exc.args[0] else None
        return {"error": f"login failed: {reason or 'no answer'}", "kind": _classify(reason)}
    except (socket.gaierror, OSError) as exc:
        return {"error": f"cannot reach the BMC: {exc.strerror or exc}", "kind": "unreachable"}
    try:
        return _command(bmc, action, pyghmi_exceptions.IpmiException)
    finally:
        try:
            bmc.ipmi_session.logout()
        except Exception:  # noqa: BLE001 - the answer is in; a failed logout changes nothing
            pass


def _command(bmc: Any, action: str, ipmi_error: type[Exception]) -> dict[str, Any]:
    try:
        if action == "status":
            response = bmc.raw_command(netfn=_NETFN_CHASSIS, command=_GET_STATUS)
        else:
            response = bmc.raw_command(
                netfn=_NETFN_CHASSIS, command=_CONTROL, data=[_CONTROL_DATA[action]]
            )
    except ipmi_error as exc:
        return {"error": str(exc) or "no answer", "kind": _classify(str(exc))}
    if "error" in response and not response.get("code"):
        return {"error": str(response["error"]), "kind": _classify(str(response["error"]))}
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
    request = json.loads(sys.stdin.read())
    # pyghmi prints now and then: keep its output off the answer's channel.
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    answer = _serve(request)
    with os.fdopen(answer_fd, "w") as out:
        out.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
