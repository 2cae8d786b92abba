"""The ``agent`` driver: any ClusterLabs fence agent (``fence_ipmilan``, ``fence_redfish``,
``fence_*``), called the way pacemaker calls it.

The agent reads its arguments as ``key=value`` lines on stdin (never on its command line,
where any user could read a password): ``action=off|status|on``, ``ip``, ``ipport``,
``username`` and ``password`` from the entry's address, port and credentials, then the
entry's ``args``. Exit codes as the agents define them: 0 done (``status``: on), 2 off
(``status`` only), anything else a failure, whose reason is the agent's last error line.
An agent's exit code does not say *why* it failed (a wrong password and a dead BMC both exit
1), so a failure is a :class:`~masakari.fencing.base.FenceError`, and
:class:`~masakari.fencing.base.Unreachable` only when the agent says "Connection timed out"
or is still running at the entry's timeout: then its whole process group is killed.

The agents wait for the power state themselves after ``off`` and ``on`` (for their
``power_timeout``, 20 s by default): unless the entry's args set it, masakari passes half
the entry's timeout, so that a host that stays on is reported as a failure before the
agent is killed.

The agents run on the system's Python (Debian's ``/usr/bin/python3``, their shebang), in a
clean environment: the engine's virtualenv and locale do not leak into them.
"""

from __future__ import annotations

import math
import os
import shutil

from masakari.fencing import _process, base

# Where distributions install the agents (Debian, RHEL: /usr/sbin), before $PATH.
AGENT_DIRS = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
_ENV = {"PATH": ":".join(AGENT_DIRS), "LANG": "C", "LC_ALL": "C"}
_EXIT_OFF = 2
_TIMED_OUT = "Connection timed out"


class AgentDriver:
    """:class:`~masakari.fencing.base.PowerDriver` through the fence agent
    ``spec.options["agent"]`` (a name looked up in the system directories, or a path)."""

    def __init__(self, spec: base.DriverSpec) -> None:
        self.spec = spec
        self.path = find_agent(spec.options.get("agent", ""))
        if self.path is None:
            raise base.FenceError(
                f"fence agent {spec.options.get('agent')!r} not found "
                f"(looked in {', '.join(AGENT_DIRS)} and $PATH)",
                spec.describe(),
            )

    def power_off(self) -> None:
        self._call("off")

    def power_status(self) -> base.PowerState:
        return base.PowerState.OFF if self._call("status") == _EXIT_OFF else base.PowerState.ON

    def power_on(self) -> None:
        self._call("on")

    def stdin(self, action: str) -> str:
        """The agent's input for ``action`` (its ``key=value`` lines)."""
        spec = self.spec
        args: dict[str, str] = {"action": action}
        for key, value in (
            ("ip", spec.address),
            ("ipport", None if spec.port is None else str(spec.port)),
            ("username", spec.username),
            ("password", spec.password),
        ):
            if value is not None:
                args[key] = value
        args.update((k, v) for k, v in spec.options.items() if k != "agent")
        if action != "status" and "power_timeout" not in args:
            args["power_timeout"] = str(max(1, math.floor(spec.timeout / 2)))
        for key, value in args.items():
            if "\n" in value or "\r" in value:
                # A line break would start another argument of the agent's.
                raise base.FenceError(f"{key}: a line break in the value", spec.describe())
        return "".join(f"{key}={value}\n" for key, value in args.items())

    def _call(self, action: str) -> int:
        spec = self.spec
        stdin = self.stdin(action)
        assert self.path is not None
        try:
            done = _process.run([self.path], stdin, timeout=spec.timeout, env=_ENV)
        except _process.Expired:
            raise base.Unreachable(
                f"{os.path.basename(self.path)} {action} still running "
                f"after {spec.timeout:g} s (killed)",
                spec.describe(),
            ) from None
        except OSError as exc:
            raise base.FenceError(
                f"cannot run {self.path}: {exc.strerror}", spec.describe()
            ) from None
        if done.returncode == 0 or (action == "status" and done.returncode == _EXIT_OFF):
            return done.returncode
        reason = _reason(done.stderr, spec)
        message = (
            f"{os.path.basename(self.path)} {action} failed "
            f"(exit {done.returncode}){': ' + reason if reason else ''}"
        )
        # The fencing library's "connection timed out" (EC_TIMED_OUT) is the one failure
        # that says the device did not answer.
        if _TIMED_OUT in reason:
            raise base.Unreachable(message, spec.describe())
        raise base.FenceError(message, spec.describe())


def find_agent(agent: str) -> str | None:
    """The agent's executable: ``agent`` itself when it is a path, else the first of
    :data:`AGENT_DIRS` and $PATH that has it."""
    if not agent:
        return None
    if os.sep in agent:
        return agent if os.access(agent, os.X_OK) else None
    for directory in AGENT_DIRS:
        candidate = os.path.join(directory, agent)
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(agent)


def _reason(stderr: str, spec: base.DriverSpec) -> str:
    """The agent's last error line, without any credential it might echo."""
    secrets = [spec.password] + [
        value
        for key, value in spec.options.items()
        if any(word in key for word in ("pass", "key", "secret", "token"))
    ]
    lines = [
        line.strip()
        for line in _process.redact(stderr, *secrets).splitlines()
        if "ERROR" in line or "Failed" in line
    ]
    if not lines:
        return ""
    # "2026-12-02 08:00:53,566 ERROR: Failed: ..." -> "Failed: ..."
    last = lines[-1]
    return (last.split("ERROR:", 1)[1].strip() if "ERROR:" in last else last)[:300]
